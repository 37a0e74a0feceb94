"""The parts of search the lab runs apart from `search()`, each named here.

The benchmark compares the product's ranker with each channel alone and with plain reciprocal
rank fusion, fits the fusion weight by searching with every weight of a grid, and times the
lexical channel's two reads and the per-namespace indexes. `search()` carries none of those
knobs; only evaluation reads retrieval's internals, and through this module where it can.
"""

from __future__ import annotations

from retrieval import lexical, posting_lists, query_words, term_counts
from retrieval.ranker import CHANNELS, Candidate, RankerParams, Ranking, RankSummary, ScoreDetails
from retrieval.scope import Scope
from retrieval.service import Filters, SearchResult, run_search
from retrieval.vector_index import ensure_namespace_index, index_name

FUSIONS = ("ranker", "rrf")


def search_variant(
    query: str,
    namespace: str,
    *,
    limit: int = 10,
    filters: Filters = Filters(),
    params: RankerParams | None = None,
    channels: tuple[str, ...] = CHANNELS,
    fusion: str = "ranker",
    query_vector=None,
    log: bool = False,
    reach: frozenset[int] | None = frozenset(),
) -> SearchResult:
    """A search with only `channels` running, ranked by the product's ranker (`fusion="ranker"`)
    or by plain reciprocal rank fusion (`"rrf"`); not logged unless asked. `reach`: the
    audiences read besides open documents (`kb.audiences`; None: every one)."""
    if fusion not in FUSIONS:
        raise ValueError(f"fusion must be one of {', '.join(FUSIONS)}, got {fusion!r}")
    return run_search(
        query,
        namespace,
        limit=limit,
        filters=filters,
        params=params,
        log=log,
        query_vector=query_vector,
        channels=channels,
        fuse=plain_rrf if fusion == "rrf" else None,
        reach=reach,
    )


def unjudged_defaults(
    namespace: str, queries: dict[str, str]
) -> dict[str, tuple[float, tuple[str, ...]]]:
    """Per query id: the lexical weight and the channels a search of that query in `namespace`
    uses when no judged queries fitted its weights (what most users get), whatever is stored now,
    after the model's agreement with the namespace's words (`retrieval.agreement`) is measured."""
    from kb.models import Namespace
    from retrieval import meaning_spread
    from retrieval.planning import unjudged_weights

    row = Namespace.objects.values("id", "document_languages", "passage_configs").get(
        slug=namespace
    )
    agreed = meaning_spread.namespace_agreement(
        row["id"], sum(row["passage_configs"].values()), wait=True
    )
    served = {}
    for qid, query in queries.items():
        weights, notes = unjudged_weights(row["document_languages"], query, agreed)
        off = {note.channel for note in notes if note.state == "off"}
        served[qid] = weights.lexical, tuple(channel for channel in CHANNELS if channel not in off)
    return served


def search_excess(
    namespace: str, queries: dict[str, str], vectors: dict | None = None
) -> dict[str, float | None]:
    """Per query id: how far its best passage stands beyond chance in `namespace`, as its search
    would log it (`retrieval.breadth.meaning_excess`), the namespace's sample read first."""
    from kb.models import Namespace
    from retrieval import meaning_spread

    row = Namespace.objects.values("id", "passage_configs").get(slug=namespace)
    meaning_spread.namespace_sample(row["id"], sum(row["passage_configs"].values()), wait=True)
    return {
        qid: search_variant(
            query, namespace, limit=1, query_vector=(vectors or {}).get(qid)
        ).meaning_excess
        for qid, query in queries.items()
    }


def plain_rrf(candidates: list[Candidate], params: RankerParams) -> Ranking:
    """Reciprocal rank fusion alone (k=60), for the benchmark's comparison row."""
    scored = []
    for c in candidates:
        value = sum(1.0 / (params.rrf_k + h.rank) for h in c.hits.values())
        scored.append(
            ScoreDetails(
                key=c.key,
                kind=c.kind,
                channels={},
                rrf_bonus=value,
                relevance=value,
                score=value,
                cosine=c.cosine,
            )
        )
    scored.sort(key=lambda d: (-d.score, -(d.cosine or -2), str(d.key)))
    kept = [
        ScoreDetails(**{**d.__dict__, "kept": True, "rank": i})
        for i, d in enumerate(scored[: params.limit], 1)
    ]
    summary = RankSummary(
        len(candidates),
        {},
        len(kept),
        0,
        0,
        0,
        max(0, len(scored) - params.limit),
        kept[0].relevance if kept else 0.0,
        0.0,
    )
    return Ranking(kept=kept, dropped=[], summary=summary)


def clear_document_frequencies() -> None:
    """Empty the lexical channel's cache of document frequencies, so the next read counts them."""
    term_counts.DOCUMENT_FREQUENCIES.clear()


def query_lexemes(text: str, namespace_id: int) -> list[tuple[str, int]]:
    """The query's lexemes as the lexical channel reads them in that namespace."""
    return query_words.query_lexemes(text, query_words.namespace_configs(namespace_id, text))


def lexical_read(
    namespace_id: int, lexemes: list[tuple[str, int]], depth: int, *, packed: bool = True
) -> lexical.LexicalResult:
    """The lexical channel's top `depth` for `lexemes`, from the packed posting lists (when the
    namespace has them) or from the postings table (`packed=False`)."""
    return lexical.lexical_search(Scope(namespace_id), lexemes, depth, packed=packed)


def posting_lists_in_force(namespace_id: int) -> bool:
    return posting_lists.state(namespace_id) is not None


def build_posting_lists(namespace_id: int) -> str:
    """Pack the namespace's postings now, whatever its size; returns what happened."""
    return posting_lists.build(namespace_id)


def ensure_posting_lists(namespace_id: int) -> str:
    """What a finished ingest run does: pack them when the namespace is large enough or changed."""
    return posting_lists.ensure(namespace_id)


def drop_posting_lists(namespace_id: int) -> None:
    posting_lists.drop(namespace_id)


def ensure_vector_index(namespace_id: int) -> str:
    """What a finished ingest run does: the namespace's own HNSW index once it is large enough."""
    return ensure_namespace_index(namespace_id)


def vector_index_name(namespace_id: int) -> str:
    return index_name(namespace_id)
