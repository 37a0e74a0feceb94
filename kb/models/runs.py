"""Ingest runs and their per-document report."""

from __future__ import annotations

from django.db import models

from kb.models.content import Source


class IngestRun(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        PARTIAL = "partial"
        FAILED = "failed"

    FINISHED = (Status.SUCCEEDED, Status.PARTIAL, Status.FAILED)  # a run in one of these is over
    COUNTERS = (
        "items_total",
        "items_done",
        "items_changed",
        "items_unchanged",
        "items_failed",  # its report
        "items_removed",
        "chunks_total",
        "chunks_embedded",
        "chunks_written",
    )

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
    chunks_total = models.PositiveIntegerField(
        "chunks to embed",
        default=0,
        help_text="Chunks made so far whose text has no stored vector yet. A page written again "
        "once the site's repeated blocks are learned adds the chunks its new text changed.",
    )
    chunks_embedded = models.PositiveIntegerField(
        "chunks embedded", default=0, help_text="Of those, embedded so far."
    )
    chunks_written = models.PositiveIntegerField(
        "chunks stored",
        default=0,
        help_text="Chunks the pages this run wrote now hold, unchanged text included: what the "
        "items' chunk counts add up to.",
    )
    error = models.TextField(blank=True)
    queued_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Last sign of life of the worker running it (the watchdog reads it).",
    )
    attempts = models.PositiveSmallIntegerField(
        default=0, help_text="Times a worker started this run."
    )
    worker = models.CharField(
        max_length=300,
        blank=True,
        help_text="host:pid of the process running it (the watchdog stops a stuck one).",
    )

    class Meta:
        ordering = ["-queued_at", "-id"]
        indexes = [models.Index(fields=["source", "-queued_at"], name="run_source_recent")]

    def __str__(self) -> str:
        return f"Run #{self.pk} of {self.source.name} ({self.status})"

    @property
    def progress_percent(self) -> int:
        """How far the run got, as its bar draws it: items done of items found, all of them when
        it finished with none to do; a failed run shows the share of its items that did not fail
        (nothing when it failed before listing any), never a full bar."""
        if self.status == self.Status.FAILED:
            succeeded = max(0, self.items_done - self.items_failed)
            return round(100 * succeeded / self.items_total) if self.items_total else 0
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
