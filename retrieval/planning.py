"""What one search asks of the channels and the ranker, decided before any channel runs: the
namespace's row (read in one statement), the fusion weights and what set them, and the
channels left out, each with its note for the reader."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from kb.conf import kb_settings
from kb.embedding.compared import foreign_passages
from kb.embedding.embedders import get_embedder
from kb.languages import name as language_name
from kb.model_languages import meaning_decision
from kb.replicas import read_connection
from retrieval import meaning_spread, query_words
from retrieval.agreement import Reading
from retrieval.candidates import (
    WORDS_ALONE,
    ChannelNote,
    meaning_disagrees,
    meaning_models,
    meaning_unread,
    unread_clause,
)
from retrieval.errors import InvalidGroup, UnknownNamespace
from retrieval.fusion import (
    DEFAULT_WEIGHTS,
    WEIGHT_FIELDS,
    FusionWeights,
    graded_weights,
    meaning_kept,
    weights_from_row,
    words_alone,
)
from retrieval.query import MAX_LIMIT, QueryFeatures, analyse
from retrieval.ranker import (
    VECTOR,
    RankerParams,
)
from retrieval.results import Filters
from retrieval.scope import Scope

GROUPINGS = ("chunk", "document")
SECTIONS_PER_GROUPED_DOCUMENT = 4  # chunks ranked per document asked for when grouping


@dataclass(frozen=True)
class Plan:
    """What one search asks of the channels and the ranker."""

    query: str
    namespace: str
    scope: Scope
    params: RankerParams  # limit: chunks to rank; lexical_weight: the weight this search uses
    weights: FusionWeights
    depth: int  # candidates read per channel
    features: QueryFeatures
    documents_wanted: int | None  # group="document": documents to return
    configs: tuple[str, ...] = ()  # the text search configurations the query is lexed with
    notes: tuple[ChannelNote, ...] = ()  # channels left out for this namespace, and why
    passages: int = 0  # the namespace's passages
    model: str = (
        ""  # set when only some passages are this model's: meaning compares with those alone
    )


def plan(
    query: str,
    namespace: str,
    filters: Filters,
    limit: int,
    params: RankerParams | None,
    group: str,
    reach: frozenset[int] | None = frozenset(),
) -> Plan:
    """`reach`: the restricted audiences the reader reads (`kb.audiences`; None: every one, a
    superuser); the scope reads open documents and those of the namespace's audiences in it."""
    if group not in GROUPINGS:
        raise InvalidGroup(f"group must be one of {', '.join(GROUPINGS)}, got {group!r}.")
    documents_wanted = limit if group == "document" else None
    if documents_wanted:
        limit = min(MAX_LIMIT, limit * SECTIONS_PER_GROUPED_DOCUMENT)
    ns = namespace_row(namespace)
    if ns is None:
        raise UnknownNamespace(f"No namespace {namespace!r}.", details={"namespace": namespace})
    params = params or RankerParams()
    weights, notes = weights_from_row(ns), ()
    if params.lexical_weight is not None:
        weights = FusionWeights(
            params.lexical_weight, "requested", "set by the caller for this search"
        )
    elif (
        weights.source == DEFAULT_WEIGHTS.source
    ):  # judged queries would have fitted it: only the default yields

        def agreed() -> Reading | None:  # read (and its measure started) only where it decides
            return meaning_spread.namespace_agreement(ns["id"], sum(ns["passage_configs"].values()))

        weights, notes = unjudged_weights(ns["document_languages"], query, agreed)
    foreign = foreign_passages(ns["passage_models"], get_embedder().model_id)
    models = meaning_models(foreign)
    if models is not None and VECTOR not in {note.channel for note in notes}:
        notes = (
            *notes,
            models,
        )  # whatever the weights, fitted or asked for: vectors of another model mean nothing
        if foreign.whole:
            weights = words_alone(foreign.clause(), "model")
    features = analyse(query)
    return Plan(
        query=query,
        namespace=namespace,
        weights=weights,
        features=features,
        documents_wanted=documents_wanted,
        scope=Scope(
            ns["id"],
            tuple(filters.source_ids),
            tuple(filters.document_ids),
            tuple(a for a in ns["audiences"] if reach is None or a in reach),
        ),
        params=RankerParams(
            **{**params.__dict__, "limit": limit, "lexical_weight": weights.lexical}
        ),
        depth=min(
            1000, max(100, 2 * (documents_wanted or limit))
        ),  # grouped: sections come from the same pool
        configs=query_words.lexing_configs(
            ns["language"],
            ns["passage_configs"],
            ns["document_languages"],
            query,
            ns["relexing"],
            features.identifiers,
        ),
        notes=notes,
        passages=sum(ns["passage_configs"].values()),
        model=get_embedder().model_id if models is not None and models.state == "partial" else "",
    )


def unjudged_weights(
    document_languages: dict[str, int],
    query: str = "",
    agreed: Reading | Callable[[], Reading | None] | None = None,
) -> tuple[FusionWeights, tuple[ChannelNote, ...]]:
    """The weights of a `query` in a namespace without fitted ones, and the channels they leave
    out. Where most documents are in languages the model is not said to read (`meaning_decision`),
    a query the detector places decides (its own language's words alone, or meaning kept);
    otherwise how well the model reads the namespace's headings (`agreed`, or a function reading
    it, called only here; `retrieval.agreement`) grades meaning (`graded_weights`:
    weighing less than words, or left out), and until it is measured, words alone. Elsewhere,
    equal weights."""
    decision = meaning_decision(document_languages, kb_settings().embedding_languages, query)
    asked = language_name(decision.query_language) if decision.query_language else ""
    if not decision.used:
        measured = agreed() if callable(agreed) else agreed
        if not asked and measured is not None:
            graded = graded_weights(measured)
            return graded, ((meaning_disagrees(measured),) if graded.lexical == 1.0 else ())
        clause = unread_clause(decision.share, decision.languages, asked)
        return words_alone(f"{clause}, {WORDS_ALONE}"), (
            meaning_unread(decision.share, decision.languages, asked),
        )
    if (
        asked
    ):  # most documents are in languages the model does not read; this query's brings meaning back
        return meaning_kept(decision.share, decision.languages, asked), ()
    return DEFAULT_WEIGHTS, ()


def namespace_row(slug: str) -> dict | None:
    """The namespace's id, what its queries are lexed with, its audiences and its fusion weights
    (`WEIGHT_FIELDS`), in one statement: every search starts here, and the ORM's version of this
    read cost a millisecond more at p50."""
    with read_connection().cursor() as cursor:
        cursor.execute(
            "SELECT n.id, n.language, n.document_languages::text, n.passage_configs::text, "
            "n.relexing, n.passage_models::text, "
            "ARRAY(SELECT a.id FROM kb_audience a WHERE a.namespace_id = n.id ORDER BY a.id), "
            "f.lexical_weight, f.version, f.fitted_at, f.fitted_on, f.queries, "
            "f.cross_validated_ndcg, f.default_ndcg FROM kb_namespace n LEFT JOIN "
            "kb_fusioncalibration f ON f.namespace_id = n.id WHERE n.slug = %s",
            [slug],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    return {
        "id": row[0],
        "language": row[1],
        "document_languages": json.loads(row[2]),
        "passage_configs": json.loads(row[3]),
        "relexing": row[4],
        "passage_models": json.loads(row[5]),
        "audiences": tuple(row[6]),
        **dict(zip(WEIGHT_FIELDS, row[7:], strict=True)),
    }
