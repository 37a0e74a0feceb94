"""The project's own views outside the API: health, and the forms anyone may post without
signing in (admin and reader sign-in, password reset), each throttled per client address."""

import hashlib

from django.contrib import admin
from django.contrib.auth.views import LoginView, PasswordResetConfirmView, PasswordResetView
from django.contrib.staticfiles import finders
from django.db import DatabaseError
from django.http import FileResponse, Http404, HttpResponseBadRequest, JsonResponse
from django.views.decorators.http import require_GET

from config.health import health_report
from config.middleware import bad_request_text
from kb import ratelimit
from kb.auth import client_address
from kb.errors import KBError
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
        superuser = (
            bool(report.database.get("ok")) and request.user.is_active and request.user.is_superuser
        )
    except DatabaseError:
        superuser = False
    return JsonResponse(
        report.as_dict(runs_in_detail=superuser), status=200 if report.essential_ok else 503
    )


def bad_request(request, exception=None):
    """Django's 400 (handler400, with DEBUG off): what was wrong, in plain text, as with DEBUG
    on."""
    return HttpResponseBadRequest(
        bad_request_text(exception), content_type="text/plain; charset=utf-8"
    )


LOGIN_ATTEMPTS_PER_MINUTE = 10
PASSWORD_RESETS_PER_MINUTE = 10  # per client address, as sign-in: each one may send a mail
RESET_MAILS_PER_RECIPIENT_PER_MINUTE = 3  # per e-mail address, from any number of client addresses


def throttled_admin_login(request, extra_context=None):
    """The admin login, with at most LOGIN_ATTEMPTS_PER_MINUTE sign-in attempts per minute and
    client address: password guessing is slowed to a crawl, a person never notices."""
    if request.method == "POST":
        try:
            ratelimit.hit(f"login:{client_address(request)}", LOGIN_ATTEMPTS_PER_MINUTE)
        except KBError as exc:
            return page_error(exc)
    return admin.site.login(request, extra_context)


class ThrottledPost:
    """A form anyone may post without signing in, at most `throttle_limit` posts a minute per
    client address (`throttle_key` names the counter); past it, the 429 page sign-in answers."""

    throttle_key = ""
    throttle_limit = LOGIN_ATTEMPTS_PER_MINUTE

    def post(self, request, *args, **kwargs):
        try:
            ratelimit.hit(f"{self.throttle_key}:{client_address(request)}", self.throttle_limit)
        except KBError as exc:
            return page_error(exc)
        return super().post(request, *args, **kwargs)


class ReaderLoginView(ThrottledPost, LoginView):
    """The sign-in page for readers (and staff) outside /admin/, throttled like the admin's."""

    template_name = "registration/login.html"
    redirect_authenticated_user = (
        False  # a reader may sign in again as another account: no loop back
    )
    throttle_key = "login"

    def get_context_data(self, **kwargs):
        from kb.identity.oidc import sign_in_offer

        return {**super().get_context_data(**kwargs), "sso": sign_in_offer()}


class ThrottledPasswordResetView(ThrottledPost, PasswordResetView):
    """Django's password reset, throttled per client address like sign-in, and per recipient, so
    no one can flood a mailbox from many addresses. A refusal is the same whether or not the
    address belongs to an account."""

    throttle_key = "password-reset"
    throttle_limit = PASSWORD_RESETS_PER_MINUTE

    def form_valid(self, form):
        recipient = hashlib.sha256(form.cleaned_data["email"].strip().lower().encode()).hexdigest()
        try:
            ratelimit.hit(f"password-reset-to:{recipient}", RESET_MAILS_PER_RECIPIENT_PER_MINUTE)
        except KBError as exc:
            return page_error(exc)
        return super().form_valid(form)


class ThrottledPasswordResetConfirmView(ThrottledPost, PasswordResetConfirmView):
    """Setting a new password from a reset link (each try hashes a password), counted with the
    resets of the same client address."""

    throttle_key = "password-reset"
    throttle_limit = PASSWORD_RESETS_PER_MINUTE
