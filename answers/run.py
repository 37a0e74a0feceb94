"""One answer's state as it is built (answers/service.py), for its events and its log row."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from answers import citations, gate, prompt
from kb.errors import KBError


@dataclass
class AnswerRun:
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


def ms(start: float) -> float:
    return round((time.monotonic() - start) * 1000, 2)
