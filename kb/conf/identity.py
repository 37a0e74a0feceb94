"""The rows of the settings table for single sign-on and the access log (docs/identity.md), and
the checks that need several of them: each provider is on when its first setting is set, and a
half-configured one fails at start-up, not at a person's first sign-in. `kb_settings().identity`
holds them."""

from __future__ import annotations

from dataclasses import dataclass

from kb.errors import ConfigurationError
from kb.settings_table import HTTP_URL, at_least, flag, matches, setting, stripped, url

LDAP_GROUP_TYPES = ("groupOfNames", "groupOfUniqueNames", "posixGroup", "activeDirectory")


@dataclass(frozen=True)
class IdentitySettings:
    oidc_issuer: str = setting(
        "KB_OIDC_ISSUER",
        "",
        "the OpenID Connect provider's issuer URL (its `/.well-known/openid-configuration` is "
        "read); empty: OpenID Connect is off ([identity](identity.md))",
        read=url,
        check=matches(
            HTTP_URL,
            "the provider's http(s) issuer URL (its /.well-known/openid-configuration is read)",
        ),
    )
    oidc_client_id: str = setting(
        "KB_OIDC_CLIENT_ID",
        "",
        "this knowledge base's client at the provider (redirect URI `…/accounts/oidc/callback/`); "
        "needed when `KB_OIDC_ISSUER` is set",
        read=stripped,
    )
    oidc_client_secret: str = setting(
        "KB_OIDC_CLIENT_SECRET",
        "",
        "the client's secret, from the environment only; needed when `KB_OIDC_ISSUER` is set",
        secret=True,
    )
    oidc_scopes: str = setting(
        "KB_OIDC_SCOPES",
        "openid email profile",
        "the scopes asked for; add the one that makes your provider send groups (`groups` for many)",  # noqa: E501
    )
    oidc_groups_claim: str = setting(
        "KB_OIDC_GROUPS_CLAIM",
        "groups",
        "the claim (ID token, else userinfo) whose entries group rules name",
        read=stripped,
    )
    oidc_name: str = setting(
        "KB_OIDC_NAME",
        "single sign-on",
        'the sign-in page\'s button: "Sign in with …"',
        read=stripped,
    )
    ldap_url: str = setting(
        "KB_LDAP_URL",
        "",
        "`ldap://` or `ldaps://` URL of an LDAP directory or Active Directory; empty: LDAP is off "
        "([identity](identity.md))",
        read=stripped,
        check=matches(r"ldaps?://\S+", "an ldap:// or ldaps:// URL"),
    )
    ldap_start_tls: bool = setting(
        "KB_LDAP_START_TLS", False, "StartTLS on an `ldap://` connection", read=flag
    )
    ldap_bind_dn: str = setting(
        "KB_LDAP_BIND_DN",
        "",
        "the service account that finds people and reads their groups (and a live session's "
        "groups again)",
    )
    ldap_bind_password: str = setting(
        "KB_LDAP_BIND_PASSWORD",
        "",
        "the service account's password, from the environment only",
        secret=True,
    )
    ldap_user_base: str = setting(
        "KB_LDAP_USER_BASE",
        "",
        "where people are searched; needed when `KB_LDAP_URL` is set",
        read=stripped,
    )
    ldap_user_filter: str = setting(
        "KB_LDAP_USER_FILTER",
        "(uid=%(user)s)",
        "how the typed user name finds one person (Active Directory: `(sAMAccountName=%(user)s)`)",
        read=stripped,
    )
    ldap_group_base: str = setting(
        "KB_LDAP_GROUP_BASE",
        "",
        "where groups are searched; needed when `KB_LDAP_URL` is set",
        read=stripped,
    )
    ldap_group_type: str = setting(
        "KB_LDAP_GROUP_TYPE",
        "groupOfNames",
        "the groups' kind: `groupOfNames`, `groupOfUniqueNames`, `posixGroup` or "
        "`activeDirectory` (nested groups followed, except posix)",
        read=stripped,
    )
    resync_seconds: int = setting(
        "KB_IDENTITY_RESYNC_SECONDS",
        900,
        "a signed-in single sign-on session's groups are read again once this old: LDAP asks the "
        "directory, OpenID Connect sends the browser back through the provider "
        "([when a change counts](identity.md#when-a-change-counts))",
        check=at_least(1, say_value=False),
    )
    sign_in_log_days: int = setting(
        "KB_SIGN_IN_LOG_DAYS",
        365,
        "days the sign-in log is kept; older rows are deleted as new sign-ins are written",
        check=at_least(1, say_value=False),
    )
    access_log_days: int = setting(
        "KB_ACCESS_LOG_DAYS",
        365,
        "days the log of reads of restricted documents is kept; older rows are deleted as new "
        "reads are written ([the access log](identity.md#the-access-log))",
        check=at_least(1, say_value=False),
    )


def check_identity(conf: IdentitySettings) -> None:
    """Each provider that is on has what it needs."""
    if conf.oidc_issuer:
        for setting_name, value in (
            ("KB_OIDC_CLIENT_ID", conf.oidc_client_id),
            ("KB_OIDC_CLIENT_SECRET", conf.oidc_client_secret),
        ):
            if not value:
                raise ConfigurationError(
                    f"KB_OIDC_ISSUER is set but {setting_name} is empty: register this knowledge "
                    "base as a client at the provider and set both.",
                    details={"setting": setting_name},
                )
        if "openid" not in conf.oidc_scopes.split():
            raise ConfigurationError(
                f"KB_OIDC_SCOPES must include 'openid', got {conf.oidc_scopes!r}.",
                details={"setting": "KB_OIDC_SCOPES"},
            )
    if conf.ldap_url:
        for setting_name, value in (
            ("KB_LDAP_USER_BASE", conf.ldap_user_base),
            ("KB_LDAP_GROUP_BASE", conf.ldap_group_base),
        ):
            if not value:
                raise ConfigurationError(
                    f"KB_LDAP_URL is set but {setting_name} is empty: name the DN under which "
                    "people (or groups) are searched.",
                    details={"setting": setting_name},
                )
        if "%(user)s" not in conf.ldap_user_filter:
            raise ConfigurationError(
                f"KB_LDAP_USER_FILTER must contain %(user)s, got {conf.ldap_user_filter!r}.",
                details={"setting": "KB_LDAP_USER_FILTER"},
            )
        if conf.ldap_group_type not in LDAP_GROUP_TYPES:
            raise ConfigurationError(
                f"KB_LDAP_GROUP_TYPE must be one of {', '.join(LDAP_GROUP_TYPES)}, got "
                f"{conf.ldap_group_type!r}.",
                details={"setting": "KB_LDAP_GROUP_TYPE"},
            )
