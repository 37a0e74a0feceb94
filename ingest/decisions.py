"""What the pipeline does with each document, and why: skip, re-embed the stored text, read the
bytes, or write a new version. Pure: the stored state and what was fetched in, a `Decision` out.

A document is rewritten only when its text, the embedding model or the pipeline's version changed;
bytes that did not change are recognised before any extraction (`document_byte_key`), and a
server's "not modified" answer costs nothing unless the stored chunks are out of date.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from enum import StrEnum

from ingest.extract.result import Extracted

# the version of extraction and chunking: part of every document's byte key (new extraction
# rules re-read bytes that did not change) and recorded on each document (new chunking rules
# re-chunk stored text; only passages whose text changed are embedded again); raise it when
# either changes what a document becomes
PIPELINE_VERSION = "8"
NEW, CONTENT_CHANGED, MODEL_CHANGED, PIPELINE_UPGRADED = (
    "new",
    "content changed",
    "model changed",
    "pipeline upgraded",
)
REEMBED_REQUESTED = "re-embed requested"  # a run in re-embed mode
BOILERPLATE_LEARNED = (
    "site boilerplate learned"  # blocks found to repeat across the site after the page was written
)
EMBED_REASONS = (
    NEW,
    CONTENT_CHANGED,
    MODEL_CHANGED,
    PIPELINE_UPGRADED,
    REEMBED_REQUESTED,
    BOILERPLATE_LEARNED,
)


@dataclass(frozen=True)
class StoredDocument:
    """A document as the store holds it: what change detection and re-embedding read."""

    doc_id: int
    content_hash: str
    embedding_model: str
    title: str
    content: str
    media_type: str
    path: str = ""
    etag: str = ""
    last_modified: str = ""
    metadata: dict = field(default_factory=dict)


class Action(StrEnum):
    SKIP = "skip"  # the stored chunks stand
    REEMBED = "re-embed"  # chunk and embed the stored text again (nothing new was fetched)
    EXTRACT = "extract"  # read the bytes, then decide again on the text's hash
    WRITE = "write"  # chunk, embed and write the new text


@dataclass(frozen=True)
class Decision:
    action: Action
    reason: str  # shown on the run's item report


def decide(
    stored: StoredDocument | None,
    model_id: str,
    *,
    not_modified: bool = False,
    byte_key: str = "",
    content_hash: str | None = None,
) -> Decision:
    """Before extraction (`content_hash` None): skip a document the server reports not modified or
    whose bytes are the stored ones, unless its chunks are out of date; else extract. After
    extraction: write when the text, the model or the pipeline changed; else skip."""
    if content_hash is not None:
        reason = change_reason(stored, content_hash, model_id)
        return (
            Decision(Action.WRITE, reason) if reason else Decision(Action.SKIP, "same content hash")
        )
    if not_modified:
        reason = change_reason(stored, stored.content_hash, model_id) if stored else ""
        return Decision(Action.REEMBED, reason) if reason else Decision(Action.SKIP, "not modified")
    if (
        stored is not None
        and stored.metadata.get("byte_key") == byte_key
        and not change_reason(stored, stored.content_hash, model_id)
    ):
        return Decision(Action.SKIP, "same bytes")
    return Decision(Action.EXTRACT, "")


def change_reason(stored: StoredDocument | None, content_hash: str, model_id: str) -> str:
    """Why a document must be (re-)chunked and embedded, or "" when its stored chunks stand."""
    if stored is None:
        return NEW
    if stored.content_hash != content_hash:
        return CONTENT_CHANGED
    if stored.embedding_model != model_id:
        return MODEL_CHANGED
    if stored.metadata.get("pipeline") != PIPELINE_VERSION:
        return PIPELINE_UPGRADED
    return ""


def text_hash(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def document_byte_key(body: bytes) -> str:
    """What an unchanged file or page is recognised by before any extraction."""
    return hashlib.sha256(PIPELINE_VERSION.encode() + b"\0" + body).hexdigest()


def stored_extraction(stored: StoredDocument) -> Extracted:
    """A stored document as an extraction, pages included, for re-embedding without a fetch."""
    pages = tuple((int(offset), int(number)) for offset, number in stored.metadata.get("pages", ()))
    cut = stored.metadata.get("cut")
    return Extracted(
        stored.title,
        stored.content,
        stored.media_type,
        pages=pages,
        page_unit=stored.metadata.get("page_unit", ""),
        site_anchors=bool(stored.metadata.get("site_anchors")),
        cut=(int(cut[0]), int(cut[1])) if cut else None,
    )
