"""Request and response shapes of the search and context endpoints."""

from datetime import datetime
from typing import Literal

from ninja import Field, Schema

from retrieval.query import MAX_QUERY_CHARS


class SearchIn(Schema):
    query: str = Field(..., min_length=1, max_length=MAX_QUERY_CHARS)
    namespace: str = Field(..., min_length=1, max_length=128)
    limit: int = Field(10, ge=1, le=100)
    source_ids: list[int] = Field(default_factory=list, max_length=100)
    document_ids: list[int] = Field(default_factory=list, max_length=100)
    explain: bool = False
    group: Literal["chunk", "document"] = Field(
        "chunk", description="document: one result per document with its best sections; limit counts documents")


class ChannelOut(Schema):
    rank: int
    raw: float
    score: float


class ExplanationOut(Schema):
    channels: dict[str, ChannelOut]
    base: float
    base_channel: str
    rrf_bonus: float
    recency_boost: float
    priority_boost: float
    mmr_penalty: float
    relevance: float
    bypassed_threshold: bool
    eligible: bool
    vector_z: float | None = None  # the fused base's inputs: z-scores in this query's lists
    lexical_z: float | None = None


class HitOut(Schema):
    rank: int
    chunk_id: int
    document_id: int
    title: str
    heading_path: list[str]
    anchor: str
    text: str
    snippet: str
    start_byte: int
    end_byte: int
    citation_url: str
    source: str
    location: str = ""  # "p. 12", "pp. 12-13", "slide 3": where in a document the passage is
    page_start: int | None = None
    page_end: int | None = None
    scanned: bool = False  # the passage's text was recognised from a scan (OCR)
    date: datetime | None
    score: float
    cosine: float | None
    explanation: ExplanationOut | None = None


class FusionOut(Schema):
    vector: float
    lexical: float
    source: str  # default | fitted | requested
    reason: str
    fitted_at: datetime | None = None
    version: int = 0
    lexical_this_query: float  # after the coverage gate (see docs/searching.md, ranking)


class LexicalOut(Schema):
    """How the lexical channel found its hits (retrieval/lexical.py)."""

    mode: str  # packed (the namespace's packed posting lists) | table (the postings table)
    postings_read: int
    terms: list[str]  # the query's lexemes the namespace holds
    changed_chunks: int  # packed: chunks changed since the lists were built, read from the table
    probed_terms: list[str]  # packed: terms whose postings were only looked up for the candidates (MaxScore)
    candidates: int  # packed, with probed terms: chunks completed by those lookups


class DocumentOut(Schema):
    rank: int
    document_id: int
    title: str
    citation_url: str
    score: float
    score_rule: str
    sections: list[HitOut]


class DocumentRefOut(Schema):
    document_id: int
    title: str
    citation_url: str


class DroppedOut(Schema):
    chunk_id: int
    dropped_by: str
    reason: str
    relevance: float


class SummaryOut(Schema):
    candidates: int
    per_channel: dict[str, int]
    kept: int
    dropped_eligibility: int
    dropped_duplicate: int
    dropped_threshold: int
    beyond_limit: int
    top_relevance: float
    floor: float
    query_caps: list[str] = []  # caps applied to the query's identifiers or name keys
    fusion: FusionOut
    lexical: LexicalOut | None = None  # None when the lexical channel did not run


class SearchOut(Schema):
    query: str
    namespace: str
    grouped: bool = False
    results: list[HitOut]
    documents: list[DocumentOut] | None = None  # with group=document: one entry per document
    suggested: list[DocumentRefOut]
    cited: list[DocumentRefOut]
    related: list[DocumentRefOut]
    weak_titles: list[str]
    summary: SummaryOut
    dropped: list[DroppedOut] | None = None
    timings_ms: dict[str, float]


class ContextIn(Schema):
    query: str = Field(..., min_length=1, max_length=MAX_QUERY_CHARS)
    namespace: str = Field(..., min_length=1, max_length=128)
    limit: int = Field(8, ge=1, le=50)
    max_chars: int = Field(12000, ge=500, le=200000)


class CitationOut(Schema):
    number: int
    url: str
    title: str
    indices: list[int]


class ContextOut(Schema):
    context: str
    delimiter: str
    citations: list[CitationOut]
    truncated: bool


class EvalRunIn(Schema):
    suite: dict
    namespace: str | None = Field(None, max_length=128)
