"""`search()`: embed -> channels -> ranker -> hydrate -> tiers. What every surface calls.

The API, the search page, the eval suite and the benchmark all go through here, so they see the
same ranking and the same explanations. Each call writes one QueryLog row (unless `log=False`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from kb.embedding.embedders import get_embedder, strong_cosine
from kb.models import QueryLog
from kb.replicas import on_replica, read_alias
from retrieval import channels as ch
from retrieval import lexical, meaning_spread, query_words, querylog
from retrieval.candidates import (
    FULL_WEIGHT_IDF_SHARE,
)
from retrieval.citations import document_citation_url
from retrieval.planning import Plan
from retrieval.planning import plan as make_plan
from retrieval.query import MAX_QUERY_CHARS, QueryFeatures, validate_query
from retrieval.ranker import (
    CHANNELS,
    IDENTIFIERS,
    LEXICAL,
    NAMES,
    VECTOR,
    Candidate,
    ChannelHit,
    RankerParams,
    Ranking,
    ScoreDetails,
    rank,
)
from retrieval.results import DocumentGroup, Filters, Hit, SearchResult, group_by_document

SUGGESTED_DOCUMENTS = 3
RELATED_DOCUMENTS = 5
SECTIONS_PER_DOCUMENT = 3


def search(
    query: str,
    namespace: str,
    *,
    filters: Filters = Filters(),
    limit: int = 10,
    params: RankerParams | None = None,
    log: bool = True,
    query_vector=None,
    group: str = "chunk",
    caller: str = QueryLog.Caller.INTERNAL,
    text_window: tuple[int, int] | None = None,
    reach: frozenset[int] | None = frozenset(),
) -> SearchResult:
    """`reach`: the restricted audiences the reader reads besides open documents (a principal's
    `audiences`; None: every one); by default open documents only, so a surface that forgets
    it shows less, never more. `group="document"`: `limit` counts documents, each with its best sections; the chunk
    ranking underneath is the same, read deeper. `caller` is the surface the query log records;
    `query_vector`, the query's embedding when the caller already has it (an agent's tool that
    searches several namespaces embeds once). `text_window` (start, stop): only the hits in that
    range (grouped: the best section of the documents in it) carry their passage's text, the
    others their titles and locations: a page that shows ten results of fifty reads ten texts;
    grouped, only the documents up to the window's end (at least the first eight, the tiers, and
    the first cited one) are read at all, and `document_count` counts the rest."""
    return run_search(
        query,
        namespace,
        filters=filters,
        limit=limit,
        params=params,
        log=log,
        query_vector=query_vector,
        group=group,
        caller=caller,
        text_window=text_window,
        reach=reach,
    )


def run_search(
    query: str,
    namespace: str,
    *,
    filters: Filters = Filters(),
    limit: int = 10,
    params: RankerParams | None = None,
    log: bool = True,
    query_vector=None,
    group: str = "chunk",
    caller: str = QueryLog.Caller.INTERNAL,
    channels: tuple[str, ...] = CHANNELS,
    fuse: Callable[[list[Candidate], RankerParams], Ranking] | None = None,
    text_window: tuple[int, int] | None = None,
    reach: frozenset[int] | None = frozenset(),
) -> SearchResult:
    """`search()` with the parts evaluation varies: which `channels` run, and `fuse`, a function
    that ranks the candidates instead of the product's ranker. Only `evaluation.search_parts` passes them."""
    started = time.perf_counter()
    query = validate_query(query, limit)
    timings: dict[str, float] = {}

    def read() -> tuple[Plan, SearchResult]:
        timings.clear()  # a read retried on the primary reports its own times
        plan = make_plan(query, namespace, filters, limit, params, group, reach)
        left_out = {note.channel for note in plan.notes if note.state == "off"}
        found = _gather(
            plan, tuple(c for c in channels if c not in left_out), query_vector, timings
        )
        t = time.perf_counter()
        candidates = _candidates(found.lists, found.rows, found.cosines)
        if fuse is not None:
            ranking = fuse(candidates, plan.params)
        else:
            ranking = rank(
                candidates,
                plan.params,
                identifier_query=bool(plan.features.identifiers) and IDENTIFIERS in channels,
                query_idf=found.query_idf,
                notes=plan.notes,
            )
        timings["rank_ms"] = _ms(t)
        t = time.perf_counter()
        result = _result(plan, ranking, found, timings, text_window)
        timings["hydrate_ms"] = _ms(t)
        return plan, result

    plan, result = on_replica(read)
    timings["total_ms"] = _ms(started)
    if log:
        top_cosine = max((h.cosine for h in result.hits if h.cosine is not None), default=None)
        query_id = querylog.record(
            namespace_id=plan.scope.namespace_id,
            query=plan.query[:MAX_QUERY_CHARS],
            result_ids=[h.chunk_id for h in result.hits],
            timings=timings,
            top_cosine=top_cosine,
            strong=bool(result.cited),
            caller=caller,
            meaning_excess=result.meaning_excess,
        )
        result = dataclasses.replace(result, query_id=query_id)
    return result


@dataclass
class _Found:
    """What the channels found: each channel's list, the candidates' rows and their cosines."""

    lists: dict[str, list[ch.ChannelRow]]
    rows: dict[int, ch.CandidateRow]
    cosines: dict[int, float]
    lexemes: list[tuple[str, int]]
    statistics: lexical.TermStatistics | None
    lexical: lexical.LexicalReport | None
    common_names: tuple[str, ...] = ()  # name keys too common to name a document, left out
    meaning_excess: float | None = None

    @property
    def query_idf(self) -> float | None:
        """The query terms' IDF mass in the namespace (None when the words channel did not run)."""
        return self.statistics.query_idf if self.statistics else None


def _gather(
    plan: Plan, channels: tuple[str, ...], query_vector, timings: dict[str, float]
) -> _Found:
    """Run the channels. The model runs on its own thread (torch releases the GIL) while the SQL
    that does not need the query vector runs here: the other channels and their candidates' rows."""
    scope, depth, features = plan.scope, plan.depth, plan.features
    with_embeddings = plan.params.mmr_lambda < 1
    with ThreadPoolExecutor(max_workers=1) as pool:
        embedding = None
        if VECTOR in channels and query_vector is None:
            embedding = pool.submit(_embed, plan.query)
        t = time.perf_counter()
        lexemes = query_words.query_lexemes(plan.query, plan.configs)
        statistics, words = None, None
        if LEXICAL in channels:
            # a query naming an identifier wants it exactly: its words are not respelt
            statistics = lexical.term_statistics(
                scope, lexemes, "" if features.identifiers else plan.query, plan.configs
            )
            words = lexical.lexical_search(
                scope, lexemes, depth, statistics, configurations=plan.configs
            )
        names = (
            ch.names_search(scope, features.name_keys) if NAMES in channels else ch.NamesResult([])
        )
        lists: dict[str, list[ch.ChannelRow]] = {
            LEXICAL: words.rows if words else [],
            NAMES: names.rows,
            IDENTIFIERS: (
                ch.identifier_channel(scope, features.identifiers, plan.configs)
                if IDENTIFIERS in channels
                else []
            ),
        }
        timings["channels_ms"] = _ms(t)
        t = time.perf_counter()
        early_ids = list(dict.fromkeys(row.chunk_id for rows in lists.values() for row in rows))
        rows = ch.candidate_rows(scope, early_ids, with_embeddings=with_embeddings)
        timings["candidates_ms"] = _ms(t)
        cosines: dict[int, float] = {}
        lists[VECTOR] = []
        if VECTOR in channels:
            if embedding is not None:
                query_vector, timings["embed_ms"] = embedding.result()
            t = time.perf_counter()
            vector = ch.vector_candidates(
                scope, query_vector, depth, list(rows), with_embeddings, model=plan.model
            )
            lists[VECTOR] = vector.rows
            rows.update(vector.candidates)
            cosines = vector.cosines
            timings["vector_ms"] = _ms(t)
    excess = None
    if lists[VECTOR] and not (
        scope.source_ids or scope.document_ids or plan.model
    ):  # the namespace whole, as sampled
        excess = meaning_spread.query_excess(
            scope.namespace_id, plan.passages, query_vector, max(row.raw for row in lists[VECTOR])
        )
    return _Found(
        lists,
        rows,
        cosines,
        lexemes,
        statistics,
        words.report if words else None,
        names.common_keys,
        excess,
    )


def _result(
    plan: Plan,
    ranking,
    found: _Found,
    timings: dict[str, float],
    text_window: tuple[int, int] | None,
) -> SearchResult:
    """The kept passages as hits, grouped by document, with the suggested, cited and related tiers."""
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
    rows = ch.hydrate(
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
        f"name key {key!r}: in more than {ch.NAMES_READ_PER_KEY} document names, too common to name one; "
        f"not used"
        for key in common
    )
    return dataclasses.replace(features, capped=features.capped + notes)


def _documents_in_order(
    kept: list[ScoreDetails], rows: dict[int, ch.CandidateRow]
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
    rows: dict[int, ch.CandidateRow],
    order: list[tuple[int, ScoreDetails]],
    documents: int,
) -> list[ScoreDetails]:
    """The kept passages of the first `documents` documents of `order`: a grouped search ranks
    four passages per document it may return, and only these are hydrated into hits."""
    first = {document_id for document_id, _ in order[:documents]}
    return [d for d in kept if d.key in rows and rows[d.key].document_id in first]


@dataclass(frozen=True)
class StrongMatch:
    """What makes a passage a strong match for one search, one a reader can be pointed to (the
    cited tier): its cosine to the query reaches `cosine`, the model's own floor
    (`kb.embedding.embedders.strong_cosine`); when meaning was not used (a language the model does
    not read, or the words channel asked alone), its words carry at least FULL_WEIGHT_IDF_SHARE of
    the query's IDF mass, as a passage holding the rarer half of the query's words once does, or
    the query names its document whole (a names-channel coverage of 1: a token of the query is the
    document's whole name key).

    Meaning alone never makes a strong match for a query none of whose words occurs in the
    namespace (the words channel ran and `query_idf` is 0, as the ranker's "no word of the query
    occurs" note says): that is mostly a query misspelt throughout, whose best cosine still passes
    the floor on the letters it shares with the passages (docs/searching.md#strong-matches
    measures it), and a strong match would hide its "did you mean". Only its name can then
    make one."""

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
            and words.raw >= FULL_WEIGHT_IDF_SHARE * self.query_idf
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


def _embed(query: str):
    started = time.perf_counter()
    return get_embedder().embed_query(query), _ms(started)


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 2)


def _candidates(
    lists: dict[str, list[ch.ChannelRow]],
    rows: dict[int, ch.CandidateRow],
    cosines: dict[int, float],
) -> list[Candidate]:
    """One Candidate per chunk any channel found; the cosine comes from the row (vector hits)
    or from `cosines` (the other channels' hits, measured with the vector channel)."""
    hits: dict[int, dict[str, ChannelHit]] = {}
    for name, channel_rows in lists.items():
        for position, row in enumerate(channel_rows, start=1):
            hits.setdefault(row.chunk_id, {})[name] = ChannelHit(rank=position, raw=row.raw)
    now = time.time()
    candidates = []
    for chunk_id, channel_hits in hits.items():
        row = rows.get(chunk_id)
        if row is None:
            continue  # deleted between the channel query and this one
        candidates.append(
            Candidate(
                key=chunk_id,
                kind="summary" if row.is_summary else "chunk",
                group=str(row.document_id),
                path=row.path,
                position=row.position,
                embedding=row.embedding,
                cosine=row.cosine if row.cosine is not None else cosines.get(chunk_id),
                hits=channel_hits,
                age_days=(now - row.dated_epoch) / 86400 if row.dated_epoch is not None else None,
                priority=row.priority,
                text_key=row.text_key,
                body_key=row.body_key,
            )
        )
    return candidates


def citation_url(row: ch.ChunkRow, namespace: str) -> str:
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


def _hit(details: ScoreDetails, row: ch.ChunkRow, namespace: str) -> Hit:
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
    rows: dict[int, ch.ChunkRow],
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
