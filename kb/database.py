"""Whether the database went away: a lost connection is a 503 with a Retry-After on every
surface, and a reason for the ingest writer to wait, where a deadlock or a bug is neither."""

from __future__ import annotations

from django.db import InterfaceError, OperationalError, connection

from kb.errors import DatabaseUnavailable

# SQLSTATEs of a connection that is gone: class 08 (connection exception) and the server's
# shutdown codes; a client-side error without a SQLSTATE (refused, closed) is one too
_CONNECTION_LOST = ("08", "57P01", "57P02", "57P03")
DATABASE_RETRY_AFTER_S = 5


def database_away(exception: BaseException) -> bool:
    """Whether `exception` says the database went away (stopped, restarted, refused the
    connection), rather than a deadlock, a lock timeout or a bug, which stay 500s."""
    if isinstance(exception, InterfaceError):
        return True
    if not isinstance(exception, OperationalError):
        return False
    sqlstate = getattr(exception.__cause__, "sqlstate", None)
    return sqlstate is None or sqlstate.startswith(_CONNECTION_LOST)


def database_away_error() -> DatabaseUnavailable:
    """What a request that lost the database answers (503, Retry-After), on the API and the
    pages."""
    connection.close()  # so the next request connects afresh
    return DatabaseUnavailable(
        "The database cannot be reached just now; try again shortly.",
        details={"retry_after_s": DATABASE_RETRY_AFTER_S},
    )
