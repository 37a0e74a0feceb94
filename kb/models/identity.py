"""Single sign-on: which groups at an identity provider make people readers or curators of a
namespace, who each signed-in person is at their provider; and the access log a security officer
reads: sign-ins, and reads of restricted documents."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from kb.models.access import ApiToken, Namespace


class IdentityProvider(models.TextChoices):
    OIDC = "oidc", "OpenID Connect"
    LDAP = "ldap", "LDAP / Active Directory"


class GroupRule(models.Model):
    """Members of `group` at `provider` read `namespace` (role reader) or also change it (role
    curator). Memberships follow the rules at each sign-in and each re-reading of a session's
    groups; a person in no mapped group gets no membership."""

    class Role(models.TextChoices):
        READER = "reader", "Reader (reads the namespace)"
        CURATOR = "curator", "Curator (reads and changes the namespace)"

    provider = models.CharField(max_length=8, choices=IdentityProvider.choices)
    group = models.CharField(
        max_length=500,
        help_text="The group as the provider names it, compared without regard to case: an entry "
        "of the OpenID Connect groups claim; for LDAP the group's DN "
        "(cn=staff,ou=groups,dc=example,dc=com) or its cn alone (which then matches a group of "
        "that cn anywhere under the group base).",
    )
    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE, related_name="group_rules")
    role = models.CharField(max_length=8, choices=Role.choices, default=Role.READER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["namespace__slug", "provider", "group"]
        constraints = [
            models.UniqueConstraint(
                fields=["provider", "group", "namespace"], name="group_rule_unique"
            )
        ]
        verbose_name = "group rule"

    def __str__(self) -> str:
        return (
            f"{self.get_provider_display()} group {self.group!r}: {self.role} of {self.namespace}"
        )

    def save(self, *args, **kwargs):
        self.group = self.group.strip()
        super().save(*args, **kwargs)


class ExternalIdentity(models.Model):
    """The account a person signed in with at an identity provider, and the groups it last read
    there. An account made by single sign-on has no password of its own."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="kb_identity"
    )
    provider = models.CharField(max_length=8, choices=IdentityProvider.choices)
    subject = models.CharField(
        max_length=500, help_text="OpenID Connect: issuer and subject; LDAP: the entry's DN."
    )
    groups = models.JSONField(default=list, blank=True)
    synced_at = models.DateTimeField(help_text="When the groups were last read from the provider.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["provider", "subject"], name="external_identity_unique")
        ]
        verbose_name = "single sign-on account"

    def __str__(self) -> str:
        return f"{self.user} ({self.get_provider_display()})"


class SignIn(models.Model):
    """One attempt to sign in, kept KB_SIGN_IN_LOG_DAYS days: who, when, through what, whether
    it worked. Never a password or a token."""

    class Method(models.TextChoices):
        LOCAL = "local", "Local account"
        PASSWORD = "password", "Password form (local or LDAP)"
        OIDC = "oidc", "OpenID Connect"
        LDAP = "ldap", "LDAP / Active Directory"

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    method = models.CharField(max_length=8, choices=Method.choices)
    username = models.CharField(
        max_length=255, blank=True, help_text="As typed, or as the provider names the person."
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    succeeded = models.BooleanField()
    reason = models.CharField(max_length=300, blank=True, help_text="Why it failed.")
    address = models.CharField(
        max_length=64, blank=True, help_text="The client's address (an IPv6 client's /64)."
    )

    class Meta:
        ordering = ["-at"]
        verbose_name = "sign-in"

    def __str__(self) -> str:
        return (
            f"{self.username or '?'} {'signed in' if self.succeeded else 'failed'} "
            f"({self.method}) at {self.at}"
        )


class RestrictedRead(models.Model):
    """One read of a restricted document (one with an audience), kept KB_ACCESS_LOG_DAYS days:
    who (an account, a token, or both for a person token), which document of which namespace,
    when, through which surface. Names are copied as they were, so a row outlives what it names."""

    class Surface(models.TextChoices):
        PAGE = "page", "Document page"
        API = "api", "API"
        MCP = "mcp", "MCP"
        ANSWER = "answer", "Answer"

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    surface = models.CharField(max_length=8, choices=Surface.choices)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    username = models.CharField(
        max_length=150, blank=True, help_text="The account's name at the read."
    )
    token = models.ForeignKey(
        ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    token_name = models.CharField(
        max_length=120, blank=True, help_text="The token's name and prefix at the read."
    )
    document_number = models.BigIntegerField(help_text="The document's id.")
    title = models.CharField(max_length=500, blank=True)
    namespace = models.CharField(max_length=128)
    address = models.CharField(
        max_length=64, blank=True, help_text="The client's address (an IPv6 client's /64)."
    )

    class Meta:
        ordering = ["-at"]
        verbose_name = "restricted read"

    def __str__(self) -> str:
        who = self.username or self.token_name or "anonymous"
        return f"{who} read document {self.document_number} ({self.surface}) at {self.at}"
