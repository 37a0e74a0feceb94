"""Who may read and change what: namespaces, their members, API tokens, rate-limit counters."""

from __future__ import annotations

from django.conf import settings
from django.db import models

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
        help_text="How words are found: each document in its own detected language, or one language for all.",
    )
    document_languages = models.JSONField(
        default=dict,
        blank=True,
        editable=False,
        help_text="How many of its documents are in each detected language (ISO 639-1; '' not named).",
    )
    passage_configs = models.JSONField(
        default=dict,
        blank=True,
        editable=False,
        help_text="How many of its passages each text search configuration lexes: what its queries are lexed with.",
    )
    passage_models = models.JSONField(
        default=dict,
        blank=True,
        editable=False,
        help_text="How many of its passages each embedding model embedded: a query's vector is compared only with "
        "those of the model that embeds it.",
    )
    relexing = models.BooleanField(
        default=False,
        editable=False,
        help_text="Set from a change of the language setting until its passages are all lexed again: queries "
        "are lexed in every configuration its passages hold meanwhile.",
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
        help_text="The identity provider whose group rules made it (kb.identity keeps it in line with them); "
        "empty: made by hand, and left alone by single sign-on.",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "namespace"], name="membership_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.namespace}{' (write)' if self.can_write else ''}"


class ApiToken(models.Model):
    """An API credential: shown once at creation, stored only as a SHA-256 hash, scoped to
    namespaces and to read or write, revocable, with its last use recorded."""

    class Scope(models.TextChoices):
        READ = "read", "Read (search, documents)"
        WRITE = "write", "Read and write (sources, ingest)"

    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=12, db_index=True, editable=False)
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    scope = models.CharField(max_length=8, choices=Scope.choices, default=Scope.READ)
    namespaces = models.ManyToManyField(Namespace, related_name="tokens")
    rate_limit_per_minute = models.PositiveIntegerField(default=120)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API token"
        verbose_name_plural = "API tokens"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


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
