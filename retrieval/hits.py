"""A ranking made a search's result: the kept passages hydrated into hits, grouped by document,
and the suggested, cited and related tiers (a strong match, `StrongMatch`, makes the cited)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from kb.embedding.embedders import strong_cosine
from kb.replicas import read_alias
from retrieval import channels as ch
from retrieval import passage_rows
from retrieval.citations import document_citation_url
from retrieval.gathering import Found
from retrieval.planning import Plan
from retrieval.query import QueryFeatures
from retrieval.ranker import LEXICAL, NAMES, ScoreDetails
from retrieval.results import DocumentGroup, Hit, SearchResult, group_by_document

# without meaning, a passage whose words carry half the query's IDF mass (its BM25 score against
# what a passage holding each query word once scores) is a strong match
STRONG_WORDS_SHARE = 0.5
SUGGESTED_DOCUMENTS = 3
RELATED_DOCUMENTS = 5
SECTIONS_PER_DOCUMENT = 3


def build_result(
    plan: Plan,
    ranking,
    found: Found,
    timings: dict[str, float],
    text_window: tuple[int, int] | None,
) -> SearchResult:
    """The kept passages as hits, grouped by document, with the suggested, cited and related
    tiers."""
    weak_pool = sorted(
        (d for d in ranking.dropped if d.dropped_by == "threshold"), key=lambda d: -d.relevance
    )[:10]
    match = StrongMatch(strong_cosine(), found.query_idf)
    grouped = bool(plan.documents_wanted)
    order = _documents_in_order(ranking.kept, found.rows) if grouped else []
    texts = (
        None
        if text_window is None
        else _texts_shown(ranking.kept, order, text_window, grouped=grouped)
    )
    kept, document_count = ranking.kept, None
    if grouped:
        document_count = min(plan.documents_wanted, len(order))
        first = plan.documents_wanted
        if (
            text_window is not None
        ):  # a page: the documents up to its end, the tiers and the first cited
            first = min(
                first,
                max(
                    text_window[1],
                    SUGGESTED_DOCUMENTS + RELATED_DOCUMENTS,
                    _first_cited(order, match),
                ),
            )
        kept = _of_first_documents(ranking.kept, found.rows, order, first)
    rows = passage_rows.hydrate(
        plan.scope, [d.key for d in kept] + [d.key for d in weak_pool], text_ids=texts
    )
    hits = [_hit(d, rows[d.key], plan.namespace) for d in kept if d.key in rows]
    documents = group_by_document(hits, SECTIONS_PER_DOCUMENT)
    if plan.documents_wanted:
        documents = documents[: plan.documents_wanted]
        shown = {d.document_id for d in documents}
        hits = [h for h in hits if h.document_id in shown]
    suggested, cited, related, weak = _tiers(documents, ranking.kept + weak_pool, rows, match)
    read_as = list(found.statistics.read_as) if found.statistics else []  # marked in snippets too
    return SearchResult(
        query=plan.query,
        namespace=plan.namespace,
        hits=hits,
        suggested=suggested,
        cited=cited,
        related=related,
        weak_titles=weak,
        summary=ranking.summary,
        dropped=ranking.dropped,
        features=_with_common_names(plan.features, found.common_names),
        lexemes=[lexeme for lexeme, _ in found.lexemes] + read_as,
        timings=timings,
        fusion=plan.weights,
        documents=documents,
        grouped=grouped,
        database=read_alias(),
        lexical=found.lexical,
        document_count=len(documents) if document_count is None else document_count,
        meaning_excess=found.meaning_excess,
        query_idf=found.query_idf,
    )


def _with_common_names(features: QueryFeatures, common: tuple[str, ...]) -> QueryFeatures:
    """The query's caps, with the name keys the names channel left out because too many document
    names hold them."""
    if not common:
        return features
    notes = tuple(
        f"name key {key!r}: in more than {ch.NAMES_READ_PER_KEY} document names, too common to "
        "name one; "
        f"not used"
        for key in common
    )
    return dataclasses.replace(features, capped=features.capped + notes)


def _documents_in_order(
    kept: list[ScoreDetails], rows: dict[int, passage_rows.CandidateRow]
) -> list[tuple[int, ScoreDetails]]:
    """Each document of the kept ranking with its best passage, in order of that passage (as
    `group_by_document` orders them)."""
    best: dict[int, ScoreDetails] = {}
    for details in kept:
        row = rows.get(details.key)
        if row is not None:
            best.setdefault(row.document_id, details)
    return list(best.items())


def _of_first_documents(
    kept: list[ScoreDetails],
    rows: dict[int, passage_rows.CandidateRow],
    order: list[tuple[int, ScoreDetails]],
    documents: int,
) -> list[ScoreDetails]:
    """The kept passages of the first `documents` documents of `order`: a grouped search ranks
    four passages per document it may return, and only these are hydrated into hits."""
    first = {document_id for document_id, _ in order[:documents]}
    return [d for d in kept if d.key in rows and rows[d.key].document_id in first]


@dataclass(frozen=True)
class StrongMatch:
    """What makes a passage a strong match, one a reader can be pointed to (the cited tier).

    Its cosine reaches `cosine`, the model's own floor (`kb.embedding.embedders.strong_cosine`);
    where meaning was not used, its words carry STRONG_WORDS_SHARE of the query's IDF mass, or
    the query names its document whole (names coverage 1). Meaning alone never makes one when no
    word of the query occurs in the namespace (`query_idf` 0): that is mostly a query misspelt
    throughout, whose cosine still passes the floor on shared letters
    (docs/searching.md#strong-matches), and a strong match would hide its "did you mean".
    """

    cosine: float
    query_idf: float | None

    @property
    def no_word_known(self) -> bool:
        """The words channel ran and no word of the query occurs in the namespace."""
        return self.query_idf is not None and self.query_idf <= 0

    def holds(self, details: ScoreDetails) -> bool:
        if details.cosine is not None and not self.no_word_known:
            return details.cosine >= self.cosine
        words, name = details.channels.get(LEXICAL), details.channels.get(NAMES)
        return (
            bool(self.query_idf)
            and words is not None
            and words.raw >= STRONG_WORDS_SHARE * self.query_idf
        ) or (name is not None and name.raw >= 1.0)


def _first_cited(order: list[tuple[int, ScoreDetails]], match: StrongMatch) -> int:
    """How many documents of `order`, up to and including the first whose best passage is cited
    (0 when none is): a page reads that far, so whether anything is cited is known as it was
    when every document was read."""
    return next(
        (position for position, (_, best) in enumerate(order, start=1) if match.holds(best)), 0
    )


def _texts_shown(
    kept: list[ScoreDetails],
    order: list[tuple[int, ScoreDetails]],
    window: tuple[int, int],
    *,
    grouped: bool,
) -> list[int]:
    """The chunks in `window` of the kept ranking whose text is shown: hits, or the best
    section of each document of `order`."""
    start, stop = window
    if not grouped:
        return [d.key for d in kept[start:stop]]
    return [best.key for _, best in order[start:stop]]


def citation_url(row: passage_rows.ChunkRow, namespace: str) -> str:
    return document_citation_url(
        url=row.url,
        ref=row.ref,
        anchor=row.anchor,
        namespace=namespace,
        document_id=row.document_id,
        page=row.page_start,
        page_unit=row.page_unit,
        chunk_id=row.chunk_id,
    )


def _hit(details: ScoreDetails, row: passage_rows.ChunkRow, namespace: str) -> Hit:
    return Hit(
        rank=details.rank,
        chunk_id=row.chunk_id,
        document_id=row.document_id,
        document_ref=row.ref,
        source_id=row.source_id,
        title=row.title,
        heading_path=row.heading_path,
        anchor=row.anchor,
        text=row.text,
        start_byte=row.start_byte,
        end_byte=row.end_byte,
        citation_url=citation_url(row, namespace),
        source_name=row.source_name,
        created_at=row.created_at or row.indexed_at,
        score=details.score,
        relevance=details.relevance,
        cosine=details.cosine,
        details=details,
        page_start=row.page_start,
        page_end=row.page_end,
        page_unit=row.page_unit,
        scanned=row.scanned,
        embedded_by=embedded_by(row.embedding_model, row.embedding_runtime),
    )


def embedded_by(model: str, runtime: str) -> str:
    """ "st:all-MiniLM-L6-v2 (onnx-int8)"; the model alone when no runtime was recorded."""
    return f"{model} ({runtime})" if model and runtime else model


def _tiers(
    documents: list[DocumentGroup],
    pool: list[ScoreDetails],
    rows: dict[int, passage_rows.ChunkRow],
    match: StrongMatch,
):
    """The document tiers, all read from the one list of documents: suggested (the first few),
    cited (best section is a strong match), related (the next few), and titles of the nearest
    misses when nothing is cited."""
    suggested = documents[:SUGGESTED_DOCUMENTS]
    cited = [d for d in documents if match.holds(d.sections[0].details)]
    related = documents[SUGGESTED_DOCUMENTS : SUGGESTED_DOCUMENTS + RELATED_DOCUMENTS]
    weak: list[str] = []
    if not cited:
        for details in sorted(pool, key=lambda d: -d.relevance):
            title = rows[details.key].title if details.key in rows else ""
            if title and title not in weak:
                weak.append(title)
            if len(weak) == 3:
                break
    return suggested, cited, related, weak
