"""Read JSON request bodies strictly, for the API and MCP alike: refuse what no field could hold.

Python's decoder accepts a lone surrogate (`"\\ud800"`, which UTF-8 and PostgreSQL refuse), a NUL
(`"\\u0000"`, which PostgreSQL text cannot hold) and nesting up to its recursion limit (a
RecursionError). All are answered as `BadRequest` (KB_BAD_REQUEST), a 400 that says what is wrong,
before any view sees them.
"""

from __future__ import annotations

import json
import re
from typing import Any

from kb.errors import BadRequest

MAX_DEPTH = 64  # no request of ours nests deeper than a handful of levels
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def parse(body: bytes | str, what: str = "The request body") -> Any:
    """The decoded body; BadRequest when it is not JSON, nests deeper than MAX_DEPTH, or holds a
    lone surrogate or a NUL in a string or a key (`what` names the body in the message)."""
    try:
        data = json.loads(body)
    except RecursionError as exc:
        raise too_deep(what) from exc
    except UnicodeDecodeError as exc:
        raise BadRequest(
            f"{what} is not UTF-8 (byte {exc.start}); send JSON encoded as UTF-8.",
            details={"position": exc.start},
        ) from exc
    except json.JSONDecodeError as exc:
        raise BadRequest(
            f"{what} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.",
            details={"line": exc.lineno, "column": exc.colno},
        ) from exc
    check(data, what)
    return data


def check(data: Any, what: str = "The request body") -> None:
    """Raise BadRequest for nesting deeper than MAX_DEPTH, or a lone surrogate or NUL anywhere in
    `data`
    (`what` names it in the message). Walks with an explicit stack, so a deep value cannot
    exhaust Python's own; each value keeps only a link to its parent and its own key or index,
    and a path is spelt out only for the one value refused (spelt for every value, long keys
    under deep nesting cost a web process gigabytes)."""
    pending: list[tuple[Any, tuple | None, str | int, int]] = [(data, None, ROOT, 1)]
    while pending:
        value, parent, step, depth = pending.pop()
        if isinstance(value, str):
            if found := _UNSTORABLE.search(value):
                raise unstorable(what, _path(parent, step), found.group())
            continue
        if not isinstance(value, (dict, list)):
            continue
        if depth > MAX_DEPTH:
            raise too_deep(what)
        node = (parent, step)
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str) and (found := _UNSTORABLE.search(key)):
                    raise unstorable(what, f"{_path(parent, step)} (a key)", found.group())
                pending.append((item, node, key, depth + 1))
        else:
            pending.extend((item, node, index, depth + 1) for index, item in enumerate(value))


ROOT = "$"


def _path(parent: tuple | None, step: str | int) -> str:
    """`$.cases[2].question`: the steps from the root to a value, at most 200 characters."""
    steps = [step]
    while parent is not None:
        parent, step = parent
        steps.append(step)
    spelt = "".join(
        ROOT if s is ROOT else f"[{s}]" if isinstance(s, int) else f".{s}" for s in reversed(steps)
    )
    return spelt[:200]


def too_deep(what: str) -> BadRequest:
    return BadRequest(
        f"{what} nests objects or lists more than {MAX_DEPTH} levels deep; no request needs "
        "that many.",
        details={"max_depth": MAX_DEPTH},
    )


def unstorable(what: str, where: str, character: str) -> BadRequest:
    if character == "\x00":
        return BadRequest(
            f"{what} holds a NUL character (\\u0000) at {where}; no text here may contain one.",
            details={"at": where},
        )
    return BadRequest(
        f"{what} holds a lone surrogate (an escape such as \\ud800 without its pair) at {where}; "
        "it is not a character. Send text as UTF-8, or escape characters outside the BMP as a "
        "surrogate pair.",
        details={"at": where},
    )
