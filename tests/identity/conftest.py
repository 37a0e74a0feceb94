"""Fixtures of the single sign-on tests: real identity servers (tests/identity/servers.py) and the
product's settings pointed at them, as an operator's environment would."""

from __future__ import annotations

import pytest

from kb.conf import kb_settings
from tests.identity.servers import OidcProvider, Slapd


def _configure(settings, values: dict[str, str]) -> None:
    """The product's settings as config/settings.py reads them from this environment."""
    from kb.identity import oidc

    for name, value in values.items():
        setattr(settings, name, value)
    settings.AUTHENTICATION_BACKENDS = [
        "django.contrib.auth.backends.ModelBackend",
        *(["kb.identity.ldap.LdapBackend"] if getattr(settings, "KB_LDAP_URL", "") else []),
        *(["kb.identity.oidc.OidcBackend"] if getattr(settings, "KB_OIDC_ISSUER", "") else []),
    ]
    kb_settings.cache_clear()
    oidc._client.cache_clear()


@pytest.fixture
def identity_settings(settings):
    """Call with the environment's values; undone after the test."""
    from kb.identity import oidc

    yield lambda values: _configure(settings, values)
    kb_settings.cache_clear()
    oidc._client.cache_clear()


@pytest.fixture
def slapd(tmp_path):
    server = Slapd(tmp_path / "slapd").start()
    yield server
    server.stop()


@pytest.fixture
def directory(slapd, identity_settings):
    """slapd, and the product signing in against it."""
    identity_settings(slapd.settings())
    return slapd


@pytest.fixture
def oidc_provider(live_server, tmp_path, identity_settings):
    """The test provider, with the live server registered as its client, and the product using
    it."""
    provider = OidcProvider(tmp_path / "provider", live_server.url).start()
    identity_settings(provider.settings())
    yield provider
    provider.stop()
