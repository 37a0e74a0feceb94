"""Capability providers: their definitions, revisions, capabilities and knowledge targets."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from pgvector.django import VectorField

from kb.models.access import Namespace
from kb.models.content import Document, Source
from kb.validators import validate_capability_id, validate_provider_id


class Provider(models.Model):
    slug = models.CharField(
        max_length=200,
        unique=True,
        validators=[validate_provider_id],
        help_text="The provider id. One a namespace's member defines names its namespace: "
        "'tenant.acme.billing' "
        "for namespace 'tenant:acme' (capabilities.definitions.namespace_of_id).",
    )
    title = models.CharField(max_length=200, blank=True)
    namespace = models.ForeignKey(
        Namespace, on_delete=models.PROTECT, related_name="providers", null=True, blank=True
    )
    definition = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class ProviderRevision(models.Model):
    provider = models.ForeignKey(Provider, on_delete=models.CASCADE, related_name="revisions")
    revision = models.CharField(max_length=64, help_text="Stable hash of the definition.")
    definition = models.JSONField(default=dict)
    is_current = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["provider_id", "-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["provider", "revision"], name="revision_unique"),
            models.UniqueConstraint(
                fields=["provider"], condition=Q(is_current=True), name="revision_one_current"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.provider_id}@{self.revision[:12]}"


class Capability(models.Model):
    provider = models.ForeignKey(Provider, on_delete=models.CASCADE, related_name="capabilities")
    canonical_id = models.CharField(
        max_length=200, unique=True, validators=[validate_capability_id]
    )
    title = models.CharField(max_length=300)
    summary = models.TextField(blank=True)
    # what the built-in capability retriever indexed, and from which provider revision
    indexed_revision = models.CharField(max_length=64, blank=True)
    indexed_text = models.TextField(blank=True)
    indexed_embedding = VectorField(dimensions=settings.KB_EMBEDDING_DIM, null=True, blank=True)

    class Meta:
        ordering = ["canonical_id"]
        verbose_name_plural = "capabilities"

    def __str__(self) -> str:
        return self.canonical_id


class KnowledgeTarget(models.Model):
    """A document, or a whole source acting as a collection, that a capability draws on."""

    capability = models.ForeignKey(Capability, on_delete=models.CASCADE, related_name="targets")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, null=True, blank=True)
    source = models.ForeignKey(Source, on_delete=models.CASCADE, null=True, blank=True)
    role = models.CharField(max_length=50, default="reference")
    locale = models.CharField(max_length=20, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=(Q(document__isnull=False) & Q(source__isnull=True))
                | (Q(document__isnull=True) & Q(source__isnull=False)),
                name="target_document_xor_source",
            )
        ]

    def __str__(self) -> str:
        return f"{self.capability_id} -> {self.document_id or self.source_id}"
