"""Benchmark plumbing for `kb_bench`: BEIR files, trec_eval-style metrics, latency percentiles.

Metrics follow trec_eval (graded nDCG, ideal ranking from all judged relevant documents); averages
run over every judged query, a query with no results scoring 0. `paired_comparison` gives a
sign-flip test's p-value, so a change that wins on average through a few queries, or on one corpus
only, is visible at once.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class BeirCorpus:
    name: str
    documents: list[dict]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def load_beir(folder: str | Path, split: str = "test") -> BeirCorpus:
    folder = Path(folder)
    documents = [
        json.loads(line)
        for line in (folder / "corpus.jsonl").open(encoding="utf-8")
        if line.strip()
    ]
    queries = {}
    for line in (folder / "queries.jsonl").open(encoding="utf-8"):
        if line.strip():
            row = json.loads(line)
            queries[str(row["_id"])] = row["text"]
    qrels: dict[str, dict[str, int]] = {}
    for number, line in enumerate((folder / "qrels" / f"{split}.tsv").open(encoding="utf-8")):
        parts = line.strip().split("\t")
        if len(parts) < 3:
            continue
        if number == 0 and not parts[2].lstrip("-").isdigit():
            continue  # header line
        qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    judged = {qid: text for qid, text in queries.items() if qid in qrels}
    return BeirCorpus(folder.name, documents, judged, qrels)


def ndcg_at(ranked: list[str], gains: dict[str, int], k: int = 10) -> float:
    dcg = sum(
        gains.get(doc, 0) / math.log2(i + 2)
        for i, doc in enumerate(ranked[:k])
        if gains.get(doc, 0) > 0
    )
    ideal = sorted((g for g in gains.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], gains: dict[str, int], k: int = 100) -> float:
    relevant = {doc for doc, g in gains.items() if g > 0}
    return len(relevant & set(ranked[:k])) / len(relevant) if relevant else 0.0


def mrr_at(ranked: list[str], gains: dict[str, int], k: int = 10) -> float:
    for i, doc in enumerate(ranked[:k]):
        if gains.get(doc, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def mean_scores(runs: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    queries = list(qrels)
    return {
        "ndcg@10": round(
            sum(ndcg_at(runs.get(q, []), qrels[q]) for q in queries) / len(queries), 4
        ),
        "recall@100": round(
            sum(recall_at(runs.get(q, []), qrels[q]) for q in queries) / len(queries), 4
        ),
        "mrr@10": round(sum(mrr_at(runs.get(q, []), qrels[q]) for q in queries) / len(queries), 4),
    }


def per_query_ndcg(
    runs: dict[str, list[str]], qrels: dict[str, dict[str, int]]
) -> dict[str, float]:
    return {q: ndcg_at(runs.get(q, []), qrels[q]) for q in qrels}


def paired_comparison(
    a: dict[str, float], b: dict[str, float], *, rounds: int = 10_000, seed: int = 0
) -> dict[str, float | int]:
    """Method a against method b over the same queries: wins, losses and ties of a (differences
    within 1e-9 tie), the mean difference, and the randomisation test's two-sided p-value."""
    differences = [a[q] - b[q] for q in a if q in b]
    wins = sum(1 for d in differences if d > 1e-9)
    losses = sum(1 for d in differences if d < -1e-9)
    if not differences:
        return {"wins": 0, "losses": 0, "ties": 0, "mean_difference": 0.0, "p_value": 1.0}
    observed = abs(sum(differences))
    generator = random.Random(seed)
    extreme = sum(
        1
        for _ in range(rounds)
        if abs(sum(d if generator.random() < 0.5 else -d for d in differences)) >= observed - 1e-12
    )
    return {
        "wins": wins,
        "losses": losses,
        "ties": len(differences) - wins - losses,
        "mean_difference": round(sum(differences) / len(differences), 4),
        "p_value": round((extreme + 1) / (rounds + 1), 4),
    }


def percentiles(samples_ms: list[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)
    if not ordered:
        return {"p50_ms": 0.0, "p95_ms": 0.0, "p99_ms": 0.0}

    def pick(p):
        index = min(len(ordered) - 1, max(0, math.ceil(p / 100 * len(ordered)) - 1))
        return round(ordered[index], 2)

    return {"p50_ms": pick(50), "p95_ms": pick(95), "p99_ms": pick(99)}
