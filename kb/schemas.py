"""Shapes of the document endpoints."""

from datetime import datetime
from typing import ClassVar

from ninja import Field, Schema


class DocumentOut(Schema):
    id: int
    source_id: int
    ref: str
    title: str
    path: str
    media_type: str
    byte_size: int
    created_at: datetime | None
    indexed_at: datetime | None


class ChunkOut(Schema):
    id: int
    position: int
    heading_path: list[str]
    anchor: str
    start_byte: int
    end_byte: int
    token_estimate: int
    text: str


class DocumentDetailOut(DocumentOut):
    chunks: list[ChunkOut]


class DocumentPageOut(Schema):
    count: int
    page: int
    page_size: int
    results: list[DocumentOut]


class DocumentTextOut(Schema):
    id: int
    text: str  # text[:returned_chars] is the document's text from `offset`; a cut ends with a marker
    offset: int = 0  # characters
    total_chars: int
    returned_chars: int
    truncated: bool
    next_offset: int | None = None  # where the next piece starts, when truncated


class NamespaceOut(Schema):
    slug: str
    title: str
    description: str
    is_public: bool
    sources: int
    documents: int
    chunks: int
    last_success_at: datetime | None  # when a source of it last finished an ingest run without errors


class NamespaceListOut(Schema):
    namespaces: list[NamespaceOut]


class SourceSummaryOut(Schema):
    """A source as the MCP `list_sources` tool shows it: the fields of /api/sources an agent
    needs (same names), with its document count and last successful run."""

    MCP_ONLY: ClassVar[frozenset[str]] = frozenset({"documents", "last_success_at"})

    id: int
    namespace: str
    name: str
    kind: str
    enabled: bool
    documents: int
    last_run_status: str
    last_run_at: datetime | None
    last_success_at: datetime | None


class SourceListIn(Schema):
    namespaces: list[str] = Field(default_factory=list, max_length=20,
                                  description="Only these namespaces; empty: every namespace the caller may read")


class SourceListOut(Schema):
    sources: list[SourceSummaryOut]
    truncated: bool  # more sources than the 500 listed
