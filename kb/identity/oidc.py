"""Sign-in through an OpenID Connect provider with Authlib: the authorization code flow with PKCE,
the state and nonce kept in the session and checked by Authlib, the ID token's signature, issuer,
audience and expiry checked against the provider's published keys. The groups claim (from the ID
token, else from the userinfo endpoint) is mapped to memberships by the group rules."""

from __future__ import annotations

import functools
import logging

from authlib.common.errors import AuthlibBaseError
from authlib.integrations.base_client import OAuthError
from authlib.integrations.django_client import OAuth
from django.contrib.auth import login
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.forms import AuthenticationForm
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET
from joserfc.errors import JoseError

from kb import ratelimit
from kb.auth import client_address
from kb.conf import kb_settings
from kb.errors import KBError
from kb.http import page_error
from kb.identity import signins
from kb.identity.accounts import AccountRefused, oidc_account
from kb.models import SignIn

logger = logging.getLogger(__name__)

BACKEND = "kb.identity.oidc.OidcBackend"
NEXT_KEY = "kb_oidc_next"
STARTS_PER_MINUTE = (
    30  # per client address: each start writes a session row, so a loop of them is refused
)


class OidcBackend(ModelBackend):
    """Signs no one in by password; named by the OpenID Connect callback when it logs a person in,
    so Django finds their account on later requests (and refuses it once deactivated)."""

    def authenticate(self, request, **credentials):
        return None


def sign_in_offer() -> dict | None:
    """What the sign-in page offers besides its form: {"name": …} when OpenID Connect is on."""
    conf = kb_settings().identity
    return {"name": conf.oidc_name} if conf.oidc_issuer else None


@functools.cache
def _client():
    conf = kb_settings().identity
    return OAuth().register(
        name="kb",
        client_id=conf.oidc_client_id,
        client_secret=conf.oidc_client_secret,
        server_metadata_url=f"{conf.oidc_issuer}/.well-known/openid-configuration",
        client_kwargs={"scope": conf.oidc_scopes, "code_challenge_method": "S256", "timeout": 10},
    )


def _safe_next(request, target: str | None) -> str:
    """Only a path on this site: never another host, another scheme or a scheme-relative //host."""
    if (
        target
        and target.startswith("/")
        and url_has_allowed_host_and_scheme(
            target, allowed_hosts=set(), require_https=request.is_secure()
        )
    ):
        return target
    return "/"


def _callback_url(request) -> str:
    base = kb_settings().public_base_url
    path = reverse("oidc-callback")
    return f"{base}{path}" if base else request.build_absolute_uri(path)


@require_GET
def start(request):
    """Send the browser to the provider, remembering where to come back to."""
    if not kb_settings().identity.oidc_issuer:
        raise Http404("OpenID Connect is not configured.")
    try:
        ratelimit.hit(f"oidc-login:{client_address(request)}", STARTS_PER_MINUTE)
    except KBError as exc:
        return page_error(exc)
    request.session[NEXT_KEY] = _safe_next(request, request.GET.get("next"))
    try:
        return _client().authorize_redirect(request, _callback_url(request))
    except (
        OAuthError,
        OSError,
        ValueError,
    ) as exc:  # the provider's discovery document did not load
        logger.warning("OpenID Connect provider unreachable: %s", exc)
        return _refused(
            request, "", f"the provider could not be reached ({type(exc).__name__})", status=502
        )


@require_GET
def callback(request):
    """The provider's answer: code exchanged, ID token and nonce checked, account made or found,
    memberships synced, session started (a new session key), then back where the person was."""
    if not kb_settings().identity.oidc_issuer:
        raise Http404("OpenID Connect is not configured.")
    try:  # each answer writes a sign-in log row: as throttled as the starts that should precede it
        ratelimit.hit(f"oidc-callback:{client_address(request)}", STARTS_PER_MINUTE)
    except KBError as exc:
        return page_error(exc)
    client = _client()
    try:
        token = client.authorize_access_token(request)
        claims = dict(token.get("userinfo") or {})
        if not claims.get("sub"):  # no ID token, or one without the nonce this session sent
            raise OAuthError(error="no_id_token", description="the provider sent no ID token")
        groups_claim = kb_settings().identity.oidc_groups_claim
        if groups_claim not in claims:
            extra = client.userinfo(token=token)
            if extra.get("sub") != claims["sub"]:  # OpenID Connect Core 5.3.2
                raise OAuthError(
                    error="userinfo_mismatch", description="userinfo names another subject"
                )
            claims = {**extra, **claims}
    except (
        AuthlibBaseError,
        JoseError,
    ) as exc:  # the flow (state, code) or the ID token (signature, claims)
        return _refused(request, "", _error_reason(request, exc))
    except OSError as exc:
        logger.warning("OpenID Connect provider unreachable: %s", exc)
        return _refused(
            request, "", f"the provider could not be reached ({type(exc).__name__})", status=502
        )
    username = str(claims.get("preferred_username") or claims.get("email") or claims["sub"])
    groups = claims.get(groups_claim) or []
    if isinstance(groups, str):
        groups = [groups]
    try:
        user = oidc_account(
            f"{claims.get('iss', kb_settings().identity.oidc_issuer)} {claims['sub']}",
            claims,
            [str(group) for group in groups if isinstance(group, str | int)],
        )
    except AccountRefused as exc:
        return _refused(request, username, str(exc), status=403)
    target = _safe_next(request, request.session.pop(NEXT_KEY, None))
    login(
        request, user, backend=BACKEND
    )  # records the sign-in and marks the session (kb.identity.signins)
    return HttpResponseRedirect(target)


def _error_reason(request, exc: Exception) -> str:
    """What the sign-in log keeps of a failed callback: the OAuth error code (letters, digits and
    underscores, RFC 6749 5.2; else the exception's class) and, for a check failed here, the
    library's description. An error the URL itself carries (`?error=…&error_description=…`) keeps
    its code alone: anyone can write that description."""
    error = str(getattr(exc, "error", "") or "")
    if not (error and all(c.isascii() and (c.isalnum() or c == "_") for c in error)):
        error = type(exc).__name__
    description = "" if "error" in request.GET else str(getattr(exc, "description", "") or "")
    return f"{error[:64]}: {description[:200]}" if description else error[:64]


def _refused(request, username: str, reason: str, status: int = 400):
    signins.record(
        request, method=SignIn.Method.OIDC, username=username, succeeded=False, reason=reason
    )
    return render(
        request,
        "registration/login.html",
        {
            "form": AuthenticationForm(request),
            "sso": sign_in_offer(),
            "next": "/",
            "sso_error": "Single sign-on did not complete. Try again, or ask your administrator.",
        },
        status=status,
    )
