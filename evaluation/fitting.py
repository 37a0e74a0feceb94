"""Fit a namespace's fusion weight to its judged queries (`retrieval.fusion` reads it back).

`fit_weights` fits and cross-validates and stores nothing, which is what a benchmark uses;
`fit_namespace` also stores the result as the namespace's `FusionCalibration`, which every later
search there uses and names in its explanation.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from django.db.models import F
from django.utils import timezone

from evaluation.errors import EvalFileError
from evaluation.metrics import per_query_ndcg
from evaluation.search_parts import search_variant
from kb.models import Document, FusionCalibration, Namespace
from retrieval.fusion import WEIGHT_GRID, Fit, fit_weight
from retrieval.ranker import CHANNELS, RankerParams

RANKED_DOCUMENTS = 100


def judged_runs(
    namespace: str,
    queries: dict[str, str],
    *,
    params: RankerParams | None = None,
    vectors: dict | None = None,
    channels=None,
    fusion: str = "ranker",
    depth: int = RANKED_DOCUMENTS,
) -> dict[str, list[str]]:
    """Per query id, the refs of the documents found, best first (at most `depth`)."""
    refs = dict(Document.objects.filter(namespace__slug=namespace).values_list("id", "ref"))
    runs = {}
    for qid, text in queries.items():
        result = search_variant(
            text,
            namespace,
            limit=3 * depth,
            params=params,
            fusion=fusion,
            channels=channels or CHANNELS,
            query_vector=(vectors or {}).get(qid),
        )
        runs[qid] = list(dict.fromkeys(refs[hit.document_id] for hit in result.hits))[:depth]
    return runs


@dataclass(frozen=True)
class Calibration:
    fit: Fit
    runs: dict[float, dict[str, list[str]]]  # per grid weight, per query: the documents found
    record: FusionCalibration | None  # None: fitted, not stored

    def held_out_runs(self) -> dict[str, list[str]]:
        """Each query's documents under the weight fitted without it: the honest figure."""
        return {q: self.runs[w][q] for q, w in self.fit.chosen_per_query.items()}


def fit_weights(
    namespace: str,
    queries: dict[str, str],
    judgements: dict[str, dict[str, int]],
    *,
    vectors: dict | None = None,
    progress=None,
) -> Calibration:
    """Fit the namespace's lexical weight to judged queries (graded gains per document ref),
    storing nothing. `progress(done, total)` is called after each grid weight."""
    judged = {q: text for q, text in queries.items() if q in judgements}
    runs, scores = {}, {}
    for done, weight in enumerate(WEIGHT_GRID, start=1):
        runs[weight] = judged_runs(
            namespace, judged, params=RankerParams(lexical_weight=weight), vectors=vectors
        )
        scores[weight] = per_query_ndcg(runs[weight], {q: judgements[q] for q in judged})
        if progress:
            progress(done, len(WEIGHT_GRID))
    return Calibration(fit=fit_weight(scores), runs=runs, record=None)


def store_calibration(namespace: str, calibration: Calibration, *, fitted_on: str) -> Calibration:
    """Store a fit as the namespace's `FusionCalibration` (a new version when one exists), which
    every later search there uses."""
    ns = Namespace.objects.get(slug=namespace)
    fit = calibration.fit
    values = dict(
        lexical_weight=fit.weight,
        fitted_on=fitted_on[:200],
        queries=len(calibration.runs[fit.weight]),
        cross_validated_ndcg=round(fit.cross_validated, 4),
        default_ndcg=round(fit.default_score, 4),
        fitted_at=timezone.now(),
    )
    updated = FusionCalibration.objects.filter(namespace=ns).update(
        version=F("version") + 1, **values
    )
    if not updated:
        FusionCalibration.objects.create(namespace=ns, **values)
    return replace(calibration, record=FusionCalibration.objects.get(namespace=ns))


def fit_namespace(
    namespace: str,
    queries: dict[str, str],
    judgements: dict[str, dict[str, int]],
    *,
    fitted_on: str,
    vectors: dict | None = None,
    progress=None,
) -> Calibration:
    """Fit the namespace's lexical weight to judged queries and store it (`fit_weights`, then
    `store_calibration`)."""
    Namespace.objects.get(slug=namespace)  # a missing namespace fails before the grid runs
    calibration = fit_weights(namespace, queries, judgements, vectors=vectors, progress=progress)
    return store_calibration(namespace, calibration, fitted_on=fitted_on)


def suite_judgements(suite) -> tuple[str, dict[str, str], dict[str, dict[str, int]]]:
    """The namespace, questions and judgements (each `relevant` ref gains 1) of an eval suite's
    cases that name relevant documents; a fit needs them all in one namespace."""
    judged = [case for case in suite.cases if case.expect.relevant]
    namespaces = {case.namespace for case in judged}
    if not judged:
        raise EvalFileError(
            "No case names `relevant` documents: there is nothing to fit the weights to."
        )
    if len(namespaces) > 1:
        raise EvalFileError(
            f"The judged cases search {len(namespaces)} namespaces; a fit is per namespace.",
            details={"namespaces": sorted(namespaces)},
        )
    return (
        namespaces.pop(),
        {case.id: case.question for case in judged},
        {case.id: {ref: 1 for ref in case.expect.relevant} for case in judged},
    )
