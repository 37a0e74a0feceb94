"""What a search returns: its filters, its hits, its documents grouped with their best
sections, and the whole result every surface renders. Pure dataclasses."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from retrieval import lexical
from retrieval.fusion import (
    DEFAULT_WEIGHTS,
    FusionWeights,
)
from retrieval.query import QueryFeatures
from retrieval.ranker import (
    RankSummary,
    ScoreDetails,
)


@dataclass(frozen=True)
class Filters:
    source_ids: tuple[int, ...] = ()
    document_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class Hit:
    rank: int
    chunk_id: int
    document_id: int
    document_ref: str
    source_id: int
    title: str
    heading_path: tuple[str, ...]
    anchor: str
    text: str
    start_byte: int
    end_byte: int
    citation_url: str
    source_name: str
    created_at: datetime | None
    score: float
    relevance: float
    cosine: float | None
    details: ScoreDetails
    page_start: int | None = None  # documents: the pages, slides or sheets the passage spans
    page_end: int | None = None
    page_unit: str = ""
    scanned: bool = False  # "text recognised from a scan": the passage's page was OCRed
    embedded_by: str = ""  # the model and runtime that computed the passage's vector


@dataclass(frozen=True)
class DocumentGroup:
    """One document of a result list with its best sections. Its score is its best section's
    score (as documentation search ranks pages by their best match; a sum would favour long
    pages), so grouping never reorders documents against the chunk ranking."""

    rank: int
    document_id: int
    title: str
    citation_url: str  # the document itself (its best section's citation without the fragment)
    score: float
    sections: tuple[Hit, ...]  # best first, at most SECTIONS_PER_DOCUMENT

    @property
    def best_cosine(self) -> float | None:
        """The cosine of the document's best section."""
        return self.sections[0].cosine


def group_by_document(hits: list[Hit], sections: int) -> list[DocumentGroup]:
    """Hits in rank order -> documents in order of their best hit, each with its best sections.
    A passage that shares text with a better one of its document (neighbours overlap, so each
    reads alone) is that same place again, and is not listed as another section."""
    order: dict[int, list[Hit]] = {}
    for hit in hits:
        found = order.setdefault(hit.document_id, [])
        if not any(
            hit.start_byte < other.end_byte and other.start_byte < hit.end_byte for other in found
        ):
            found.append(hit)
    groups = []
    for position, found in enumerate(order.values(), start=1):
        best = found[0]
        groups.append(
            DocumentGroup(
                position,
                best.document_id,
                best.title,
                document_link(best.citation_url),
                best.score,
                tuple(found[:sections]),
            )
        )
    return groups


@dataclass(frozen=True)
class SearchResult:
    query: str
    namespace: str
    hits: list[Hit]
    suggested: list[DocumentGroup]  # the document tiers, read from `documents`
    cited: list[DocumentGroup]
    related: list[DocumentGroup]
    weak_titles: list[str]
    summary: RankSummary
    dropped: list[ScoreDetails]
    features: QueryFeatures
    lexemes: list[
        str
    ]  # the query's, and the stems its words typed without accents were read as: snippets mark them
    timings: dict[str, float] = field(default_factory=dict)
    fusion: FusionWeights = (
        DEFAULT_WEIGHTS  # the namespace's weights; summary.lexical_weight: this query's
    )
    documents: list[DocumentGroup] = field(
        default_factory=list
    )  # every document of `hits`, best first
    grouped: bool = False  # `limit` counted documents (group="document")
    database: str = "default"  # the database alias that answered: a read replica or the primary
    lexical: lexical.LexicalReport | None = None  # how the lexical channel found its hits
    query_id: int | None = None  # the query log row, which reader feedback names
    document_count: int = (
        0  # documents found (grouped), of which a page's search holds those up to its end
    )
    meaning_excess: float | None = (
        None  # the best passage beyond chance (retrieval.meaning_spread); logged
    )
    query_idf: float | None = (
        None  # the query's IDF mass in the namespace (None: the words channel did not run)
    )


def document_link(citation: str) -> str:
    """A citation without its fragment, and a PDF's `original` without the page: the document."""
    base = citation.split("#")[0]
    return (
        base[: -len("original")]
        if base.startswith("/documents/") and base.endswith("/original")
        else base
    )
