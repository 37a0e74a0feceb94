"""The `read` tool the answer model may call: more of a numbered source it was given, within the
answer's token budget and the caller's rights, read again at the moment of reading."""

from __future__ import annotations

import json
from typing import Protocol

from answers import prompt
from kb.audiences import document_filter
from kb.auth import Principal
from kb.models import Document
from retrieval.results import DocumentGroup


class Reading(Protocol):
    """What the tool counts and adds to on the answer (`answers.run.AnswerRun`)."""

    reads: int
    seen: dict[int, str]


def read_source(
    run: Reading,
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
            'error: read takes {"source": <number>, "offset": <number>}, whole numbers and '
            "nothing else",
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
    """The `read` tool's (source, offset) from the model's JSON, or None unless it is exactly an
    object
    of whole numbers: `source` required, `offset` optional, 0 to MAX_OFFSET, no other key. Anything
    else
    (NaN, 1e400, a 5,000-digit number, a string, a list, nesting past the parser's depth) reads
    nothing."""
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
