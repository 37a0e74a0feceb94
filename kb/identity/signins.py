"""The sign-in log: every attempt, through the password form (local accounts, LDAP), the admin's
login or OpenID Connect, with who, when, how and whether it worked; kept KB_SIGN_IN_LOG_DAYS days.
A successful single sign-on also marks its session, so `middleware` reads its groups again when
due."""

from __future__ import annotations

import csv
import io
import logging
import time
from datetime import UTC, timedelta

from django.contrib.auth import BACKEND_SESSION_KEY
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.utils import timezone

from kb.auth import client_address
from kb.conf import kb_settings
from kb.models import IdentityProvider, SignIn

logger = logging.getLogger(__name__)

SESSION_KEY = "kb_identity"  # {"provider": "oidc" | "ldap", "synced": seconds since the epoch}
REFUSAL = "kb_sign_in_refusal"  # set on the request by a backend that knows why it refused
METHOD_OF_BACKEND = {
    "kb.identity.oidc.OidcBackend": SignIn.Method.OIDC,
    "kb.identity.ldap.LdapBackend": SignIn.Method.LDAP,
}


def record(
    request, *, method: str, username: str, succeeded: bool, user=None, reason: str = ""
) -> None:
    SignIn.objects.create(
        method=method,
        username=(username or "")[:255],
        user=user,
        succeeded=succeeded,
        reason=reason[:300],
        address=client_address(request)[:64] if request is not None else "",
    )
    # pruned as it grows, failures too (a flood of them is throttled): no scheduled job to forget
    cutoff = timezone.now() - timedelta(days=kb_settings().identity.sign_in_log_days)
    SignIn.objects.filter(at__lt=cutoff).delete()


def refuse(request, reason: str) -> None:
    """Say on the request why a backend refused, for the failure's row in the log."""
    if request is not None:
        setattr(request, REFUSAL, reason)


def mark_synced(request, provider: str) -> None:
    request.session[SESSION_KEY] = {"provider": provider, "synced": time.time()}


def _logged_in(sender, request, user, **kwargs) -> None:
    backend = (
        request.session.get(BACKEND_SESSION_KEY, "")
        if request is not None
        else getattr(user, "backend", "")
    )
    method = METHOD_OF_BACKEND.get(backend, SignIn.Method.LOCAL)
    record(request, method=method, username=user.get_username(), user=user, succeeded=True)
    if request is not None and method in IdentityProvider.values:
        mark_synced(request, method)


def _login_failed(sender, credentials, request=None, **kwargs) -> None:
    reason = getattr(request, REFUSAL, "") or "wrong user name or password"
    method = SignIn.Method.PASSWORD if kb_settings().identity.ldap_url else SignIn.Method.LOCAL
    record(
        request,
        method=method,
        username=str(credentials.get("username", "")),
        succeeded=False,
        reason=reason,
    )


def connect() -> None:
    user_logged_in.connect(_logged_in, dispatch_uid="kb.identity.signins.logged_in")
    user_login_failed.connect(_login_failed, dispatch_uid="kb.identity.signins.login_failed")


CSV_COLUMNS = ("time (UTC)", "method", "user name", "account id", "succeeded", "reason", "address")


def as_csv(sign_ins) -> str:
    """The rows a security officer reads: one a sign-in, oldest first."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for row in sign_ins.order_by("at", "pk"):
        writer.writerow(
            [
                row.at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S"),
                row.method,
                spreadsheet_safe(row.username),
                row.user_id or "",
                "yes" if row.succeeded else "no",
                spreadsheet_safe(row.reason),
                row.address,
            ]
        )
    return out.getvalue()


def spreadsheet_safe(value: str) -> str:
    """Anyone's text (a user name typed at the form, a document's title) as a CSV cell that no
    spreadsheet runs as a formula."""
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value
