"""Request and response shapes of the search, context, document and namespace endpoints (the MCP
tools' own are retrieval/mcp_schemas.py)."""

from datetime import datetime
from typing import ClassVar, Literal

from ninja import Field, Schema

from retrieval.query import MAX_QUERY_CHARS

# the search service's one gate (`retrieval.query.validate_query`) measures it, so an empty or long
# query
# gets the same code on every surface (SEARCH_EMPTY_QUERY, SEARCH_QUERY_TOO_LONG)
QUERY = Field(
    ...,
    description=f"What to search for: at most {MAX_QUERY_CHARS} characters once normalised (NFKC)",
)


class SearchIn(Schema):
    query: str = QUERY
    namespace: str = Field(..., min_length=1, max_length=128)
    limit: int = Field(10, ge=1, le=100)
    source_ids: list[int] = Field(default_factory=list, max_length=100)
    document_ids: list[int] = Field(default_factory=list, max_length=100)
    explain: bool = False
    group: Literal["chunk", "document"] = Field(
        "chunk",
        description="document: one result per document with its best sections; limit counts "
        "documents",
    )


class SpellingIn(Schema):
    query: str = QUERY
    namespace: str = Field(..., min_length=1, max_length=128)
    source_ids: list[int] = Field(default_factory=list, max_length=100)
    document_ids: list[int] = Field(default_factory=list, max_length=100)


class SpellingOut(Schema):
    """ "Did you mean": the query respelt from the namespace's own words, or null."""

    correction: str | None  # offered only when its words find passages within the same sources


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
    embedded_by: str = ""  # the passage's model and runtime: "st:all-MiniLM-L6-v2 (onnx-int8)"


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
    # default | agreement | fitted | requested | language | model (meaning left out: which reason)
    source: str
    reason: str
    fitted_at: datetime | None = None
    version: int = 0
    lexical_this_query: float  # after the coverage gate (see docs/searching.md, ranking)


class RestoredWordOut(Schema):
    """A word typed without accents whose stem no passage holds, read as an accented spelling's stem
    (docs/languages.md)."""

    typed: str  # distribucion
    typed_lexeme: str  # distribucion
    spelling: str  # distribución: the spelling lexed, which may be no word (extremités)
    lexeme: str  # distribu
    written: str  # distribución: the word as the namespace's text writes it


class SplitWordOut(Schema):
    """A compound whose stem no passage holds, read as its two parts, which passages hold (docs/languages.md)."""  # noqa: E501

    typed: str  # uhrzeit
    typed_lexeme: str  # uhrzeit
    parts: list[str]  # [uhr, zeit]: the word cut in two, a linking letter left out
    lexemes: list[str]  # [uhr, zeit]


class LexicalOut(Schema):
    """How the lexical channel found its hits (retrieval/lexical.py)."""

    mode: str  # packed (the namespace's packed posting lists) | table (the postings table)
    postings_read: int
    terms: list[str]  # the query's lexemes the namespace holds
    changed_chunks: int  # packed: chunks changed since the lists were built, read from the table
    probed_terms: list[
        str
    ]  # packed: terms whose postings were only looked up for the candidates (MaxScore)
    candidates: int  # packed, with probed terms: chunks completed by those lookups
    configurations: list[
        str
    ]  # the text search configurations the query was lexed with (docs/languages.md)
    accents_restored: list[
        RestoredWordOut
    ]  # words typed without accents, read as the text spells them
    compounds_split: list[SplitWordOut]  # compounds no passage holds, read as their parts


class DocumentGroupOut(Schema):
    """One document of a grouped search (group=document) with its best sections."""

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


class ChannelNoteOut(Schema):
    """A channel that could not help this query (retrieval/scoring.py, `channel_notes`)."""

    channel: str
    # off: it did not run; partial: it ran over part of the namespace; empty: it ran and found
    # nothing
    state: str
    reason: str  # in plain words, as the search page shows it


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
    channel_notes: list[ChannelNoteOut] = []


class SearchOut(Schema):
    query: str
    namespace: str
    grouped: bool = False
    results: list[HitOut]
    documents: list[DocumentGroupOut] | None = None  # with group=document: one entry per document
    suggested: list[DocumentRefOut]
    cited: list[DocumentRefOut]
    related: list[DocumentRefOut]
    weak_titles: list[str]
    summary: SummaryOut
    dropped: list[DroppedOut] | None = None
    timings_ms: dict[str, float]
    query_id: int | None = None  # the logged search: what POST /api/feedback names


class FeedbackIn(Schema):
    query_id: int = Field(..., ge=1)
    chunk_id: int = Field(..., ge=1)
    helpful: bool


class FeedbackOut(Schema):
    query_id: int
    chunk_id: int
    document_id: int
    helpful: bool


class ContextIn(Schema):
    query: str = QUERY
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


# --- documents, namespaces and sources: what a caller may read ----------------------------------


class DocumentOut(Schema):
    id: int
    source_id: int
    ref: str
    title: str
    path: str
    media_type: str  # the stored text's type (text/markdown for a PDF or a web page)
    original_type: str  # what was read: application/pdf, text/html, ...
    byte_size: int
    language: (
        str  # detected in its text (ISO 639-1); "" when too short or unsure (docs/languages.md)
    )
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
    text: (
        str  # text[:returned_chars] is the document's text from `offset`; a cut ends with a marker
    )
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
    # why the caller reads it: a membership, public (read by everyone; no membership), its token, a
    # superuser
    access: Literal["member", "public", "token", "superuser"]
    sources: int
    documents: int
    chunks: int
    last_success_at: (
        datetime | None
    )  # when a source of it last finished an ingest run without errors
    # the setting: "auto" (each document's detected language) or a text search configuration
    language: str
    document_languages: dict[
        str, int
    ]  # documents per detected language (ISO 639-1; "und": not detected)


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
    namespaces: list[str] = Field(
        default_factory=list,
        max_length=20,
        description="Only these namespaces; empty: every namespace the caller may read",
    )


class SourceListOut(Schema):
    sources: list[SourceSummaryOut]
    truncated: bool  # more sources than the 500 listed
