"""Sign-in against an LDAP directory or Active Directory through django-auth-ldap: the password
form's user name and password are checked by binding as the person; their groups are read with
the service account (KB_LDAP_BIND_DN) and mapped to memberships by the group rules."""

from __future__ import annotations

import ldap
from django_auth_ldap.backend import LDAPBackend, ldap_error
from django_auth_ldap.config import (
    LDAPSearch,
    NestedActiveDirectoryGroupType,
    NestedGroupOfNamesType,
    NestedGroupOfUniqueNamesType,
    PosixGroupType,
)

from kb.conf import kb_settings
from kb.identity import signins
from kb.identity.accounts import follow_groups
from kb.identity.rules import ASCII_LOWER
from kb.models import ExternalIdentity, IdentityProvider

# KB_LDAP_GROUP_TYPE: how a group names its members, and which entries under the group base are
# groups
GROUP_TYPES = {
    "groupOfNames": (NestedGroupOfNamesType, "(objectClass=groupOfNames)"),
    "groupOfUniqueNames": (NestedGroupOfUniqueNamesType, "(objectClass=groupOfUniqueNames)"),
    "posixGroup": (PosixGroupType, "(objectClass=posixGroup)"),
    "activeDirectory": (NestedActiveDirectoryGroupType, "(objectClass=group)"),
}


def directory_settings() -> dict:
    """django-auth-ldap's settings, from the product's (kb.conf): nothing is read from
    AUTH_LDAP_*."""
    conf = kb_settings().identity
    group_type, group_filter = GROUP_TYPES[conf.ldap_group_type]
    return {
        "SERVER_URI": conf.ldap_url,
        "START_TLS": conf.ldap_start_tls,
        "BIND_DN": conf.ldap_bind_dn,
        "BIND_PASSWORD": conf.ldap_bind_password,
        "USER_SEARCH": LDAPSearch(conf.ldap_user_base, ldap.SCOPE_SUBTREE, conf.ldap_user_filter),
        "GROUP_SEARCH": LDAPSearch(conf.ldap_group_base, ldap.SCOPE_SUBTREE, group_filter),
        "GROUP_TYPE": group_type(),
        "USER_ATTR_MAP": {"first_name": "givenName", "last_name": "sn", "email": "mail"},
        "ALWAYS_UPDATE_USER": True,
        # a directory that does not answer fails the sign-in in seconds, not a web worker's minutes
        "CONNECTION_OPTIONS": {
            ldap.OPT_NETWORK_TIMEOUT: 5,
            ldap.OPT_TIMEOUT: 10,
            ldap.OPT_REFERRALS: 0,
        },
        "CACHE_TIMEOUT": 0,  # groups are read fresh at each sign-in and re-reading
    }


class LdapBackend(LDAPBackend):
    """django-auth-ldap's backend with the product's settings, which never takes over an account
    it did not make (a local `admin` is not the directory's `admin`) and which keeps the person's
    memberships in line with the group rules at each sign-in and re-reading."""

    @property
    def default_settings(self) -> dict:
        return directory_settings()

    def get_or_build_user(self, username, ldap_user):
        user, built = super().get_or_build_user(username, ldap_user)
        if not built:  # found by name, which two entries may share up to case (`alıce`, `alice`)
            identity = ExternalIdentity.objects.filter(user=user).first()
            if identity is None or identity.provider != IdentityProvider.LDAP:
                reason = (
                    f"{username!r} is an account of this knowledge base not made by the directory"
                )
                signins.refuse(ldap_user._request, reason)
                raise ldap_user.AuthenticationFailed(reason)
            if not same_entry(identity.subject, ldap_user.dn):
                reason = (
                    f"{username!r} ({ldap_user.dn}) is not the directory entry its account "
                    "was made from"
                )
                signins.refuse(ldap_user._request, reason)
                raise ldap_user.AuthenticationFailed(reason)
        return user, built

    def authenticate_ldap_user(self, ldap_user, password):
        user = super().authenticate_ldap_user(ldap_user, password)
        if user is not None:
            if not user.is_active:
                signins.refuse(ldap_user._request, "the account is deactivated")
                return None
            self._follow(user, ldap_user)
        return user

    def populate_user(self, username):
        """Read the person's entry and groups again with the service account (no password needed):
        the re-reading of a live session. None: the directory no longer knows them, or cannot be
        read."""
        user = super().populate_user(username)
        if user is None:
            return None
        identity = ExternalIdentity.objects.filter(
            user=user, provider=IdentityProvider.LDAP
        ).first()
        if identity is None or not same_entry(identity.subject, user.ldap_user.dn):
            return None  # another entry holds the name now: the session ends
        self._follow(user, user.ldap_user)
        return user

    @staticmethod
    def _follow(user, ldap_user) -> None:
        # a rule may name a group by DN or by cn; a cn holding "=" could pose as another group's DN
        names = [name for name in ldap_user.group_names if "=" not in name]
        follow_groups(user, IdentityProvider.LDAP, ldap_user.dn, [*ldap_user.group_dns, *names])


def same_entry(stored: str, dn: str) -> bool:
    """Whether two DNs name one directory entry: compared as parsed, ASCII letters without case and
    every other letter as written (`alıce` is not `alice`)."""
    try:
        return ldap.dn.str2dn(stored.translate(ASCII_LOWER)) == ldap.dn.str2dn(
            dn.translate(ASCII_LOWER)
        )
    except ldap.DECODING_ERROR:
        return False


def _directory_error(sender, context, user=None, request=None, exception=None, **kwargs) -> None:
    """The directory could not be asked (down, refused the service account, timed out): the sign-in
    fails as a wrong password would, and the log says why. Never the bind password."""
    signins.refuse(
        request, f"the directory could not be read during {context} ({type(exception).__name__})"
    )


ldap_error.connect(
    _directory_error, sender=LdapBackend, dispatch_uid="kb.identity.ldap.directory_error"
)
