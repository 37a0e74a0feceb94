"""What a run's page says about its state, in words a curator reads: pure, no ORM."""

from __future__ import annotations

from datetime import datetime


def run_note(
    status: str,
    *,
    queued_at: datetime | None,
    heartbeat_at: datetime | None,
    started_at: datetime | None,
    now: datetime,
    stall_seconds: int,
    behind: tuple[str, ...] = (),
    queued_ahead: int = 0,
) -> str:
    """One line on whether a queued or running run is moving; empty for a finished run. A queued
    run says what it waits behind: `behind`, the runs the workers are busy with (as the curator
    may see them named), and `queued_ahead`, how many queued runs are to be taken before it."""
    if status == "queued" and queued_at is not None:
        waited = (now - queued_at).total_seconds()
        place = f"; number {queued_ahead + 1} in the queue" if behind or queued_ahead else ""
        if behind:  # a worker is busy: waiting is expected, however long the run ahead takes
            return (
                f"Waiting since {queued_at:%H:%M:%S} UTC ({_ago(waited)}), "
                f"behind {_joined(behind)}{place}."
            )
        if waited >= stall_seconds:
            return (
                f"No worker has taken it since {queued_at:%H:%M:%S} UTC ({_ago(waited)}): is a "
                "worker "
                f"running?{place.replace(';', ' It is', 1)}{'.' if place else ''}"
            )
        return f"Waiting for a worker since {queued_at:%H:%M:%S} UTC{place}."
    if status == "running":
        last = heartbeat_at or started_at
        if last is None:
            return ""
        quiet = (now - last).total_seconds()
        if quiet >= stall_seconds:
            return (
                f"No progress since {last:%H:%M:%S} UTC ({_ago(quiet)}): the worker may be stuck; "
                "the watchdog fails the run if it stays quiet."
            )
        return f"Last progress {_ago(quiet)}."
    return ""


def run_took(
    status: str,
    *,
    queued_at: datetime | None,
    started_at: datetime | None,
    finished_at: datetime | None,
    now: datetime,
) -> str:
    """How long a run took, to the second (the run list's column): a finished run's time from
    start to end, or how long a live one has been running or waiting so far."""
    if finished_at is not None and started_at is not None:
        return _span((finished_at - started_at).total_seconds())
    if status == "running" and started_at is not None:
        return f"running for {_span((now - started_at).total_seconds())}"
    if status == "queued" and queued_at is not None:
        return f"waiting for {_span((now - queued_at).total_seconds())}"
    return ""


def _joined(names: tuple[str, ...]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _ago(seconds: float) -> str:
    return f"{_span(seconds)} ago"


def _span(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min {seconds % 60} s"
