"""Where a model's strong matches start: the best cosine of a namespace's own questions against
that of questions about other subjects, searched through the service with the deployment's model.

    .venv/bin/python manage.py kb_strong_cosine --namespace bench-en \
        --questions ../handbook/en/queries.jsonl --off-topic ../shared/bench/scifact/queries.jsonl

A floor (`kb.embedding.embedders.strong_cosine`) sits well where it lies above the best passage of
nearly every off-subject question and below that of nearly every question the namespace answers. No
judgements are read. Results: docs/searching.md#strong-matches.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from kb.embedding.embedders import get_embedder, strong_floor
from retrieval.service import search


def read_questions(path: str, limit: int) -> list[str]:
    text = Path(path).read_text(encoding="utf-8")
    if path.endswith(".jsonl"):
        found = [json.loads(line)["text"] for line in text.splitlines() if line.strip()]
    else:
        found = [case["question"] for case in json.loads(text)["cases"]]
    return found[:limit]


def searched(namespace: str, texts: list[str]) -> list[tuple[float, bool]]:
    """Per question: the best cosine among its results (-1 when meaning was not used), and
    whether the service found a strong match (cited a document)."""
    found = []
    for text in texts:
        result = search(text, namespace, limit=10, group="document", log=False)
        cosines = [d.best_cosine for d in result.documents if d.best_cosine is not None]
        found.append((max(cosines, default=-1.0), bool(result.cited)))
    return found


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))]


class Command(BaseCommand):
    help = " ".join(__doc__.split("\n\n")[0].split())  # the first paragraph, on one line

    def add_arguments(self, parser):
        parser.add_argument("--namespace", required=True)
        parser.add_argument("--questions", required=True, help="The namespace's own questions")
        parser.add_argument(
            "--off-topic", nargs="+", required=True, help="Questions about other subjects"
        )
        parser.add_argument("--limit", type=int, default=100, help="Questions read per file")

    def handle(self, *, namespace, questions: str, off_topic: list[str], limit: int, **_):
        floor, why = strong_floor()
        self.stdout.write(
            f"{namespace}, {get_embedder().model_id}, strong from cosine {floor} ({why})"
        )
        self.stdout.write("questions | n | best cosine p5 / p50 / p95 | share with a strong match")
        rows = [("own", questions)] + [("off-topic", path) for path in off_topic]
        for label, path in rows:
            found = searched(namespace, read_questions(path, limit))
            if not found:
                raise CommandError(f"{path} holds no questions")
            best = [cosine for cosine, _ in found]
            spread = " / ".join(f"{percentile(best, share):.3f}" for share in (0.05, 0.5, 0.95))
            strong = sum(cited for _, cited in found) / len(found)
            self.stdout.write(
                f"{label} ({Path(path).parent.name}/{Path(path).name}) | {len(found)} | {spread} | "
                f"{strong:.0%}"
            )
