"""`answer_events()`: a question answered from the knowledge base, as a sequence of events.

search (the caller's own read rights) -> gate -> numbered sources -> the model, with the capped
`read` tool -> the citation check -> the answer log. Every surface (the API, the search page)
reads these events: `gate`, `sources`, `delta` (streamed text), `answer`, `done`, and `error`
with a stable code in place of whatever could not be done. The search's own refusals (a namespace
the caller may not read, a query too long) are raised before the first event, as search raises them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from django.db.models.functions import Length

from answers import citations, gate, prompt
from answers.errors import (
    AnswerFailed,
    AnswerNotFound,
    AnswersBusy,
    AnswersOff,
    AnswersOffForNamespace,
    TooManyNamespaces,
)
from answers.model import Endpoint, ToolsRefused, Turn, chat, models
from kb.audiences import document_filter
from kb.auth import Principal, principal_for
from kb.conf import kb_settings
from kb.embedding.embedders import get_embedder, strong_cosine
from kb.errors import KBError
from kb.identity.reads import Surface, record_restricted_reads
from kb.models import AnswerLog, Document, Namespace, QueryLog
from retrieval import querylog
from retrieval.query import validate_query
from retrieval.service import DocumentGroup, SearchResult, search

logger = logging.getLogger(__name__)

MAX_NAMESPACES = 5
SOURCES = 5  # documents offered to the model, best first
CLOSEST = 3  # passages shown when the gate says "not covered"
FALLBACK_SECTIONS = 3  # without tool calling, each source carries this many of its best sections
# What an answer costs against the caller's rate limit, in searches, besides the searches it makes:
# a search holds a worker for well under a second, an answer for the model's whole reply (seconds,
# up to KB_ANSWER_TIMEOUT). Ten keeps a reader of the search page (a search and its answer, 11)
# far inside the anonymous 300 a minute, and a script asking answers in a loop to 27 a minute.
ANSWER_SEARCHES = 10
BUSY_RETRY_AFTER_S = 5  # an answer usually ends within seconds
_slots: dict[int, threading.BoundedSemaphore] = {}  # KB_ANSWER_CONCURRENCY -> this process's slots
_slots_made = threading.Lock()


@dataclass
class _Run:
    """One answer's state as it is built, for its events and its log row."""

    question: str
    namespaces: list[str]
    caller: str
    asker: str  # who may vote on it (`asker()`)
    started: float = field(default_factory=time.monotonic)
    query_log_id: int | None = None
    gate: gate.Gate | None = None
    sources: list[dict] = field(default_factory=list)
    seen: dict[int, str] = field(
        default_factory=dict
    )  # source number -> all the model was shown of it
    text: str = ""
    checked: citations.Checked | None = None
    reads: int = 0
    error: KBError | None = None
    timings: dict[str, float] = field(default_factory=dict)
    model: str = ""
    built: prompt.Prompt | None = None  # the prompt the model was last given


def answer_events(
    request_or_principal,
    namespaces: list[str],
    question: str,
    *,
    stream: bool,
    caller: str = QueryLog.Caller.API,
    raise_off: bool = False,
) -> Iterator[dict]:
    """The events of one answer. `stream=False` leaves out the `delta` events (the text is in `answer`).
    The question and the caller's right to each namespace are checked here, before the first event:
    a refusal is raised (an HTTP error), never streamed. No namespace named: every one it may read.
    `raise_off`: answers off (for the deployment, or for every namespace asked) are raised by the
    iterator instead of coming as an `error` event, for a surface with no answer to carry them (MCP)."""
    principal = _principal(request_or_principal)
    question = validate_query(question, 1)
    namespaces = list(dict.fromkeys(namespaces))
    if not namespaces:
        namespaces = list(
            principal.readable_namespaces().order_by("slug").values_list("slug", flat=True)
        )
    if len(namespaces) > MAX_NAMESPACES:
        raise TooManyNamespaces(
            f"An answer searches at most {MAX_NAMESPACES} namespaces; {len(namespaces)} "
            "were asked.",
            details={"field": "namespaces", "max": MAX_NAMESPACES},
        )
    for slug in namespaces:
        principal.check(slug)
    if (
        not kb_settings().answer_url
    ):  # answers off: nothing to hold, nothing past a request to charge
        return _events(_Run(question, namespaces, caller, asker=""), principal, stream, raise_off)
    slot = _slot()
    if not slot.acquire(blocking=False):
        raise AnswersBusy(
            f"{kb_settings().answer_concurrency} answers are under way on this server "
            f"(KB_ANSWER_CONCURRENCY); retry in {BUSY_RETRY_AFTER_S} s. Search works meanwhile.",
            details={"retry_after_s": BUSY_RETRY_AFTER_S},
        )
    try:
        # each namespace is a search, counted as search counts them, and the answer ANSWER_SEARCHES more
        principal.charge(len(namespaces) - 1 + ANSWER_SEARCHES)
    except BaseException:
        slot.release()
        raise
    run = _Run(
        question, namespaces, caller, asker=asker(request_or_principal, principal, create=True)
    )
    return Held(_events(run, principal, stream, raise_off), slot)


def _slot() -> threading.BoundedSemaphore:
    """This process's answer slots for the configured concurrency (made once per value)."""
    limit = kb_settings().answer_concurrency
    with _slots_made:
        return _slots.setdefault(limit, threading.BoundedSemaphore(limit))


class Held:
    """An answer's events holding one of the process's answer slots until they end or are closed.
    A generator's `finally` does not run when it is closed before its first event (a client gone
    before the stream began), so the slot is released here. `rendered(f)` maps each event (SSE)."""

    def __init__(self, events: Iterator[dict], slot: threading.BoundedSemaphore):
        self._events, self._slot, self._render = events, slot, None

    def rendered(self, render: Callable[[dict], str]) -> Held:
        self._render = render
        return self

    def __iter__(self):
        return self

    def __next__(self):
        try:
            event = next(self._events)
        except BaseException:
            self.close()
            raise
        return self._render(event) if self._render else event

    def close(self) -> None:
        slot, self._slot = self._slot, None
        if slot is not None:
            slot.release()
            self._events.close()

    def __del__(self):
        self.close()


def _events(
    run: _Run, principal: Principal, stream: bool, raise_off: bool = False
) -> Iterator[dict]:
    try:
        yield from _answer(run, principal, stream)
    except KBError as exc:
        if raise_off and isinstance(exc, (AnswersOff, AnswersOffForNamespace)):
            raise  # nothing was searched: there is no answer to log
        run.error = exc
        yield {"event": "error", "code": exc.code, "message": exc.message}
    except (
        Exception
    ):  # logged with its traceback; the reader gets a stable code and `done`, never a broken stream
        logger.exception("answer to %r over %s failed", run.question[:80], run.namespaces)
        run.error = AnswerFailed(
            "The answer failed on the server's side; the search results above stay valid. "
            "The error is in the server log."
        )
        yield {"event": "error", "code": run.error.code, "message": run.error.message}
    yield {"event": "done", "answer_id": _log(run)}


def _answer(run: _Run, principal: Principal, stream: bool) -> Iterator[dict]:
    conf = kb_settings()
    if not conf.answer_url:
        raise AnswersOff(
            "Answers are off: this deployment has no answer model (KB_ANSWER_URL). Search works as ever."
        )
    allowed = set(
        Namespace.objects.filter(slug__in=run.namespaces, answers=True).values_list(
            "slug", flat=True
        )
    )
    searched = [slug for slug in run.namespaces if slug in allowed]
    if not searched:
        raise AnswersOffForNamespace(
            "Answers are turned off for "
            + ", ".join(repr(s) for s in run.namespaces)
            + " by its curators; search works as ever.",
            details={"namespaces": run.namespaces},
        )
    endpoint = Endpoint(
        conf.answer_url, conf.answer_model, conf.answer_api_key, conf.answer_timeouts
    )
    run.model = endpoint.model
    results = _search(run, searched, principal.audiences)
    run.timings["retrieval_ms"] = _ms(run.started)
    prepared = time.monotonic()
    run.gate = gate.decide_all(results, floor=strong_cosine())
    yield {"event": "gate", **run.gate.as_dict(), "query_id": run.query_log_id}
    documents = _documents(results)
    if not run.gate.answer:
        run.sources = [
            _source(n, namespace, group)
            for n, (namespace, group) in enumerate(documents[:CLOSEST], 1)
        ]
        yield {"event": "sources", "sources": run.sources, "left_out": 0}
        run.text = citations.NOT_COVERED
        run.checked = citations.check(run.text, {})
        yield _answer_event(run, abstained=True)
        return
    tools = conf.answer_tools != "off"
    try:
        yield from _generate(
            run, principal, endpoint, documents, tools=tools, stream=stream, prepared=prepared
        )
    except ToolsRefused:
        if conf.answer_tools == "on":
            raise
        logger.info(
            "answer model %s refused the read tool; answering with larger seeded passages instead",
            endpoint.model,
        )
        yield from _generate(
            run,
            principal,
            endpoint,
            documents,
            tools=False,
            stream=stream,
            prepared=time.monotonic(),
        )
    run.checked = citations.dropping(
        citations.check(run.text, run.seen),
        lambda text: prompt.leaks(text, run.built),
        "repeats the answer's instructions",
    )
    yield _answer_event(run, abstained=False)


def _generate(
    run: _Run,
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
    run.sources = [_source(n, namespace, group) for n, (namespace, group) in enumerate(placed, 1)]
    # what the model reads and the reader is shown of each source: a read of each restricted one
    record_restricted_reads(principal, [group.document_id for _, group in placed], Surface.ANSWER)
    run.seen = {source.number: source.text for source in built.sources}
    run.built = built
    run.text = ""
    yield {"event": "sources", "sources": run.sources, "left_out": built.left_out, "tools": tools}
    messages = list(built.messages)
    used = built.tokens
    deadline = time.monotonic() + endpoint.timeouts[2]
    run.timings["before_model_ms"] = _ms(prepared)
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
            result, cost = _read(
                run, principal, placed, built, call.name, call.arguments, budget=built.budget - used
            )
            used += cost
            messages.append(
                {"role": "tool", "tool_call_id": call.id or f"call_{i}", "content": result}
            )
        if run.reads >= prompt.MAX_READS:
            offer = None  # the last turn answers from what was read
    run.timings["model_ms"] = _ms(sent)


def _streamed(turns, stream: bool, run: _Run, built: prompt.Prompt):
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


def _read(
    run: _Run,
    principal: Principal,
    placed: list[tuple[str, DocumentGroup]],
    built: prompt.Prompt,
    name: str,
    arguments: str,
    *,
    budget: int,
) -> tuple[str, int]:
    """The `read` tool: more of a numbered source the model was given, and the tokens it costs.
    Only a source number comes from the model: the document, its namespace and the caller's right
    to read it come from this answer's own search, so no text in a source can widen what is read."""
    run.reads += 1
    if name != "read":
        return f"error: there is no tool {name[:40]!r}; the only tool is read(source, offset)", 20
    if run.reads > prompt.MAX_READS:
        return f"error: at most {prompt.MAX_READS} reads; answer from what you have", 20
    args = read_arguments(arguments)
    if args is None:
        return (
            'error: read takes {"source": <number>, "offset": <number>}, whole numbers and nothing else',
            20,
        )
    number, offset = args
    if not 1 <= number <= len(placed):
        return f"error: there is no source {number}; the sources are 1 to {len(placed)}", 20
    chars = min(
        prompt.READ_CHARS, max(0, (budget - prompt.MESSAGE_TOKENS) * prompt.TOKEN_CHARS - 200)
    )
    if chars < 200:
        return "error: the context is full; answer from what you have", 20
    namespace, group = placed[number - 1]
    principal.check(namespace)  # the caller's rights, read again at the moment of reading
    content = (
        Document.objects.filter(
            document_filter(principal.audiences), pk=group.document_id, namespace__slug=namespace
        )
        .values_list("content", flat=True)
        .first()
        or ""
    )
    window, _ = prompt.read_window(content, number, offset, chars)
    run.seen[number] = run.seen.get(number, "") + "\n" + window
    result = prompt.wrap_read(built.tag, number, window)
    return result, prompt.tokens(result)


def read_arguments(arguments: str) -> tuple[int, int] | None:
    """The `read` tool's (source, offset) from the model's JSON, or None unless it is exactly an object
    of whole numbers: `source` required, `offset` optional, 0 to MAX_OFFSET, no other key. Anything else
    (NaN, 1e400, a 5,000-digit number, a string, a list, nesting past the parser's depth) reads nothing."""
    try:
        args = json.loads(arguments or "{}", parse_constant=_no_constant, parse_float=_no_float)
    except (
        ValueError,
        RecursionError,
    ):  # not JSON, NaN/Infinity, a fraction, an integer past Python's digits
        return None
    if not isinstance(args, dict) or not {"source"} <= set(args) <= {"source", "offset"}:
        return None
    number, offset = args["source"], args.get("offset", 0)
    if offset is None:
        offset = 0
    if not all(type(value) is int and 0 <= value <= MAX_OFFSET for value in (number, offset)):
        return None
    return number, offset


MAX_OFFSET = 10**9  # past any document's length; a larger number is not a position


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number read takes")


def _no_float(text: str):
    raise ValueError(f"{text} is not a whole number")


def _search(run: _Run, namespaces: list[str], reach: frozenset[int] | None) -> list[SearchResult]:
    """Each namespace's search for the question, as the asker reads it (`reach`: the audiences
    they read, so no source of the answer is a document they may not read)."""
    vector = get_embedder().embed_query(run.question) if len(namespaces) > 1 else None
    results = [
        search(
            run.question,
            slug,
            limit=SOURCES,
            group="document",
            query_vector=vector,
            caller=run.caller,
            reach=reach,
        )
        for slug in namespaces
    ]
    run.query_log_id = results[0].query_id
    return results


def _documents(results: list[SearchResult]) -> list[tuple[str, DocumentGroup]]:
    """The documents of every namespace's search, best first by score, at most SOURCES."""
    found = [(result.namespace, group) for result in results for group in result.documents]
    found.sort(key=lambda item: (-item[1].score, item[1].document_id))
    return found[:SOURCES]


def _seed(group: DocumentGroup, tools: bool) -> str:
    """What the model is first shown of a document: its best passage; without the read tool,
    its best FALLBACK_SECTIONS passages."""
    sections = group.sections[:1] if tools else group.sections[:FALLBACK_SECTIONS]
    return "\n…\n".join(section.text for section in sections)


def _source(number: int, namespace: str, group: DocumentGroup) -> dict:
    best = group.sections[0]
    return {
        "n": number,
        "title": group.title,
        "url": best.citation_url,
        "document_id": group.document_id,
        "chunk_id": best.chunk_id,
        "namespace": namespace,
    }


def _answer_event(run: _Run, *, abstained: bool) -> dict:
    checked = run.checked
    return {
        "event": "answer",
        "abstained": abstained,
        "text": checked.text if checked else "",
        "sentences": [s.as_dict() for s in checked.sentences] if checked else [],
        "counts": checked.counts if checked else {},
    }


def _log(run: _Run) -> int | None:
    """The answer's row, tied to its search; None when no search was made (answers off)."""
    if run.query_log_id is None:
        return None
    querylog.flush()  # the search's row is written before the answer that names it
    querylog.wait_for(
        run.query_log_id
    )  # ...or is being written by the log's writer thread right now
    run.timings["total_ms"] = _ms(run.started)
    checked = run.checked
    counts = checked.counts if checked else {}
    row = AnswerLog.objects.create(
        query_log_id=run.query_log_id,
        namespaces=run.namespaces,
        question=run.question,
        answered=bool(run.gate and run.gate.answer),
        gate_rule=run.gate.rule if run.gate else "",
        gate_reason=run.gate.reason if run.gate else "",
        model=run.model,
        text=checked.text if checked else run.text,
        sources=run.sources,
        sentences=[s.as_dict() for s in checked.sentences] if checked else [],
        sentence_count=counts.get("sentences", 0),
        supported=counts.get("supported", 0),
        unsupported=counts.get("unsupported", 0),
        dropped=counts.get("dropped", 0),
        reads=run.reads,
        error_code=run.error.code if run.error else "",
        timings=run.timings,
        asker=run.asker,
    )
    return row.pk


def record_feedback(request_or_principal, answer_id: int, helpful: bool) -> AnswerLog:
    """The asker's vote on an answer; voting again replaces it. Anyone else's answer (another
    reader's, another tenant's) is not found, exactly as a missing one."""
    principal = _principal(request_or_principal)
    who = asker(request_or_principal, principal, create=False)
    readable = sorted(principal.readable_namespaces().values_list("slug", flat=True))
    row = (
        AnswerLog.objects.select_related("query_log__namespace")
        .filter(
            pk=answer_id, query_log__namespace__slug__in=readable, namespaces__contained_by=readable
        )
        .first()
    )
    if row is None or not who or row.asker != who:
        raise AnswerNotFound(f"No answer {answer_id}.")
    row.helpful = helpful
    row.save(update_fields=["helpful"])
    return row


def asker(request_or_principal, principal: Principal, *, create: bool) -> str:
    """Who is asking, as far as a vote goes: the token (a namespace token or a person token), the
    signed-in user, or an anonymous reader's session (its key hashed; `create` starts a session for
    one who has none). "" when there is no telling (a principal without its request): nobody may
    vote then."""
    if principal.token_id is not None:
        return f"token:{principal.token_id}"
    if isinstance(request_or_principal, Principal):
        return ""
    user = getattr(request_or_principal, "user", None)
    if principal.kind in ("staff", "member") and user is not None and user.is_authenticated:
        return f"user:{user.pk}"
    session = getattr(request_or_principal, "session", None)
    if session is None:
        return ""
    if session.session_key is None and create:
        session["asked_answers"] = True  # a non-empty, modified session: saved, and its cookie sent
        session.save()
    key = session.session_key
    return f"session:{hashlib.sha256(key.encode()).hexdigest()[:64]}" if key else ""


def _principal(request_or_principal) -> Principal:
    if isinstance(request_or_principal, Principal):
        return request_or_principal
    auth = getattr(request_or_principal, "auth", None)
    return auth if isinstance(auth, Principal) else principal_for(request_or_principal, None)


def _ms(start: float) -> float:
    return round((time.monotonic() - start) * 1000, 2)


def final_state(events: Iterator[dict]) -> dict:
    """What a sequence of answer events adds up to: the non-streamed answer."""
    state: dict = {
        "answer_id": None,
        "query_id": None,
        "gate": None,
        "sources": [],
        "left_out": 0,
        "abstained": False,
        "text": "",
        "sentences": [],
        "counts": {},
        "error": None,
    }
    for event in events:
        kind = event["event"]
        if kind == "gate":
            state["gate"] = {key: event[key] for key in ("answer", "rule", "reason")}
            state["query_id"] = event["query_id"]
        elif kind == "sources":
            state["sources"], state["left_out"] = event["sources"], event["left_out"]
        elif kind == "delta":
            state["text"] += event["text"]
        elif kind == "answer":
            state.update({key: event[key] for key in ("abstained", "text", "sentences", "counts")})
        elif kind == "error":
            state["error"] = {"code": event["code"], "message": event["message"]}
        elif kind == "done":
            state["answer_id"] = event["answer_id"]
    return state


def model_status() -> dict:
    """The answer model as /healthz and the start-up check show it: whether answers are on, whether
    the server answers and lists the configured model. Never its URL or key (/healthz answers anyone)."""
    conf = kb_settings()
    if not conf.answer_url:
        return {"enabled": False, "ok": True, "model": "", "reachable": None}
    endpoint = Endpoint(
        conf.answer_url,
        conf.answer_model,
        conf.answer_api_key,
        (min(conf.answer_timeouts[0], 3.0), *conf.answer_timeouts[1:]),
    )
    try:
        served = models(endpoint)
    except KBError as exc:
        return {
            "enabled": True,
            "ok": False,
            "model": conf.answer_model,
            "reachable": False,
            "code": exc.code,
            "error": exc.message,
        }
    if (
        conf.answer_model not in served
    ):  # what the server lists is its own business: the server log has it
        logger.warning(
            "answer model %r is not among those its server lists: %s",
            conf.answer_model,
            ", ".join(repr(m) for m in served[:20]) or "none",
        )
        return {
            "enabled": True,
            "ok": False,
            "model": conf.answer_model,
            "reachable": True,
            "code": "ANSWER_MODEL_FAILED",
            "error": f"the server does not list the model {conf.answer_model!r} (the server log has its list).",
        }
    return {"enabled": True, "ok": True, "model": conf.answer_model, "reachable": True}
