"""How much words weigh against meaning in a namespace: default, graded, or fitted to judgements.

Pure: the standard library and retrieval.agreement. The ranker fuses the z-scores as (1 - w) *
vector + w * lexical (`retrieval.scoring.fuse`). Without judgements w is 0.5: neither channel is
assumed better, and a search log's breadth does not move it
(docs/benchmarks.md#the-default-without-judged-queries). With judged queries w is fitted on a coarse
grid and cross-validated, so the reported figure comes from queries the fit did not see; finer steps
fit noise with tens of queries (Bruch et al. 2023, "An Analysis of Fusion Functions for Hybrid
Retrieval": a convex combination's weight is learnable from few labels).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from retrieval.agreement import Reading

DEFAULT_LEXICAL_WEIGHT = 0.5
WEIGHT_GRID = (0.0, 0.25, 0.5, 0.75, 1.0)
FOLDS = 5


@dataclass(frozen=True)
class FusionWeights:
    """The weights a search used and what set them, as the explanation shows them."""

    lexical: float
    # default, agreement, fitted, requested; meaning left out (`words_alone`): language,
    # model
    source: str
    reason: str
    fitted_at: datetime | None = None
    version: int = 0

    @property
    def vector(self) -> float:
        return round(1.0 - self.lexical, 6)


DEFAULT_WEIGHTS = FusionWeights(
    DEFAULT_LEXICAL_WEIGHT,
    "default",
    "default: equal weights, no judged queries fitted for this namespace",
)


def words_alone(reason: str, source: str = "language") -> FusionWeights:
    """Meaning left out, for the `reason` the search's note gives: a language the model does not
    read, or passages embedded by another model (`source` "model")."""
    return FusionWeights(1.0, source, reason)


def meaning_kept(share: float, languages: str, query_language: str) -> FusionWeights:
    """The default weights where most documents are in languages the model does not read, and the
    query is in one it reads (`kb.model_languages.meaning_decision`)."""
    return FusionWeights(
        DEFAULT_LEXICAL_WEIGHT,
        "default",
        f"default: equal weights, as this query is in {query_language}, which the meaning model "
        f"reads, although {share:.0%} of the documents here are in {languages}",
    )


MEANING_UNREAD = 3.8  # lift (retrieval/agreement.py) under which the model is taken not to read
GRADED_LEXICAL_WEIGHT = (
    0.75  # over it, in a language the model is not said to read: meaning counts, less than words
)


def graded_weights(reading: Reading) -> FusionWeights:
    """The weights of a namespace without judged queries whose documents are mostly in languages
    the model is not said to read (`KB_EMBEDDING_LANGUAGES`), from how well the model reads the
    namespace's own headings (`retrieval.agreement`: how many times chance meaning and words find
    the same passages): words at GRADED_LEXICAL_WEIGHT from MEANING_UNREAD, words alone (lexical
    1.0) below it."""
    if reading.lift >= MEANING_UNREAD:
        return FusionWeights(
            GRADED_LEXICAL_WEIGHT,
            "agreement",
            (
                f"graded: most documents here are in languages the meaning model is not said to "
                f"read, yet it reads them in part: {reading.clause()} ({MEANING_UNREAD:g} times or "
                f"more), so words weigh {GRADED_LEXICAL_WEIGHT} and meaning "
                f"{1 - GRADED_LEXICAL_WEIGHT:g}"
            ),
        )
    return FusionWeights(
        1.0,
        "agreement",
        (
            f"words alone: the meaning model does not read this text: {reading.clause()} (under "
            f"{MEANING_UNREAD:g} times)"
        ),
    )


@dataclass(frozen=True)
class Fit:
    weight: float  # chosen on every judged query: what the namespace will use
    cross_validated: float  # mean score, each query scored with a weight fitted without it
    default_score: float  # mean score with the default weight
    fold_weights: tuple[float, ...]
    chosen_per_query: dict[str, float]  # the weight each query was scored with, held out


def fit_weight(scores: dict[float, dict[str, float]], folds: int = FOLDS) -> Fit:
    """`scores[w][query]`: a per-query metric (nDCG@10) for every grid weight. Queries are split
    into `folds` folds by their sorted ids; each fold is scored with the weight that is best on
    the others. Ties go to the weight nearest the default."""
    if not scores or DEFAULT_LEXICAL_WEIGHT not in scores:
        raise ValueError("scores must hold every grid weight, the default among them")
    queries = sorted(scores[DEFAULT_LEXICAL_WEIGHT])
    if not queries:
        raise ValueError("no judged queries to fit to")
    folds = max(2, min(folds, len(queries)))
    held_out: dict[str, float] = {}
    fold_weights = []
    for fold in range(folds):
        test = set(queries[fold::folds])
        training = [q for q in queries if q not in test]
        weight = (
            _best(scores, training) if training else DEFAULT_LEXICAL_WEIGHT
        )  # never its own fit
        fold_weights.append(weight)
        held_out.update({q: weight for q in test})
    return Fit(
        weight=_best(scores, queries),
        cross_validated=sum(scores[held_out[q]][q] for q in queries) / len(queries),
        default_score=sum(scores[DEFAULT_LEXICAL_WEIGHT][q] for q in queries) / len(queries),
        fold_weights=tuple(fold_weights),
        chosen_per_query=held_out,
    )


def _best(scores: dict[float, dict[str, float]], queries: list[str]) -> float:
    return max(
        scores,
        key=lambda w: (
            round(sum(scores[w][q] for q in queries), 9),
            -abs(w - DEFAULT_LEXICAL_WEIGHT),
        ),
    )


def fitted_reason(
    fitted_on: str,
    queries: int,
    cross_validated: float,
    default_score: float,
    fitted_at: datetime | None,
) -> str:
    date = f" on {fitted_at:%Y-%m-%d}" if fitted_at else ""
    return (
        f"fitted{date} to {queries} judged queries ({fitted_on}): nDCG@10 {cross_validated:.3f} "
        f"cross-validated, against {default_score:.3f} with the default {DEFAULT_LEXICAL_WEIGHT}"
    )


def weights_from_row(row: dict) -> FusionWeights:
    """The weights of a namespace row read with `WEIGHT_FIELDS` (one query with the namespace)."""
    if row.get("fusion__lexical_weight") is None:
        return DEFAULT_WEIGHTS
    return FusionWeights(
        lexical=row["fusion__lexical_weight"],
        source="fitted",
        version=row["fusion__version"],
        fitted_at=row["fusion__fitted_at"],
        reason=fitted_reason(
            row["fusion__fitted_on"],
            row["fusion__queries"],
            row["fusion__cross_validated_ndcg"],
            row["fusion__default_ndcg"],
            row["fusion__fitted_at"],
        ),
    )


WEIGHT_FIELDS = (
    "fusion__lexical_weight",
    "fusion__version",
    "fusion__fitted_at",
    "fusion__fitted_on",
    "fusion__queries",
    "fusion__cross_validated_ndcg",
    "fusion__default_ndcg",
)
