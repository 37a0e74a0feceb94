"""A live single sign-on session's groups, read again once KB_IDENTITY_RESYNC_SECONDS have passed
since they were last read: a group left at the provider (or an account removed there) then counts
within that time, not only at the next sign-in. Sessions of local accounts are not touched."""

from __future__ import annotations

import logging
import time
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth import logout
from django.http import HttpResponseRedirect
from django.urls import reverse

from kb.conf import kb_settings
from kb.identity import signins
from kb.identity.accounts import forget_memberships
from kb.models import IdentityProvider

logger = logging.getLogger(__name__)

MACHINE_PATHS = (
    "/api/",
    "/mcp",
    "/healthz",
    "/accounts/",
)  # never answered with a trip to the provider


class IdentityResyncMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        session = getattr(request, "session", None)
        # without a session cookie there is no session to read (and reading one would add Vary:
        # Cookie)
        signed = session is not None and settings.SESSION_COOKIE_NAME in request.COOKIES
        mark = session.get(signins.SESSION_KEY) if signed else None
        if (
            mark
            and time.time() - float(mark.get("synced", 0)) > kb_settings().identity.resync_seconds
        ):
            response = self._read_again(request, mark.get("provider"))
            if response is not None:
                return response
        return self.get_response(request)

    def _read_again(self, request, provider: str | None):
        """LDAP: the directory is asked with the service account. OpenID Connect: the provider is
        asked through a new sign-in (which passes without a prompt while the person's session there
        lives); a page the browser navigates to is sent there and brought back, any other request
        (the API, a form post, a page's own fetch) goes on signed out."""
        user = request.user
        if not user.is_authenticated:
            request.session.pop(signins.SESSION_KEY, None)
            return None
        if provider == IdentityProvider.LDAP and kb_settings().identity.ldap_url:
            from kb.identity.ldap import LdapBackend  # python-ldap is loaded only where LDAP is on

            if LdapBackend().populate_user(user.get_username()) is not None:
                signins.mark_synced(request, provider)
                return None
            logger.info(
                "LDAP no longer gives %s an account (or could not be read): signed out", user
            )
        oidc_on = bool(kb_settings().identity.oidc_issuer)
        if provider in IdentityProvider.values and not (
            provider == IdentityProvider.OIDC and oidc_on
        ):
            forget_memberships(
                user, provider
            )  # no sign-in will sync them soon: none of its rules stays
        logout(request)
        if (
            provider == IdentityProvider.OIDC
            and oidc_on
            and request.method == "GET"
            and not request.path.startswith(MACHINE_PATHS)
            # a page's own fetch (suggestions, feedback) is not sent across sites: only a navigation
            and request.headers.get("Sec-Fetch-Mode", "navigate") == "navigate"
        ):
            return HttpResponseRedirect(
                f"{reverse('oidc-login')}?{urlencode({'next': request.get_full_path()})}"
            )
        return None
