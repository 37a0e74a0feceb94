"""Middleware: every error under /api/ leaves in the API's one error shape; every page carries a
Content-Security-Policy; what a signed-in or token caller reads is never stored by a browser or
a cache; NUL in the query is a 400; a database that went away is a 503; debug pages hide secrets
and reach staff only."""

from __future__ import annotations

import re

from django.conf import settings
from django.core.exceptions import (
    BadRequest,
    DisallowedHost,
    RequestDataTooBig,
    SuspiciousOperation,
    TooManyFieldsSent,
    TooManyFilesSent,
)
from django.http import Http404, HttpResponse, HttpResponseNotFound, JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.urls import Resolver404, resolve
from django.utils.cache import patch_cache_control
from django.views.debug import ExceptionReporter, SafeExceptionReporterFilter

from kb.database import database_away, database_away_error
from kb.errors import error_for_status

API_PREFIX = "/api/"


class ApiErrorShapeMiddleware:
    """django-ninja answers a wrong method (405) and Django an unknown /api/ path (404) with
    plain text; API clients get {code, message, details} for every error instead."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (
            request.path.startswith(API_PREFIX)
            and response.status_code >= 400
            and not response.get("Content-Type", "").startswith("application/json")
        ):
            return self._as_json(response)
        return response

    @staticmethod
    def _as_json(response: HttpResponse) -> JsonResponse:
        status = response.status_code
        details = (
            {"allowed_methods": response["Allow"].split(", ")}
            if response.has_header("Allow")
            else {}
        )
        message = (
            {405: "This method is not allowed here.", 404: "Not found."}.get(status)
            or _plain_text(response)
            or response.reason_phrase
        )
        error = error_for_status(status)(message, details=details)
        shaped = JsonResponse(
            error.as_dict(), status=status, json_dumps_params={"ensure_ascii": False}
        )
        if response.has_header("Allow"):
            shaped["Allow"] = response["Allow"]
        return shaped


def _plain_text(response: HttpResponse) -> str:
    """The text of a plain-text error of ours (`bad_request_text`, say), to keep as the message."""
    if response.get("Content-Type", "").startswith("text/plain") and not response.streaming:
        return response.content.decode("utf-8", errors="replace").strip()[:500]
    return ""


# no inline script anywhere and nothing from another origin; the product's own pages allow no
# inline style either (the explanation bars use classes). Django's admin and Swagger UI set
# inline styles of their own, so those two paths allow inline style, never inline script.
STRICT_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'"
)
THIRD_PARTY_UI = ("/admin/", "/api/docs")


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if "Content-Security-Policy" not in response:  # a view with its own (stored files) keeps it
            policy = STRICT_POLICY
            if request.path.startswith(THIRD_PARTY_UI):
                policy = policy.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'")
            response["Content-Security-Policy"] = policy
        return response


class PrivateResponsesMiddleware:
    """A response to a signed-in user or a token is `Cache-Control: private, no-store`: on a shared
    computer, Back after signing out must not show private results again from the browser's
    cache, and no shared cache may keep them. Anonymous reads of public namespaces stay
    cacheable."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        user = getattr(request, "user", None)
        if (user is not None and user.is_authenticated) or "HTTP_AUTHORIZATION" in request.META:
            patch_cache_control(response, private=True, no_store=True)
        return response


class SecretHidingFilter(SafeExceptionReporterFilter):
    """Django hides API|TOKEN|KEY|SECRET|PASS|SIGNATURE; connection URLs carry passwords too."""

    hidden_settings = re.compile(
        "API|TOKEN|KEY|SECRET|PASS|SIGNATURE|AUTH|COOKIE|URL|DSN|DATABASE", flags=re.I
    )


def _is_staff(request) -> bool:
    """Who may see Django's technical pages: superusers only. A tenant's curator is staff too,
    and a traceback's frames may hold another tenant's rows or the database's password."""
    user = getattr(request, "user", None)
    return bool(user is not None and user.is_authenticated and user.is_superuser)


PLAIN_PAGES = {404: "Not found.", 500: "Server error."}
NUL_REFUSED = (
    "Bad request: the path or a query parameter holds a NUL character (%00), which is never valid."
)


def bad_request_text(exception: BaseException | None) -> str:
    """What a 400 Django answers by itself (before or around any view of ours) says: what was
    wrong, in plain words, with DEBUG on or off. No part of the request is repeated."""
    if isinstance(exception, DisallowedHost):
        return (
            "Bad request: this server does not answer for the host name the request was sent to "
            "(its Host header)."
        )
    if isinstance(exception, TooManyFieldsSent):
        return (
            f"Bad request: the form sends more than {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS} "
            "fields."
        )
    if isinstance(exception, TooManyFilesSent):
        return (
            f"Bad request: the form sends more than {settings.DATA_UPLOAD_MAX_NUMBER_FILES} "
            "files at once."
        )
    if isinstance(exception, RequestDataTooBig):
        return (
            "Bad request: the form's data is larger "
            f"than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE // 2**20} MB "
            "(files excepted)."
        )
    if isinstance(exception, MultiPartParserError):
        return "Bad request: the multipart form data is malformed and cannot be read."
    return "Bad request: the request is malformed and cannot be read."


class InvalidInputMiddleware:
    """A NUL character in the path or in a query parameter (`?namespace=demo%00`) is never
    valid input, and PostgreSQL cannot even compare it: 400, before any view sees it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if "\x00" in request.path or any(
            "\x00" in key or any("\x00" in v for v in values) for key, values in request.GET.lists()
        ):
            return HttpResponse(NUL_REFUSED, status=400, content_type="text/plain; charset=utf-8")
        return self.get_response(request)


class DatabaseAwayMiddleware:
    """A page that loses the database answers 503 `KB_DB_UNAVAILABLE` with a Retry-After, not an
    internal error: the reader may try again, and nothing is wrong with the request. Every /api/
    view is django-ninja's, which answers the same itself (config/api.py), so none reaches here."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not database_away(exception):
            return None
        from kb.http import (
            page_error,
        )  # not at import: the exception reporter below loads this module early

        return page_error(database_away_error())


class DebugPagesForStaffMiddleware:
    """With DEBUG on (the default outside production), Django's technical pages (tracebacks,
    settings, the URL patterns) go to signed-in superusers only; everyone else gets a plain page.
    Server errors are handled by `StaffOnlyExceptionReporter`, missing pages here."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if settings.DEBUG and not _is_staff(request):
            try:
                resolve(request.path_info, getattr(request, "urlconf", None))
            except Resolver404:
                return HttpResponseNotFound(
                    PLAIN_PAGES[404], content_type="text/plain; charset=utf-8"
                )
        return self.get_response(request)

    def process_exception(self, request, exception):
        if settings.DEBUG and not _is_staff(request) and isinstance(exception, Http404):
            return HttpResponseNotFound(PLAIN_PAGES[404], content_type="text/plain; charset=utf-8")
        return None


class StaffOnlyExceptionReporter(ExceptionReporter):
    """Django's debug 500 page, shown (with DEBUG on) to signed-in superusers only. Django answers a
    malformed request (a bad Host header, too many fields) with this page too, as a 400: everyone
    else is told what was wrong with it, not that the server failed."""

    def _plain(self) -> bool:
        return settings.DEBUG and not _is_staff(self.request)

    def _plain_text(self) -> str:
        if isinstance(self.exc_value, (BadRequest, SuspiciousOperation)):
            return bad_request_text(self.exc_value)
        return PLAIN_PAGES[500]

    def get_traceback_html(self):
        return self._plain_text() if self._plain() else super().get_traceback_html()

    def get_traceback_text(self):
        return self._plain_text() if self._plain() else super().get_traceback_text()
