"""`answer_events()`: a question answered from the knowledge base, as a sequence of events.

Every surface reads the same events: `gate`, `sources`, `delta`, `answer`, `done`, and `error` with
a stable code in place of what could not be done. The search's own refusals (a namespace the caller
may not read, a query too long) are raised before the first event, as search raises them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

from answers import citations, gate, prompt
from answers.conversation import generate, source_entry
from answers.errors import (
    AnswerFailed,
    AnswersBusy,
    AnswersOff,
    AnswersOffForNamespace,
    TooManyNamespaces,
)
from answers.feedback import asker, principal_of
from answers.model import Endpoint, ToolsRefused, models
from answers.run import AnswerRun, ms
from answers.slots import Held, answer_slot
from kb.auth import Principal
from kb.conf import kb_settings
from kb.embedding.embedders import get_embedder, strong_cosine
from kb.errors import KBError
from kb.models import AnswerLog, Namespace, QueryLog
from retrieval import querylog
from retrieval.query import validate_query
from retrieval.results import DocumentGroup, SearchResult
from retrieval.service import search

logger = logging.getLogger(__name__)

MAX_NAMESPACES = 5
SOURCES = 5  # documents offered to the model, best first
CLOSEST = 3  # passages shown when the gate says "not covered"
# What an answer costs against the caller's rate limit, in searches, besides the searches it makes:
# a search holds a worker for well under a second, an answer for the model's whole reply (seconds,
# up to KB_ANSWER_TIMEOUT). Ten keeps a reader of the search page (a search and its answer, 11)
# far inside the anonymous 300 a minute, and a script asking answers in a loop to 27 a minute.
ANSWER_SEARCHES = 10
BUSY_RETRY_AFTER_S = 5  # an answer usually ends within seconds


def answer_events(
    request_or_principal,
    namespaces: list[str],
    question: str,
    *,
    stream: bool,
    caller: str = QueryLog.Caller.API,
    raise_off: bool = False,
) -> Iterator[dict]:
    """The events of one answer. `stream=False` leaves out the `delta` events (the text is in
    `answer`).
    The question and the caller's right to each namespace are checked here, before the first event:
    a refusal is raised (an HTTP error), never streamed. No namespace named: every one it may read.
    `raise_off`: answers off (for the deployment, or for every namespace asked) are raised by the
    iterator instead of coming as an `error` event, for a surface with no answer to carry them
    (MCP)."""
    principal = principal_of(request_or_principal)
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
        return _events(
            AnswerRun(question, namespaces, caller, asker=""), principal, stream, raise_off
        )
    slot = answer_slot()
    if not slot.acquire(blocking=False):
        raise AnswersBusy(
            f"{kb_settings().answer_concurrency} answers are under way on this server "
            f"(KB_ANSWER_CONCURRENCY); retry in {BUSY_RETRY_AFTER_S} s. Search works meanwhile.",
            details={"retry_after_s": BUSY_RETRY_AFTER_S},
        )
    try:
        # each namespace is a search, counted as search counts them, and the answer ANSWER_SEARCHES
        # more
        principal.charge(len(namespaces) - 1 + ANSWER_SEARCHES)
    except BaseException:
        slot.release()
        raise
    run = AnswerRun(
        question, namespaces, caller, asker=asker(request_or_principal, principal, create=True)
    )
    return Held(_events(run, principal, stream, raise_off), slot)


def _events(
    run: AnswerRun, principal: Principal, stream: bool, raise_off: bool = False
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


def _answer(run: AnswerRun, principal: Principal, stream: bool) -> Iterator[dict]:
    conf = kb_settings()
    if not conf.answer_url:
        raise AnswersOff(
            "Answers are off: this deployment has no answer model (KB_ANSWER_URL). Search works "
            "as ever."
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
    run.timings["retrieval_ms"] = ms(run.started)
    prepared = time.monotonic()
    run.gate = gate.decide_all(results, floor=strong_cosine())
    yield {"event": "gate", **run.gate.as_dict(), "query_id": run.query_log_id}
    documents = _documents(results)
    if not run.gate.answer:
        run.sources = [
            source_entry(n, namespace, group)
            for n, (namespace, group) in enumerate(documents[:CLOSEST], 1)
        ]
        yield {"event": "sources", "sources": run.sources, "left_out": 0}
        run.text = citations.NOT_COVERED
        run.checked = citations.check(run.text, {})
        yield _answer_event(run, abstained=True)
        return
    tools = conf.answer_tools != "off"
    try:
        yield from generate(
            run, principal, endpoint, documents, tools=tools, stream=stream, prepared=prepared
        )
    except ToolsRefused:
        if conf.answer_tools == "on":
            raise
        logger.info(
            "answer model %s refused the read tool; answering with larger seeded passages instead",
            endpoint.model,
        )
        yield from generate(
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


def _search(
    run: AnswerRun, namespaces: list[str], reach: frozenset[int] | None
) -> list[SearchResult]:
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


def _answer_event(run: AnswerRun, *, abstained: bool) -> dict:
    checked = run.checked
    return {
        "event": "answer",
        "abstained": abstained,
        "text": checked.text if checked else "",
        "sentences": [s.as_dict() for s in checked.sentences] if checked else [],
        "counts": checked.counts if checked else {},
    }


def _log(run: AnswerRun) -> int | None:
    """The answer's row, tied to its search; None when no search was made (answers off)."""
    if run.query_log_id is None:
        return None
    querylog.flush()  # the search's row is written before the answer that names it
    querylog.wait_for(
        run.query_log_id
    )  # ...or is being written by the log's writer thread right now
    run.timings["total_ms"] = ms(run.started)
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
    the server answers and lists the configured model. Never its URL or key (/healthz answers
    anyone)."""
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
            "error": f"the server does not list the model {conf.answer_model!r} (the server log "
            "has its list).",
        }
    return {"enabled": True, "ok": True, "model": conf.answer_model, "reachable": True}
