"""Middleware: every error under /api/ leaves in the API's one error shape."""

from __future__ import annotations

from django.http import HttpResponse, JsonResponse

API_PREFIX = "/api/"
CODES = {400: "KB_BAD_REQUEST", 403: "KB_FORBIDDEN", 404: "KB_NOT_FOUND", 405: "KB_METHOD_NOT_ALLOWED",
         413: "KB_PAYLOAD_TOO_LARGE", 500: "KB_INTERNAL_ERROR"}


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
        shaped = JsonResponse({"code": CODES.get(status, "KB_ERROR"), "message": message, "details": details},
                              status=status, json_dumps_params={"ensure_ascii": False})
        if response.has_header("Allow"):
            shaped["Allow"] = response["Allow"]
        return shaped
