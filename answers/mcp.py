"""The MCP `answer` tool: /api/answer for agents, answered whole.

The same service as the API, with the same rights, rate charge, caps and checks. Answers off is a
tool error with its code; a model that fails after the search is the answer's `error`, beside the
sources found, as in /api/answer.
"""

from __future__ import annotations

from answers.schemas import AnswerOut, AnswerToolIn
from answers.service import MAX_NAMESPACES, answer_events, final_state
from kb.models import QueryLog
from kb.toolsets import Answer, Toolset
from retrieval.citations import absolute_url

tools = Toolset()


@tools.tool(
    name="answer",
    title="Answer a question from the knowledge base",
    input=AnswerToolIn,
    output=AnswerOut,
    cost="a hybrid search per namespace and, when the gate opens, one answer of the deployment's "
    "model (seconds; up to KB_ANSWER_TIMEOUT); charged against the rate limit as its searches plus "
    "10, as /api/answer",
    description="A grounded answer by the deployment's own model, from the namespaces the caller "
    "reads (at "
    f"most {MAX_NAMESPACES}; none: all). The model is asked only when the search found a strong "
    "match (else: 'The knowledge base does not cover this.' and the closest sources); every "
    "sentence's [n] citation is then checked against source n: `verdict` supported or "
    "unsupported, and sentences citing nothing are dropped. Cite the sources' citation URLs, "
    "and prefer search and fetch when you can read the passages yourself.",
)
def answer_tool(request, data: AnswerToolIn) -> Answer:
    # the principal, not the request: an agent's answer is voted on by its token only, never a
    # session
    events = answer_events(
        request.auth,
        data.namespaces,
        data.q,
        stream=False,
        caller=QueryLog.Caller.MCP,
        raise_off=True,
    )
    state = final_state(events)
    for source in state["sources"]:
        source["url"] = absolute_url(source["url"], request.kb_base_url)
    return Answer(state, render(state))


def render(state: dict) -> str:
    """The answer as the agent's model reads it: the checked text, each unsupported sentence marked,
    then the numbered sources with their citation URLs."""
    gate = state["gate"] or {}
    lines = []
    if state["error"]:
        lines.append(f"The answer failed ({state['error']['code']}): {state['error']['message']}")
    elif state["abstained"]:
        lines.append(f"{state['text']} (gate: {gate.get('rule')}: {gate.get('reason')})")
    else:
        counts = state["counts"]
        lines.append(
            f"Answer ({counts.get('supported', 0)} of {counts.get('sentences', 0)} sentences "
            "supported by "
            f"their citation, {counts.get('unsupported', 0)} "
            f"unsupported, {counts.get('dropped', 0)} "
            "dropped):"
        )
        for sentence in state["sentences"]:
            if sentence["verdict"] == "unsupported":
                lines.append(
                    f"- {sentence['text']} (UNSUPPORTED: the cited source does not say this)"
                )
            elif sentence["verdict"] != "dropped":
                lines.append(f"- {sentence['text']}")
    if state["sources"]:
        lines.append("Sources:" if not state["abstained"] else "Closest sources:")
        lines += [
            f"[{s['n']}] {s['title']} ({s['namespace']}) {s['url']}" for s in state["sources"]
        ]
    return "\n".join(lines)
