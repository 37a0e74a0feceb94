"""Errors answered to a browser (the API shapes its own, in kb/api.py)."""

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
