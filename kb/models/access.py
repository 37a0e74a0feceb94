"""Who may read and change what: namespaces, their members, API tokens, rate-limit counters."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from kb.languages import AUTO, LANGUAGE_CHOICES
from kb.validators import validate_namespace_slug


class Namespace(models.Model):
    slug = models.CharField(max_length=128, unique=True, validators=[validate_namespace_slug])
    title = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    is_public = models.BooleanField(
        default=False, help_text="Anonymous users may search a public namespace."
    )
    language = models.CharField(
        max_length=16,
        choices=LANGUAGE_CHOICES,
        default=AUTO,
        help_text="How words are found: each document in its own detected language, or one "
        "language for all.",
    )
    document_languages = models.JSONField(
        default=dict,
        blank=True,
        editable=False,
        help_text="How many of its documents are in each detected language (ISO 639-1; '' not "
        "named).",
    )
    passage_configs = models.JSONField(
        default=dict,
        blank=True,
        editable=False,
        help_text="How many of its passages each text search configuration lexes: what its "
        "queries are lexed with.",
    )
    passage_models = models.JSONField(
        default=dict,
        blank=True,
        editable=False,
        help_text="How many of its passages each embedding model embedded: a query's vector is "
        "compared only with those of the model that embeds it.",
    )
    relexing = models.BooleanField(
        default=False,
        editable=False,
        help_text="Set from a change of the language setting until its passages are all lexed "
        "again: queries are lexed in every configuration its passages hold meanwhile.",
    )
    answers = models.BooleanField(
        default=True,
        help_text="Readers may ask for grounded answers here, when the deployment has a model "
        "(KB_ANSWER_URL); off: search only.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    # kept by background work (ingest counts, the relex), never written back from an edited copy
    COUNTED_FIELDS = ("document_languages", "passage_configs", "passage_models", "relexing")

    def save(self, *args, **kwargs):
        """An edit writes what a curator sets, never the counts and flag that background work
        keeps: a copy read before a recount or the end of a relex would write them back stale
        (a `relexing` stuck on, queries never placed again). A new language setting sets
        `relexing`; only the relex clears it."""
        validate_namespace_slug(self.slug)
        if not self._state.adding and kwargs.get("update_fields") is None:
            stored = Namespace.objects.filter(pk=self.pk).values_list("language", flat=True).first()
            if stored is not None:
                fields = [
                    f.name
                    for f in self._meta.concrete_fields
                    if not f.primary_key and f.name not in self.COUNTED_FIELDS
                ]
                if stored != self.language:
                    self.relexing = True
                    fields.append("relexing")
                kwargs["update_fields"] = fields
        super().save(*args, **kwargs)


class NamespaceMembership(models.Model):
    """A staff user who is not a superuser reads (and, with `can_write`, changes) only the
    namespaces they are a member of, in the API, the search page and the admin."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="kb_memberships"
    )
    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE, related_name="memberships")
    can_write = models.BooleanField(default=False)
    granted_by = models.CharField(
        max_length=8,
        blank=True,
        editable=False,
        help_text="The identity provider whose group rules made it (kb.identity keeps it in line "
        "with them); empty: made by hand, and left alone by single sign-on.",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "namespace"], name="membership_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.namespace}{' (write)' if self.can_write else ''}"


class ApiToken(models.Model):
    """An API credential: shown once at creation, stored only as a SHA-256 hash, revocable, with
    an optional expiry and its last use recorded. A namespace token reads (with the write scope,
    also changes) exactly its namespaces; a person token (`user` set) acts for its owner with the
    owner's rights as they are at each request, never more, and read-only unless its scope is
    write."""

    class Scope(models.TextChoices):
        READ = "read", "Read (search, documents)"
        WRITE = "write", "Read and write (sources, ingest)"

    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=12, db_index=True, editable=False)
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    scope = models.CharField(max_length=8, choices=Scope.choices, default=Scope.READ)
    namespaces = models.ManyToManyField(
        Namespace,
        related_name="tokens",
        blank=True,
        help_text="A namespace token's namespaces; a person token has none (it reads what its "
        "owner reads).",
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="kb_tokens",
        help_text="A person token acts for this account: its current memberships (and public "
        "namespaces), refused once the account is deactivated. Empty: a namespace token.",
    )
    rate_limit_per_minute = models.PositiveIntegerField(default=120)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="From then on the token answers as an unknown one does; empty: it does not "
        "expire.",
    )

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API token"
        verbose_name_plural = "API tokens"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        """Neither revoked nor expired (whether its owner may still use it is `kb.auth`'s)."""
        return self.revoked_at is None and (
            self.expires_at is None or self.expires_at > timezone.now()
        )


class RateCounter(models.Model):
    """Requests of one caller (token, staff user or client address) in one minute window;
    incremented atomically by `kb/ratelimit.py` with INSERT ... ON CONFLICT ... RETURNING."""

    key = models.CharField(max_length=200)
    window = models.BigIntegerField(help_text="Minutes since the epoch.")
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["key", "window"], name="rate_counter_key_window")
        ]
