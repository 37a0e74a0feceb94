"""Request and response shapes of the MCP tools (retrieval/mcp.py): each field an API shape
(retrieval/schemas.py) also has keeps its name there (tests/mcp/test_parity.py)."""

from typing import ClassVar

from ninja import Field, Schema
from pydantic import ConfigDict

from retrieval.schemas import QUERY, ExplanationOut

MAX_SEARCH_NAMESPACES = 10


class AgentSearchIn(Schema):
    MCP_ONLY: ClassVar[frozenset[str]] = frozenset({"namespaces"})

    query: str = QUERY
    namespaces: list[str] = Field(
        default_factory=list,
        max_length=MAX_SEARCH_NAMESPACES,
        description="Namespaces to search; empty: every namespace the caller may read (at most 10)",
    )
    source_ids: list[int] = Field(
        default_factory=list, max_length=100, description="Only these sources"
    )
    limit: int = Field(
        5, ge=1, le=20, description="Documents to return, each with its best sections"
    )
    explain: bool = Field(
        False, description="Add each section's score explanation (larger answers)"
    )


class AgentContextIn(Schema):
    """The MCP `context` tool's input: `namespaces` as `search` takes it. An unknown argument is
    refused, so a client still sending the old `namespace` is told, not searched everywhere."""

    model_config = ConfigDict(extra="forbid")
    MCP_ONLY: ClassVar[frozenset[str]] = frozenset({"namespaces"})

    query: str = QUERY
    namespaces: list[str] = Field(
        default_factory=list,
        max_length=MAX_SEARCH_NAMESPACES,
        description="Namespaces to search; empty: every namespace the caller may read (at most 10)",
    )
    limit: int = Field(
        8, ge=1, le=50, description="Passages in the block, best first, namespace by namespace"
    )
    max_chars: int = Field(12000, ge=500, le=200000)


class PassageOut(Schema):
    """One section of a result: `id` is what `fetch` takes to read it whole."""

    MCP_ONLY: ClassVar[frozenset[str]] = frozenset({"id"})

    id: str  # "c<chunk_id>"
    chunk_id: int
    heading_path: list[str]  # the breadcrumb
    anchor: str
    snippet: str  # HTML-escaped, matches in <mark>, as /api/search
    citation_url: str  # absolute, on KB_PUBLIC_BASE_URL
    location: str = ""  # "p. 12", "slide 3": where in a document the passage is
    page_start: int | None = None
    page_end: int | None = None
    start_byte: int
    end_byte: int
    score: float
    explanation: ExplanationOut | None = None


class AgentDocumentOut(Schema):
    MCP_ONLY: ClassVar[frozenset[str]] = frozenset({"id", "namespace"})

    id: str  # "d<document_id>": `fetch` reads the whole document (or, with an anchor, one section)
    rank: int
    document_id: int
    namespace: str
    title: str
    citation_url: str
    score: float
    sections: list[PassageOut]


class AgentSearchOut(Schema):
    MCP_ONLY: ClassVar[frozenset[str]] = frozenset({"namespaces"})

    query: str
    namespaces: list[str]  # what was searched
    documents: list[AgentDocumentOut]
    weak_titles: list[str]  # with no cited document: titles of the nearest misses
    correction: str | None = (
        None  # with no cited document: "did you mean", as /api/spelling answers
    )


class FetchIn(Schema):
    MCP_ONLY: ClassVar[frozenset[str]] = frozenset({"id", "anchor"})

    id: str = Field(
        ...,
        pattern=r"^[cd][0-9]{1,18}$",
        description="A passage id (c123) or document id (d45) from search",
    )
    anchor: str = Field(
        "",
        max_length=300,
        description="With a document id: read only the section of this anchor (with its "
        "subsections)",
    )
    offset: int = Field(
        0, ge=0, description="Character to start at: the next_offset of the previous piece"
    )
    max_chars: int = Field(8000, ge=200, le=100000, description="Most characters to return")


class FetchOut(Schema):
    """A passage, a section or a whole document, a piece at a time: `text[:returned_chars]` is
    the exact stored text from `offset`; a cut piece ends with a marker, and `next_offset` is
    where the next piece starts."""

    MCP_ONLY: ClassVar[frozenset[str]] = frozenset()

    document_id: int
    chunk_id: int | None  # set when a passage was fetched
    title: str
    heading_path: list[str]
    anchor: str
    citation_url: str
    start_byte: int  # the UTF-8 byte range of the stored document text this piece's whole covers
    end_byte: int
    text: str
    offset: int
    total_chars: int
    returned_chars: int
    truncated: bool
    next_offset: int | None
