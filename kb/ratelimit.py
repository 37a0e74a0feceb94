"""Request rate limits per caller: an atomic counter in PostgreSQL with a sliding window.

`INSERT ... ON CONFLICT DO UPDATE ... RETURNING` on the primary, which every process shares, so
concurrent workers never lose a count. The limit is checked against the current minute's count plus
the previous one's weighted by its part still within the last 60 seconds, so a burst at a window's
edge cannot double the rate.
"""

from __future__ import annotations

import math
import time

from django.db import connection

from kb.errors import RateLimited

WINDOW_SECONDS = 60


def hit(key: str, limit: int, *, now: float | None = None, cost: int = 1) -> None:
    """Count `cost` requests of `key` (a request that makes many searches counts each); raise
    RateLimited (429, with Retry-After) past `limit` a minute."""
    now = time.time() if now is None else now
    window = int(now // WINDOW_SECONDS)
    elapsed = (now % WINDOW_SECONDS) / WINDOW_SECONDS
    with connection.cursor() as cursor:
        cursor.execute(
            """INSERT INTO kb_ratecounter (key, "window", count) VALUES (%s, %s, %s)
               ON CONFLICT (key, "window") DO UPDATE SET count = kb_ratecounter.count + EXCLUDED.count
               RETURNING count, (SELECT count FROM kb_ratecounter WHERE key = %s AND "window" = %s)""",  # noqa: E501
            [key[:200], window, cost, key[:200], window - 1],
        )
        current, previous = cursor.fetchone()
    estimate = current + (previous or 0) * (1 - elapsed)
    if estimate > limit:
        retry_after = max(1, math.ceil((1 - elapsed) * WINDOW_SECONDS))
        raise RateLimited(
            f"Rate limit of {limit} requests per minute exceeded; retry in {retry_after} s.",
            details={"limit_per_minute": limit, "retry_after_s": retry_after},
        )


def forget_old_windows(now: float | None = None) -> int:
    now = time.time() if now is None else now
    with connection.cursor() as cursor:
        cursor.execute(
            'DELETE FROM kb_ratecounter WHERE "window" < %s', [int(now // WINDOW_SECONDS) - 1]
        )
        return cursor.rowcount
