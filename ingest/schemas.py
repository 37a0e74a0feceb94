"""Shapes of the source and run endpoints."""

from datetime import datetime, timedelta

from ninja import Field, Schema


class SourceIn(Schema):
    namespace: str = Field(..., max_length=128)
    name: str = Field(..., min_length=1, max_length=200)
    kind: str
    location: str = Field("", max_length=2048)
    text: str = Field("", max_length=1_000_000)
    options: dict = Field(default_factory=dict)
    enabled: bool = True
    priority: float = Field(0.0, ge=-1.0, le=1.0)
    refresh_interval: timedelta | None = None


class SourcePatch(Schema):
    name: str | None = Field(None, min_length=1, max_length=200)
    location: str | None = Field(None, max_length=2048)
    text: str | None = Field(None, max_length=1_000_000)
    options: dict | None = None
    enabled: bool | None = None
    priority: float | None = Field(None, ge=-1.0, le=1.0)
    refresh_interval: timedelta | None = None


class SourceOut(Schema):
    id: int
    namespace: str
    name: str
    kind: str
    location: str
    options: dict
    enabled: bool
    priority: float
    last_run_status: str
    last_run_at: datetime | None
    queued_run: int | None = None  # on create and update: the run it queued (null in lists)
    warnings: list[str] = []  # what the save leaves to know (a host name that does not resolve now)


class RunOut(Schema):
    id: int
    source_id: int
    status: str
    mode: str
    percent: int  # the bar: items done of items found; a failed run, the share that did not fail
    items_total: int
    items_done: int
    items_changed: int
    items_unchanged: int
    items_failed: int
    items_removed: int
    chunks_written: int  # the chunks its written pages now hold (the items' counts add up to it)
    error: str
    queued_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    failed_items: list[dict]
    skipped_items: list[dict] = []


class UploadOut(Schema):
    source_id: int
    added: list[str]
    replaced: list[str]
    unchanged: list[str]
    skipped: list[dict]
    archives: list[dict] = []  # each .zip unpacked, and how many of its files were read
    run_id: int | None
