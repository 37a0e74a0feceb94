"""`search()`: embed -> channels -> ranker -> hydrate -> tiers. What every surface calls.
The channels run in `retrieval.gathering`; hits and tiers are built in `retrieval.hits`.

The API, the search page, the eval suite and the benchmark all go through here, so they see the
same ranking and the same explanations. Each call writes one QueryLog row (unless `log=False`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from kb.models import QueryLog
from kb.replicas import on_replica
from retrieval import querylog
from retrieval.gathering import as_candidates, elapsed_ms, gather
from retrieval.hits import build_result
from retrieval.planning import Plan
from retrieval.planning import plan as make_plan
from retrieval.query import MAX_QUERY_CHARS, validate_query
from retrieval.ranker import (
    CHANNELS,
    IDENTIFIERS,
    Candidate,
    RankerParams,
    Ranking,
    rank,
)
from retrieval.results import Filters, SearchResult


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
    """Search one namespace: the ranked, explained results a surface shows.

    `reach` defaults to open documents only, so a surface that forgets it shows less, never more
    (None: every audience). `group="document"` makes `limit` count documents. `text_window` (start,
    stop) limits which hits carry their passage's text, so a page showing ten of fifty reads ten
    texts. `query_vector` lets a caller searching several namespaces embed once.
    """
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
    that ranks the candidates instead of the product's ranker. Only `evaluation.search_parts`
    passes them."""
    started = time.perf_counter()
    query = validate_query(query, limit)
    timings: dict[str, float] = {}

    def read() -> tuple[Plan, SearchResult]:
        timings.clear()  # a read retried on the primary reports its own times
        plan = make_plan(query, namespace, filters, limit, params, group, reach)
        left_out = {note.channel for note in plan.notes if note.state == "off"}
        found = gather(plan, tuple(c for c in channels if c not in left_out), query_vector, timings)
        t = time.perf_counter()
        candidates = as_candidates(found.lists, found.rows, found.cosines)
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
        timings["rank_ms"] = elapsed_ms(t)
        t = time.perf_counter()
        result = build_result(plan, ranking, found, timings, text_window)
        timings["hydrate_ms"] = elapsed_ms(t)
        return plan, result

    plan, result = on_replica(read)
    timings["total_ms"] = elapsed_ms(started)
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
