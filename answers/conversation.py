"""The model's side of an answer: the prompt built from the search's documents, the model's turns
streamed a sentence at a time, and its calls of the `read` tool answered (answers/read_tool.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator

from django.db.models.functions import Length

from answers import citations, prompt
from answers.model import Endpoint, Turn, chat
from answers.read_tool import read_source
from answers.run import AnswerRun, ms
from kb.auth import Principal
from kb.conf import kb_settings
from kb.identity.reads import Surface, record_restricted_reads
from kb.models import Document
from retrieval.results import DocumentGroup

FALLBACK_SECTIONS = 3  # without tool calling, each source carries this many of its best sections


def generate(
    run: AnswerRun,
    principal: Principal,
    endpoint: Endpoint,
    documents: list[tuple[str, DocumentGroup]],
    *,
    tools: bool,
    stream: bool,
    prepared: float,
) -> Iterator[dict]:
    conf = kb_settings()
    lengths = dict(
        Document.objects.filter(pk__in=[g.document_id for _, g in documents])
        .annotate(length=Length("content"))
        .values_list("pk", "length")
    )
    candidates = [
        prompt.SourceText(n, group.title, _seed(group, tools), lengths.get(group.document_id, 0))
        for n, (_, group) in enumerate(documents, 1)
    ]
    built = prompt.build(
        run.question,
        candidates,
        context_tokens=conf.answer_context_tokens,
        answer_tokens=conf.answer_max_tokens,
        tools=tools,
    )
    placed = documents[: len(built.sources)]
    run.sources = [
        source_entry(n, namespace, group) for n, (namespace, group) in enumerate(placed, 1)
    ]
    # what the model reads and the reader is shown of each source: a read of each restricted one
    record_restricted_reads(principal, [group.document_id for _, group in placed], Surface.ANSWER)
    run.seen = {source.number: source.text for source in built.sources}
    run.built = built
    run.text = ""
    yield {"event": "sources", "sources": run.sources, "left_out": built.left_out, "tools": tools}
    messages = list(built.messages)
    used = built.tokens
    deadline = time.monotonic() + endpoint.timeouts[2]
    run.timings["before_model_ms"] = ms(prepared)
    sent = time.monotonic()
    offer = [prompt.READ_TOOL] if tools else None
    for _ in range(
        prompt.MAX_READS + 2
    ):  # a model that keeps calling tools when offered none stops here
        turn: Turn = yield from _streamed(
            chat(
                endpoint,
                messages,
                max_tokens=conf.answer_max_tokens,
                tools=offer,
                deadline=deadline,
            ),
            stream,
            run,
            built,
        )
        if "first_token_ms" not in run.timings and turn.first_token_s is not None:
            run.timings["first_token_ms"] = round(
                turn.first_token_s * 1000, 2
            )  # the model's own wait
        if not turn.tool_calls:
            break
        used += prompt.tokens(turn.text) + sum(
            prompt.tokens(c.name + c.arguments) for c in turn.tool_calls
        )
        messages.append(
            {
                "role": "assistant",
                "content": turn.text or None,
                "tool_calls": [
                    {
                        "id": call.id or f"call_{i}",
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments},
                    }
                    for i, call in enumerate(turn.tool_calls)
                ],
            }
        )
        for i, call in enumerate(turn.tool_calls):
            result, cost = read_source(
                run, principal, placed, built, call.name, call.arguments, budget=built.budget - used
            )
            used += cost
            messages.append(
                {"role": "tool", "tool_call_id": call.id or f"call_{i}", "content": result}
            )
        if run.reads >= prompt.MAX_READS:
            offer = None  # the last turn answers from what was read
    run.timings["model_ms"] = ms(sent)


def _streamed(turns, stream: bool, run: AnswerRun, built: prompt.Prompt):
    """Pass a turn's text on as `delta` events (when streaming), a sentence at a time, and return
    the turn. A sentence that repeats the answer's instructions (`prompt.leaks`) is never sent."""
    pending = ""
    while True:
        try:
            piece = next(turns)
        except StopIteration as end:
            if stream and pending.strip() and not prompt.leaks(pending, built):
                yield {"event": "delta", "text": pending}
            return end.value
        run.text += piece
        pending += piece
        ends = [match.end() for match in citations.SENTENCE_END.finditer(pending)]
        if not ends:
            continue
        start = 0
        for end_at in ends:
            sentence = pending[start:end_at]
            if stream and sentence.strip() and not prompt.leaks(sentence, built):
                yield {"event": "delta", "text": sentence}
            start = end_at
        pending = pending[start:]


def _seed(group: DocumentGroup, tools: bool) -> str:
    """What the model is first shown of a document: its best passage; without the read tool,
    its best FALLBACK_SECTIONS passages."""
    sections = group.sections[:1] if tools else group.sections[:FALLBACK_SECTIONS]
    return "\n…\n".join(section.text for section in sections)


def source_entry(number: int, namespace: str, group: DocumentGroup) -> dict:
    best = group.sections[0]
    return {
        "n": number,
        "title": group.title,
        "url": best.citation_url,
        "document_id": group.document_id,
        "chunk_id": best.chunk_id,
        "namespace": namespace,
    }
