"""The channels run for one search's plan: each channel's list, the candidates' rows and their
cosines (`gather`), and those lists made the ranker's candidates (`as_candidates`)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from kb.embedding.embedders import get_embedder
from retrieval import channels as ch
from retrieval import lexical, meaning_spread, passage_rows, query_words
from retrieval.planning import Plan
from retrieval.ranker import IDENTIFIERS, LEXICAL, NAMES, VECTOR, Candidate, ChannelHit


@dataclass
class Found:
    """What the channels found: each channel's list, the candidates' rows and their cosines."""

    lists: dict[str, list[ch.ChannelRow]]
    rows: dict[int, passage_rows.CandidateRow]
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


def gather(plan: Plan, channels: tuple[str, ...], query_vector, timings: dict[str, float]) -> Found:
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
        timings["channels_ms"] = elapsed_ms(t)
        t = time.perf_counter()
        early_ids = list(dict.fromkeys(row.chunk_id for rows in lists.values() for row in rows))
        rows = passage_rows.candidate_rows(scope, early_ids, with_embeddings=with_embeddings)
        timings["candidates_ms"] = elapsed_ms(t)
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
            timings["vector_ms"] = elapsed_ms(t)
    excess = None
    if lists[VECTOR] and not (
        scope.source_ids or scope.document_ids or plan.model
    ):  # the namespace whole, as sampled
        excess = meaning_spread.query_excess(
            scope.namespace_id, plan.passages, query_vector, max(row.raw for row in lists[VECTOR])
        )
    return Found(
        lists,
        rows,
        cosines,
        lexemes,
        statistics,
        words.report if words else None,
        names.common_keys,
        excess,
    )


def _embed(query: str):
    started = time.perf_counter()
    return get_embedder().embed_query(query), elapsed_ms(started)


def elapsed_ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 2)


def as_candidates(
    lists: dict[str, list[ch.ChannelRow]],
    rows: dict[int, passage_rows.CandidateRow],
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
