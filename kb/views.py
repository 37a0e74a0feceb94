"""The project's own views outside the API: health, the throttled admin and reader logins."""

from django.contrib import admin
from django.contrib.auth.views import LoginView
from django.contrib.staticfiles import finders
from django.db import DatabaseError
from django.http import FileResponse, Http404, JsonResponse
from django.views.decorators.http import require_GET

from kb import ratelimit
from kb.auth import client_address
from kb.errors import KBError
from kb.health import health_report
from kb.http import page_error


@require_GET
def favicon(request):
    """The icon browsers ask every site for at /favicon.ico (the static file, cached for a day)."""
    found = finders.find("kb/favicon.ico")
    if not found:
        raise Http404
    response = FileResponse(open(found, "rb"), content_type="image/x-icon")
    response["Cache-Control"] = "public, max-age=86400"
    return response


@require_GET
def healthz(request):
    """Anyone may ask (load balancers, monitors); only a superuser sees which runs are stuck."""
    report = health_report()
    try:  # reading the signed-in user needs the database, which may be what is down
        superuser = bool(report.database.get("ok")) and request.user.is_active and request.user.is_superuser
    except DatabaseError:
        superuser = False
    return JsonResponse(report.as_dict(runs_in_detail=superuser), status=200 if report.essential_ok else 503)


LOGIN_ATTEMPTS_PER_MINUTE = 10


def throttled_admin_login(request, extra_context=None):
    """The admin login, with at most LOGIN_ATTEMPTS_PER_MINUTE sign-in attempts per minute and
    client address: password guessing is slowed to a crawl, a person never notices."""
    if request.method == "POST":
        try:
            ratelimit.hit(f"login:{client_address(request)}", LOGIN_ATTEMPTS_PER_MINUTE)
        except KBError as exc:
            return page_error(exc)
    return admin.site.login(request, extra_context)


class ReaderLoginView(LoginView):
    """The sign-in page for readers (and staff) outside /admin/, throttled like the admin's."""

    template_name = "registration/login.html"
    redirect_authenticated_user = False  # a reader may sign in again as another account: no loop back

    def post(self, request, *args, **kwargs):
        try:
            ratelimit.hit(f"login:{client_address(request)}", LOGIN_ATTEMPTS_PER_MINUTE)
        except KBError as exc:
            return page_error(exc)
        return super().post(request, *args, **kwargs)
