"""What every page shares: errors answered to a browser (the API shapes its own, in config/api.py),
numbers read from a form or a query string, and the gate of the staff's pages."""

from __future__ import annotations

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.http import HttpResponse
from django.shortcuts import render

from kb.errors import KBError, error_status


def page_error(exc: KBError) -> HttpResponse:
    """A plain-text page for an error a page meets before it can render (a rate limit, say)."""
    response = HttpResponse(
        f"{exc.code}: {exc.message}\n",
        status=error_status(exc),
        content_type="text/plain; charset=utf-8",
    )
    if "retry_after_s" in exc.details:
        response["Retry-After"] = str(exc.details["retry_after_s"])
    return response


def bounded_int(value, default: int, low: int, high: int) -> int:
    """A form or query-string number kept between `low` and `high`; `default` when it is none."""
    try:
        return min(high, max(low, int(value)))
    except (TypeError, ValueError):
        return default


def sent_file_name(upload) -> str:
    """An uploaded file's name as its sender gave it. Browsers, curl and urllib3 escape a '"' in a
    multipart file name as %22 (the HTML standard's form-data encoding; Django's parser leaves it
    so), which stored the name percent-encoded and served it encoded twice. A name with a %22 of its
    own cannot be told from one with a quote; the quote is the likely one. CR and LF (%0D, %0A) are
    not decoded: no file name needs a line break."""
    return upload.name.replace("%22", '"')


def staff_page(view):
    """A page for staff. Someone signed out is sent to sign in; a signed-in reader is told, with a
    403, that the page is for staff, rather than sent to a sign-in form they have already passed."""

    @wraps(view)
    def gated(request, *args, **kwargs):
        user = request.user
        if user.is_active and user.is_staff:
            return view(request, *args, **kwargs)
        if not user.is_authenticated:
            return redirect_to_login(request.get_full_path(), "login")
        return render(request, "kb/staff_only.html", status=403)

    return gated
