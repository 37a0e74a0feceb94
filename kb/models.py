"""The knowledge base's data: namespaces, sources, documents, chunks, providers, runs, logs.

Chunks carry a pgvector embedding (HNSW, cosine) and a stored, GIN-indexed tsvector generated
by PostgreSQL from the document title (weight A) and the chunk text (weight D).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from pgvector.django import VectorField

from kb.validators import validate_capability_id, validate_http_url, validate_namespace_slug, validate_source_options
from kb.vocabulary import SOURCE_KINDS, URL_KINDS

SEARCH_CONFIG = "english"  # the text search configuration of every tsvector and query: stated here only


class Namespace(models.Model):
    slug = models.CharField(max_length=128, unique=True, validators=[validate_namespace_slug])
    title = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    is_public = models.BooleanField(
        default=False, help_text="Anonymous users may search a public namespace."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    def save(self, *args, **kwargs):
        validate_namespace_slug(self.slug)
        super().save(*args, **kwargs)


class NamespaceMembership(models.Model):
    """A staff user who is not a superuser reads (and, with `can_write`, changes) only the
    namespaces they are a member of, in the API, the search page and the admin."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="kb_memberships")
    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE, related_name="memberships")
    can_write = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "namespace"], name="membership_unique")]

    def __str__(self) -> str:
        return f"{self.user} in {self.namespace}{' (write)' if self.can_write else ''}"


class Source(models.Model):
    class Kind(models.TextChoices):
        URL = "url", "Single page"
        SITEMAP = "sitemap", "Sitemap"
        CRAWL = "crawl", "Same-origin crawl"
        LLMS = "llms", "llms.txt"
        FILE = "file", "Uploaded file"
        TEXT = "text", "Inline text"

    namespace = models.ForeignKey(Namespace, on_delete=models.PROTECT, related_name="sources")
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    location = models.CharField(
        max_length=2048, blank=True, help_text="URL for web kinds; empty for files and text."
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
        max_length=64, blank=True,
        help_text="Revision of the source's configuration and inline content that the last "
                  "successful ingest indexed; differs from the current one while the index is behind.",
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
            raise ValidationError({"location": "A file source holds uploaded files (SourceFile), not a storage key."})
        validate_source_options(self.kind, self.options or {})


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
        constraints = [models.UniqueConstraint(fields=["source", "path"], name="source_file_unique_path")]

    def __str__(self) -> str:
        return self.path


class Document(models.Model):
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="documents")
    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE, related_name="documents")
    ref = models.CharField(max_length=2048, help_text="URL, file key or synthetic id.")
    title = models.CharField(max_length=500, blank=True)
    path = models.CharField(max_length=2048, blank=True)
    name_key = models.CharField(
        max_length=600, blank=True,
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

    class Meta:
        ordering = ["source_id", "ref"]
        constraints = [
            models.UniqueConstraint(fields=["source", "ref"], name="document_unique_ref"),
        ]
        indexes = [
            models.Index(fields=["namespace", "source"], name="document_ns_source"),
            # the names channel's substring match (name_key LIKE '%qwen38%') through trigrams
            GinIndex(fields=["name_key"], opclasses=["gin_trgm_ops"], name="document_name_key_trgm"),
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
        null=True, blank=True, help_text="First page, slide or sheet the chunk comes from (documents)."
    )
    page_end = models.PositiveIntegerField(null=True, blank=True, help_text="Last page, slide or sheet.")
    embedding = VectorField(dimensions=settings.KB_EMBEDDING_DIM, null=True, blank=True)
    embedding_model = models.CharField(max_length=200, blank=True)
    embed_reason = models.CharField(max_length=32, blank=True)
    text_key = models.CharField(max_length=32, blank=True, help_text="Duplicate key of the text.")
    body_key = models.CharField(max_length=32, blank=True,
                                help_text="Duplicate key of the text without its breadcrumb.")
    search_vector = models.GeneratedField(
        expression=SearchVector("title", weight="A", config=SEARCH_CONFIG)
        + SearchVector("text", weight="D", config=SEARCH_CONFIG),
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
            # no table-wide vector index: each large namespace gets its own (kb/vector_index.py)
        ]

    def __str__(self) -> str:
        return f"{self.document_id}#{self.position}"


class ChunkTerm(models.Model):
    """One BM25 posting: a lexeme of a chunk with its term frequency and the chunk's length.
    Written only by the database trigger on kb_chunk (migration 0003), never by Python."""

    pk = models.CompositePrimaryKey("namespace", "lexeme", "chunk")
    namespace = models.ForeignKey(Namespace, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+")
    lexeme = models.TextField()
    chunk = models.ForeignKey(Chunk, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+")
    tf = models.FloatField()
    doc_len = models.FloatField()

    class Meta:
        db_table = "kb_chunk_term"
        managed = True


class NamespaceStats(models.Model):
    """Chunk count and total length per namespace, for BM25; maintained by the same trigger,
    which also stamps each change with a fresh `generation` (the key of the search's cache of
    document frequencies)."""

    namespace = models.OneToOneField(
        Namespace, primary_key=True, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )
    chunk_count = models.BigIntegerField(default=0)
    total_len = models.FloatField(default=0)
    generation = models.BigIntegerField(default=0, editable=False)

    class Meta:
        db_table = "kb_namespace_stats"
        verbose_name_plural = "namespace stats"


class Provider(models.Model):
    slug = models.SlugField(max_length=100, unique=True)
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


class IngestRun(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        PARTIAL = "partial"
        FAILED = "failed"

    FINISHED = (Status.SUCCEEDED, Status.PARTIAL, Status.FAILED)  # a run in one of these is over
    COUNTERS = ("items_total", "items_done", "items_changed", "items_unchanged", "items_failed",  # its report
                "items_removed", "chunks_written", "chunks_embedded")

    class Mode(models.TextChoices):
        INGEST = "ingest"
        REEMBED = "reembed", "Re-embed all"
        RETRY = "retry", "Retry failed items"

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="runs")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    mode = models.CharField(max_length=16, choices=Mode.choices, default=Mode.INGEST)
    retry_of = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True)
    task_id = models.CharField(max_length=64, blank=True)
    items_total = models.PositiveIntegerField(default=0)
    items_done = models.PositiveIntegerField(default=0)
    items_changed = models.PositiveIntegerField(default=0)
    items_unchanged = models.PositiveIntegerField(default=0)
    items_failed = models.PositiveIntegerField(default=0)
    items_removed = models.PositiveIntegerField(default=0)
    chunks_written = models.PositiveIntegerField(default=0)
    chunks_embedded = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    queued_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="Last sign of life of the worker running it (the watchdog reads it)."
    )
    attempts = models.PositiveSmallIntegerField(default=0, help_text="Times a worker started this run.")

    class Meta:
        ordering = ["-queued_at", "-id"]
        indexes = [models.Index(fields=["source", "-queued_at"], name="run_source_recent")]

    def __str__(self) -> str:
        return f"run {self.pk} of {self.source_id} ({self.status})"

    @property
    def progress_percent(self) -> int:
        if not self.items_total:
            return 100 if self.status in self.FINISHED else 0
        return min(100, round(100 * self.items_done / self.items_total))


class IngestItem(models.Model):
    """One document's outcome in a run: the per-URL report."""

    class Status(models.TextChoices):
        CHANGED = "changed"
        UNCHANGED = "unchanged"
        FAILED = "failed"
        REMOVED = "removed"
        SKIPPED = "skipped"  # left out by the source's scope: include/exclude, canonical duplicate

    run = models.ForeignKey(IngestRun, on_delete=models.CASCADE, related_name="items")
    ref = models.CharField(max_length=2048)
    status = models.CharField(max_length=16, choices=Status.choices)
    reason = models.CharField(max_length=200, blank=True)
    error_code = models.CharField(max_length=64, blank=True)
    error_message = models.TextField(blank=True)
    byte_size = models.PositiveIntegerField(default=0)
    chunks = models.PositiveIntegerField(default=0)
    duration_ms = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["run_id", "id"]
        indexes = [models.Index(fields=["run", "status"], name="item_run_status")]

    def __str__(self) -> str:
        return f"{self.ref} ({self.status})"


class QueryLog(models.Model):
    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE, related_name="queries")
    query = models.TextField()
    result_ids = ArrayField(models.BigIntegerField(), default=list, blank=True)
    timings = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["namespace", "-created_at"], name="query_ns_recent")]

    def __str__(self) -> str:
        return self.query[:80]


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

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class EvalSuite(models.Model):
    """A retrieval regression suite (the JSON format of retrieval/evals.py), run on demand."""

    name = models.CharField(max_length=200, unique=True)
    namespace = models.CharField(max_length=128, blank=True, help_text="Overrides the file's namespace.")
    definition = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class EvalRun(models.Model):
    suite = models.ForeignKey(EvalSuite, on_delete=models.CASCADE, related_name="runs")
    passed = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    duration_ms = models.FloatField(default=0)
    results = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.suite} run {self.pk}: {self.passed}/{self.total}"

    def regressions(self) -> list[str]:
        """Cases that passed in the suite's previous run and fail in this one."""
        previous = EvalRun.objects.filter(suite_id=self.suite_id, pk__lt=self.pk).order_by("-pk").first()
        if previous is None:
            return []
        passed_before = {c["id"] for c in previous.results.get("cases", []) if c["passed"]}
        return [c["id"] for c in self.results.get("cases", []) if not c["passed"] and c["id"] in passed_before]


class FusionCalibration(models.Model):
    """The lexical weight fitted for one namespace to judged queries (retrieval/fusion.py); a
    namespace without one searches with the default weights. Each refit bumps the version."""

    namespace = models.OneToOneField(Namespace, on_delete=models.CASCADE, related_name="fusion")
    lexical_weight = models.FloatField()
    fitted_on = models.CharField(max_length=200, help_text="What judged the fit: a benchmark or eval suite")
    queries = models.PositiveIntegerField()
    cross_validated_ndcg = models.FloatField()
    default_ndcg = models.FloatField()
    version = models.PositiveIntegerField(default=1)
    fitted_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.namespace}: lexical weight {self.lexical_weight} (v{self.version})"


class RateCounter(models.Model):
    """Requests of one caller (token, staff user or client address) in one minute window;
    incremented atomically by `kb/ratelimit.py` with INSERT ... ON CONFLICT ... RETURNING."""

    key = models.CharField(max_length=200)
    window = models.BigIntegerField(help_text="Minutes since the epoch.")
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["key", "window"], name="rate_counter_key_window")]
