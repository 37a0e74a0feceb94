"""Shapes of the document endpoints."""

from datetime import datetime

from ninja import Schema


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
    text: str
    total_chars: int
    returned_chars: int
    truncated: bool
