"""This process's answer slots: at most KB_ANSWER_CONCURRENCY answers under way at once, each
holding a worker and a database connection while the model writes; one more is refused
(`AnswersBusy`, by answers/service.py) before anything is searched."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

from kb.conf import kb_settings

_slots: dict[int, threading.BoundedSemaphore] = {}  # KB_ANSWER_CONCURRENCY -> this process's slots
_slots_made = threading.Lock()


def answer_slot() -> threading.BoundedSemaphore:
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
