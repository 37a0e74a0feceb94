"""What a run's page says about its state, in words a curator reads: pure, no ORM."""

from __future__ import annotations

from datetime import datetime


def run_note(status: str, *, queued_at: datetime | None, heartbeat_at: datetime | None,
             started_at: datetime | None, now: datetime, stall_seconds: int) -> str:
    """One line on whether a queued or running run is moving; empty for a finished run."""
    if status == "queued" and queued_at is not None:
        waited = (now - queued_at).total_seconds()
        if waited >= stall_seconds:
            return f"No worker has taken it since {queued_at:%H:%M:%S} UTC ({_ago(waited)}): is a worker running?"
        return f"Waiting for a worker since {queued_at:%H:%M:%S} UTC."
    if status == "running":
        last = heartbeat_at or started_at
        if last is None:
            return ""
        quiet = (now - last).total_seconds()
        if quiet >= stall_seconds:
            return (f"No progress since {last:%H:%M:%S} UTC ({_ago(quiet)}): the worker may be stuck; "
                    "the watchdog fails the run if it stays quiet.")
        return f"Last progress {_ago(quiet)}."
    return ""


def _ago(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds} s ago"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s ago"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min ago"
