"""Thin HTML/JSON views outside the API: health."""

from django.http import JsonResponse
from django.views.decorators.http import require_GET

from kb.health import health_report


@require_GET
def healthz(request):
    report = health_report()
    return JsonResponse(report.as_dict(), status=200 if report.essential_ok else 503)
