"""What is searched: sources, their files, documents and chunks (their BM25 tables: `postings.py`).

Chunks carry a pgvector embedding (HNSW, cosine) and a stored, GIN-indexed tsvector generated
by PostgreSQL from the document title (weight A) and the chunk text (weight D); `kb_chunk_term`
holds each chunk's lexemes and `NamespaceStats` the counts BM25 needs, kept exact by triggers.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import Group
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Func, Q
from pgvector.django import VectorField

from kb.languages import CONFIGS, DEFAULT_CONFIG
from kb.models.access import Namespace
from kb.models.audiences import Audience
from kb.validators import validate_http_url, validate_source_options
from kb.vocabulary import SOURCE_KINDS, SOURCE_OPTIONS, TEXT_OPTION_MAX_CHARS, URL_KINDS

SEARCH_CONFIG = (
    DEFAULT_CONFIG  # the text search configuration of capability texts (chunks: each its own)
)


class Source(models.Model):
    class Kind(models.TextChoices):
        URL = "url", "Single page"
        SITEMAP = "sitemap", "Sitemap"
        CRAWL = "crawl", "Same-origin crawl"
        LLMS = "llms", "llms.txt"
        FILE = "file", "Uploaded file"
        TEXT = "text", "Inline text"
        FOLDER = "folder", "Folder on the server"
        GIT = "git", "Git repository"

    namespace = models.ForeignKey(Namespace, on_delete=models.PROTECT, related_name="sources")
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    location = models.CharField(
        max_length=2048,
        blank=True,
        help_text="URL for web kinds; a directory for folders; the repository's URL for git; "
        "empty for files and text.",
    )
    text = models.TextField(blank=True, help_text="Content of an inline text source.")
    options = models.JSONField(default=dict, blank=True)
    enabled = models.BooleanField(default=True)
    priority = models.FloatField(
        default=0.0, help_text="Ranking boost between -1 and 1 for this source's chunks."
    )
    refresh_interval = models.DurationField(
        null=True, blank=True, help_text="Re-ingest this often (empty: only on demand)."
    )
    last_run_at = models.DateTimeField(null=True, blank=True)
    last_run_status = models.CharField(max_length=16, blank=True)
    last_run_summary = models.JSONField(default=dict, blank=True)
    indexed_revision = models.CharField(
        max_length=64,
        blank=True,
        help_text="Revision of the source's configuration and inline content that the last "
        "successful ingest indexed; differs from the current one while the index is behind.",
    )
    indexed_commit = models.CharField(
        max_length=64,
        blank=True,
        help_text="Git sources: the commit the last successful ingest indexed; the next run "
        "reads what changed since.",
    )
    audience_groups = models.ManyToManyField(
        Group,
        blank=True,
        related_name="+",
        verbose_name="audience",
        help_text="Only these groups read the source's documents (with the namespace's curators "
        "and superusers); empty: everyone who reads the namespace. A document with groups of its "
        "own is read by those instead.",
    )
    audience = models.ForeignKey(
        Audience,
        null=True,
        blank=True,
        editable=False,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
        help_text="Kept by kb.audiences from audience_groups (NULL: open).",
    )
    held_removals = models.JSONField(
        default=dict,
        blank=True,
        help_text="Removals the last complete run held back because the source shrank by more than "
        "half: {run, refs, stored}; a curator confirms them on the source's page.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["namespace__slug", "name"]
        constraints = [
            models.UniqueConstraint(fields=["namespace", "name"], name="source_unique_name"),
            models.CheckConstraint(
                condition=Q(kind__in=list(SOURCE_KINDS)),
                name="source_kind_valid",
            ),
            models.CheckConstraint(
                condition=Q(priority__gte=-1.0, priority__lte=1.0), name="source_priority_range"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"

    def clean(self) -> None:
        if self.kind in URL_KINDS:
            validate_http_url(self.location)
        elif self.kind == self.Kind.TEXT and not self.text.strip():
            raise ValidationError({"text": "An inline text source needs some text."})
        elif self.kind == self.Kind.FILE and self.location:
            raise ValidationError(
                {"location": "A file source holds uploaded files (SourceFile), not a storage key."}
            )
        elif self.kind == self.Kind.FOLDER and not self.location.startswith("/"):
            raise ValidationError(
                {
                    "location": f"{self.location!r} is not an absolute directory path on the "
                    "server, e.g. '/srv/docs/handbook'."
                }
            )
        elif self.kind == self.Kind.GIT and not self.location.strip():
            raise ValidationError(
                {
                    "location": "A git source needs its repository's URL, e.g. "
                    "'https://github.com/psf/requests.git'."
                }
            )
        validate_source_options(self.kind, self.options or {})
        bad = [
            name
            for name, value in (self.options or {}).items()
            if SOURCE_OPTIONS.get(name, ((), None))[1] is str
            and (not isinstance(value, str) or len(value) > TEXT_OPTION_MAX_CHARS)
        ]
        if bad:
            raise ValidationError(
                {
                    "options": f"option {bad[0]!r} must be text of at most {TEXT_OPTION_MAX_CHARS} "
                    "characters"
                },
                code="invalid_options",
            )


class SourceFile(models.Model):
    """One uploaded file of a file source; its `path` is the document's ref (a zip member's path
    inside the archive, else the file name). Stored under a key only this source knows."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(max_length=1024)
    key = models.CharField(max_length=1024, help_text="Storage key of the bytes.")
    sha256 = models.CharField(max_length=64, blank=True)
    byte_size = models.PositiveBigIntegerField(default=0)
    uploaded_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["source_id", "path"]
        constraints = [
            models.UniqueConstraint(fields=["source", "path"], name="source_file_unique_path")
        ]

    def __str__(self) -> str:
        return self.path


class Document(models.Model):
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="documents")
    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE, related_name="documents")
    ref = models.CharField(max_length=2048, help_text="URL, file key or synthetic id.")
    title = models.CharField(max_length=500, blank=True)
    path = models.CharField(max_length=2048, blank=True)
    name_key = models.CharField(
        max_length=600,
        blank=True,
        help_text="Title and path stem, alphanumerics only, lowercase: for versioned-name search.",
    )
    content = models.TextField(blank=True)
    content_hash = models.CharField(max_length=64, blank=True)
    media_type = models.CharField(max_length=100, blank=True)
    byte_size = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(null=True, blank=True, help_text="The document's own date.")
    indexed_at = models.DateTimeField(null=True, blank=True)
    embedding_model = models.CharField(max_length=200, blank=True)
    etag = models.CharField(max_length=300, blank=True)
    last_modified = models.CharField(max_length=100, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    language = models.CharField(
        max_length=8,
        blank=True,
        help_text="The language detected in the text (ISO 639-1), empty when too short or unsure.",
    )
    audience_groups = models.ManyToManyField(
        Group,
        blank=True,
        related_name="+",
        verbose_name="audience",
        help_text="Only these groups read this document (with the namespace's curators and "
        "superusers), instead of its source's audience; empty: its source's.",
    )
    audience = models.ForeignKey(
        Audience,
        null=True,
        blank=True,
        editable=False,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
        help_text="Who reads it, kept by kb.audiences and the database (NULL: open).",
    )

    @property
    def original_type(self) -> str:
        """The type of what was read (application/pdf for a PDF): `media_type` is the stored
        text's own (markdown for a PDF, a page, a slide deck)."""
        return self.metadata.get("original_type") or self.media_type

    class Meta:
        ordering = ["source_id", "ref"]
        constraints = [
            models.UniqueConstraint(fields=["source", "ref"], name="document_unique_ref"),
        ]
        indexes = [
            models.Index(fields=["namespace", "source"], name="document_ns_source"),
            # the names channel's substring match (name_key LIKE '%qwen38%') through trigrams
            GinIndex(
                fields=["name_key"], opclasses=["gin_trgm_ops"], name="document_name_key_trgm"
            ),
        ]

    def __str__(self) -> str:
        return self.title or self.ref


class Chunk(models.Model):
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE, related_name="+")
    position = models.PositiveIntegerField()
    title = models.CharField(max_length=500, blank=True, help_text="The document's title.")
    text = models.TextField()
    heading_path = ArrayField(models.CharField(max_length=500), default=list, blank=True)
    anchor = models.CharField(max_length=300, blank=True)
    start_byte = models.PositiveIntegerField()
    end_byte = models.PositiveIntegerField()
    token_estimate = models.PositiveIntegerField(default=0)
    is_summary = models.BooleanField(default=False)
    is_partial_code = models.BooleanField(
        default=False, help_text="Part of one code fence too large for a single chunk."
    )
    page_start = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="First page, slide or sheet the chunk comes from (documents).",
    )
    page_end = models.PositiveIntegerField(
        null=True, blank=True, help_text="Last page, slide or sheet."
    )
    embedding = VectorField(dimensions=settings.KB_EMBEDDING_DIM, null=True, blank=True)
    embedding_model = models.CharField(max_length=200, blank=True)
    embed_reason = models.CharField(max_length=32, blank=True)
    embedding_runtime = models.CharField(
        max_length=16,
        blank=True,
        help_text="What computed the vector with the local model: torch, onnx or onnx-int8 (empty: "
        "not recorded, for another embedder or a chunk embedded before it was kept).",
    )
    audience = models.ForeignKey(
        Audience,
        null=True,
        blank=True,
        editable=False,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
        help_text="Its document's audience, set by the database (NULL: open).",
    )
    text_key = models.CharField(max_length=32, blank=True, help_text="Duplicate key of the text.")
    body_key = models.CharField(
        max_length=32, blank=True, help_text="Duplicate key of the text without its breadcrumb."
    )
    search_config = models.CharField(
        max_length=16,
        default=DEFAULT_CONFIG,
        choices=[(c, c) for c in CONFIGS],
        help_text="The text search configuration the passage is lexed with (kb/languages.py).",
    )
    # kb_search_vector(config, title, text): the title lexed at weight A, the text at D (migration
    # 0028)
    search_vector = models.GeneratedField(
        expression=Func(
            "search_config",
            "title",
            "text",
            function="kb_search_vector",
            output_field=SearchVectorField(),
        ),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    class Meta:
        ordering = ["document_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["document", "position"], name="chunk_unique_position"),
            models.CheckConstraint(
                condition=Q(end_byte__gte=models.F("start_byte")), name="chunk_byte_range"
            ),
        ]
        indexes = [
            GinIndex(fields=["search_vector"], name="chunk_search_vector_gin"),
            # no table-wide vector index: each large namespace gets its own
            # (retrieval/vector_index.py)
        ]

    def __str__(self) -> str:
        return f"{self.document_id}#{self.position}"
