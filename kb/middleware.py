"""Middleware: every error under /api/ leaves in the API's one error shape; every page carries a
Content-Security-Policy; debug pages hide secrets."""

from __future__ import annotations

import re

from django.http import HttpResponse, JsonResponse
from django.views.debug import SafeExceptionReporterFilter

from kb.errors import error_for_status

API_PREFIX = "/api/"


class ApiErrorShapeMiddleware:
    """django-ninja answers a wrong method (405) and Django an unknown /api/ path (404) with
    plain text; API clients get {code, message, details} for every error instead."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (request.path.startswith(API_PREFIX) and response.status_code >= 400
                and not response.get("Content-Type", "").startswith("application/json")):
            return self._as_json(response)
        return response

    @staticmethod
    def _as_json(response: HttpResponse) -> JsonResponse:
        status = response.status_code
        details = {"allowed_methods": response["Allow"].split(", ")} if response.has_header("Allow") else {}
        message = {405: "This method is not allowed here.", 404: "Not found."}.get(status, response.reason_phrase)
        error = error_for_status(status)(message, details=details)
        shaped = JsonResponse(error.as_dict(), status=status, json_dumps_params={"ensure_ascii": False})
        if response.has_header("Allow"):
            shaped["Allow"] = response["Allow"]
        return shaped


# no inline script anywhere and nothing from another origin; the product's own pages allow no
# inline style either (the explanation bars use classes). Django's admin and Swagger UI set
# inline styles of their own, so those two paths allow inline style, never inline script.
STRICT_POLICY = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                 "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; "
                 "frame-ancestors 'none'; form-action 'self'")
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


class SecretHidingFilter(SafeExceptionReporterFilter):
    """Django hides API|TOKEN|KEY|SECRET|PASS|SIGNATURE; connection URLs carry passwords too."""

    hidden_settings = re.compile("API|TOKEN|KEY|SECRET|PASS|SIGNATURE|AUTH|COOKIE|URL|DSN|DATABASE", flags=re.I)
