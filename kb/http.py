"""What every page shares: errors answered to a browser (the API shapes its own, in kb/api.py)
and numbers read from a form or a query string."""

from __future__ import annotations

from django.http import HttpResponse

from kb.errors import KBError, error_status


def page_error(exc: KBError) -> HttpResponse:
    """A plain-text page for an error a page meets before it can render (a rate limit, say)."""
    response = HttpResponse(f"{exc.code}: {exc.message}\n", status=error_status(exc),
                            content_type="text/plain; charset=utf-8")
    if "retry_after_s" in exc.details:
        response["Retry-After"] = str(exc.details["retry_after_s"])
    return response


def bounded_int(value, default: int, low: int, high: int) -> int:
    """A form or query-string number kept between `low` and `high`; `default` when it is none."""
    try:
        return min(high, max(low, int(value)))
    except (TypeError, ValueError):
        return default
