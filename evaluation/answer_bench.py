"""Measure the answer path on a BEIR folder of claims (SciFact), for `kb_answer_bench`.

The gate is measured on a namespace holding the whole corpus (answerable) and one without any
claim's evidence (unanswerable), abstaining being the positive class; the words share is chosen on a
tuning half of the claims (fixed seed) and the held-out half is the figure to read. The citation
checker is scored against hand labels (evaluation/corpora/answer-citation-labels.json) and planted
wrong citations. Latency is `before_model_ms`: from the end of retrieval to the request leaving for
the model.
"""

from __future__ import annotations

import contextlib
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.test.utils import override_settings

from answers import citations, gate
from answers.service import SOURCES, answer_events
from evaluation.metrics import BeirCorpus, load_beir, percentiles
from ingest.service import ingest_texts
from kb.auth import Principal
from kb.conf import kb_settings
from kb.embedding.embedders import get_embedder, strong_cosine
from kb.models import AnswerLog, Document, Namespace, QueryLog, Source
from retrieval.service import SearchResult, search

LABELS = Path(__file__).resolve().parent / "corpora" / "answer-citation-labels.json"
LATENCY_LIMIT_MS = (
    100  # what the product may add before the model's first token, beyond retrieval (p95)
)

# the gate as the product runs it, and with one of its parts or the whole gate taken away
GATE_VARIANTS: dict[str, Callable[[SearchResult, float], gate.Gate]] = {
    "gate": lambda result, floor: gate.decide(result, floor=floor),
    "without the words check": lambda result, floor: gate.decide(
        result, floor=floor, words_share=None
    ),
    "without lexical-confirmed": lambda result, floor: gate.decide(
        result, floor=floor, rules=("strong-match",)
    ),
    "without strong-match": lambda result, floor: gate.decide(
        result, floor=floor, rules=("lexical-confirmed",)
    ),
    "no gate": lambda result, floor: gate.Gate(
        bool(result.hits), "no-gate", "every search with a hit is answered"
    ),
}
GATE_SEED = 60  # the claims' split into a tuning and a held-out half
WORDS_SHARES = tuple(
    round(0.3 + 0.05 * step, 2) for step in range(12)
)  # tried on the tuning half: 0.30-0.85
ANSWERED_AT_LEAST = (
    0.9  # the share of answerable claims the chosen gate must still answer (tuning half)
)

Progress = Callable[[str, int, int], None]


def _quiet(*args) -> None:
    return None


@dataclass(frozen=True)
class AnswerBenchOptions:
    queries: int = 0  # only the first N claims; 0: all
    latency_queries: int = 20  # answers timed through the model (claims the gate lets through)
    answer_tokens: int = (
        0  # cap the answers' length for the latency run (0: the deployment's KB_ANSWER_MAX_TOKENS)
    )
    skip_gate: bool = False
    skip_citations: bool = False
    skip_latency: bool = False
    labels: Path = LABELS


class AnswerBenchmark:
    def __init__(
        self,
        folder,
        options: AnswerBenchOptions,
        *,
        namespace: str | None = None,
        progress: Progress = _quiet,
        log: Callable[[str], None] = _quiet,
    ):
        self.corpus: BeirCorpus = load_beir(folder)
        self.options, self.progress, self.log = options, progress, log
        name = self.corpus.name.lower()
        self.namespace = namespace or f"bench-{name}"  # the same namespace kb_bench ingests
        self.without = f"{self.namespace}-no-evidence"
        self.claims = [
            (qid, text) for qid, text in self.corpus.queries.items() if self.corpus.qrels.get(qid)
        ]
        self.claims = self.claims[: options.queries or None]
        self.evidence = {
            doc for qrels in self.corpus.qrels.values() for doc, grade in qrels.items() if grade > 0
        }

    def run(self) -> dict:
        report: dict = {
            "corpus": self.corpus.name,
            "claims": len(self.claims),
            "namespace": self.namespace,
            "namespace_without_evidence": self.without,
        }
        if not self.options.skip_citations:
            report["citations"] = citation_agreement(self.options.labels, self.corpus)
        if self.options.skip_gate and self.options.skip_latency:
            return report
        report["ingest"] = self.ingest()
        if not self.options.skip_gate:
            report["gate"] = self.gate_report()
        if not self.options.skip_latency:
            report["latency"] = self.latency_report()
        return report

    # --- the two namespaces ---------------------------------------------------------------------
    def ingest(self) -> dict:
        """The whole corpus; and, for the gate, the corpus without any claim's evidence (latency
        alone
        needs only the first)."""
        everything = [
            (str(d["_id"]), d.get("title", ""), d.get("text", "")) for d in self.corpus.documents
        ]
        report = {
            self.namespace: self._ingest(
                self.namespace, everything, f"Benchmark: {self.corpus.name}"
            )
        }
        if not self.options.skip_gate:
            kept = [row for row in everything if row[0] not in self.evidence]
            report[self.without] = self._ingest(
                self.without, kept, f"Benchmark: {self.corpus.name} without the claims' evidence"
            )
        return report

    def _ingest(self, slug: str, documents: list[tuple[str, str, str]], title: str) -> dict:
        namespace, _ = Namespace.objects.get_or_create(slug=slug, defaults={"title": title})
        source, _ = Source.objects.get_or_create(
            namespace=namespace,
            name=f"beir:{self.corpus.name}",
            defaults={"kind": Source.Kind.TEXT, "text": self.corpus.name},
        )
        started = time.perf_counter()
        run = ingest_texts(
            source,
            iter(documents),
            embedder=get_embedder(),
            on_progress=lambda r: self.progress(f"ingest {slug}", r.items_done, len(documents)),
        )
        self.log(
            f"{slug}: run {run.pk} {run.status}, {run.items_changed} "
            f"changed, {run.items_unchanged} unchanged "
            f"in {time.perf_counter() - started:.1f}s"
        )
        return {
            "documents": len(documents),
            "run": run.pk,
            "status": run.status,
            "changed": run.items_changed,
        }

    # --- the honesty gate -----------------------------------------------------------------------
    def gate_report(self) -> dict:
        floor = strong_cosine()
        # per claim id, per kind: whether each variant and each share tried answered, and the
        # product's rule
        rows: dict[str, dict[str, dict]] = {}
        for done, (qid, claim) in enumerate(self.claims, 1):
            vector = get_embedder().embed_query(claim)
            for kind, slug in (("answerable", self.namespace), ("unanswerable", self.without)):
                result = search(
                    claim, slug, limit=SOURCES, group="document", query_vector=vector, log=False
                )
                verdict = GATE_VARIANTS["gate"](result, floor)
                rows.setdefault(qid, {})[kind] = {
                    "variants": {
                        name: variant(result, floor).answer
                        for name, variant in GATE_VARIANTS.items()
                    },
                    "shares": {
                        share: gate.decide(result, floor=floor, words_share=share).answer
                        for share in WORDS_SHARES
                    },
                    "rule": verdict.rule,
                    "evidence": kind == "answerable"
                    and bool(set(self.corpus.qrels[qid]) & _refs(result)),
                }
            self.progress("gate", done, len(self.claims))
        tuning, held_out = split_claims(list(rows), GATE_SEED)
        by_share = {
            share: _abstention_of(rows, tuning, lambda row, s=share: row["shares"][s])
            for share in WORDS_SHARES
        }
        chosen = choose_words_share(by_share)
        halves = {"tuning": tuning, "held-out": held_out, "all": list(rows)}
        report: dict = {
            "strong_cosine": round(floor, 4),
            "words_share": gate.WORDS_SHARE,
            "split": {"seed": GATE_SEED, "tuning": len(tuning), "held_out": len(held_out)},
            "rules": {
                kind: _count(row[kind]["rule"] for row in rows.values())
                for kind in ("answerable", "unanswerable")
            },
        }
        by_half = {
            half: {
                name: _abstention_of(rows, ids, lambda row, n=name: row["variants"][n])
                for name in GATE_VARIANTS
            }
            for half, ids in halves.items()
        }
        report["variants"], report["halves"] = by_half.pop("all"), by_half
        report["words_share_chosen_on_tuning"] = {
            "answered_at_least": ANSWERED_AT_LEAST,
            "chosen": chosen,
            "tuning_by_share": {
                share: {k: figures[k] for k in ("answered_answerable", "abstention_recall")}
                for share, figures in by_share.items()
            },
            "at_chosen": {
                half: _abstention_of(rows, ids, lambda row: row["shares"][chosen])
                for half, ids in halves.items()
                if half != "all"
            }
            if chosen is not None
            else None,
        }
        answered = [
            row["answerable"] for row in rows.values() if row["answerable"]["variants"]["gate"]
        ]
        report["answered_with_evidence_among_sources"] = {
            "answered": len(answered),
            "with_evidence": sum(r["evidence"] for r in answered),
            "evidence_among_sources": sum(row["answerable"]["evidence"] for row in rows.values()),
        }
        return report

    # --- latency before the model ---------------------------------------------------------------
    def latency_report(self) -> dict:
        conf = kb_settings()
        if not conf.answer_url:
            return {"skipped": "no answer model configured (KB_ANSWER_URL)"}
        staff = Principal("staff")
        timings: list[dict] = []
        errors: dict[str, int] = {}
        first_delta: list[float] = []
        overrides = (
            {"KB_ANSWER_MAX_TOKENS": self.options.answer_tokens}
            if self.options.answer_tokens
            else {}
        )
        wanted = self.options.latency_queries
        with override_settings(**overrides), _settings_read_again():
            for _, claim in self.claims:
                if len(timings) >= wanted or sum(errors.values()) >= wanted:
                    break  # enough answers timed, or the model keeps failing (the errors say why)
                started, delta_at, answer_id, answered = time.perf_counter(), None, None, False
                for event in answer_events(
                    staff, [self.namespace], claim, stream=True, caller=QueryLog.Caller.INTERNAL
                ):
                    if event["event"] == "gate":
                        answered = event["answer"]
                    elif event["event"] == "delta" and delta_at is None:
                        delta_at = time.perf_counter()
                    elif event["event"] == "error":
                        errors[event["code"]] = errors.get(event["code"], 0) + 1
                    elif event["event"] == "done":
                        answer_id = event["answer_id"]
                if not answered or answer_id is None:
                    continue
                row = AnswerLog.objects.get(pk=answer_id)
                if "before_model_ms" in row.timings:
                    timings.append(row.timings)
                    if delta_at is not None:
                        first_delta.append((delta_at - started) * 1000)
                self.progress("latency", len(timings), wanted)

        def spread(key: str) -> dict:
            return percentiles([t[key] for t in timings if key in t])

        added = spread("before_model_ms")
        return {
            "model": conf.answer_model,
            "answers": len(timings),
            "errors": errors,
            "answer_tokens": self.options.answer_tokens or conf.answer_max_tokens,
            "before_model": added,
            "retrieval": spread("retrieval_ms"),
            "first_token": spread("first_token_ms"),
            "first_delta_seen": percentiles(first_delta),
            "limit_ms": LATENCY_LIMIT_MS,
            "within_limit": bool(timings) and added["p95_ms"] <= LATENCY_LIMIT_MS,
        }


@contextlib.contextmanager
def _settings_read_again():
    """The product reads its settings once (`kb_settings` is cached): read them again inside and
    after."""
    kb_settings.cache_clear()
    try:
        yield
    finally:
        kb_settings.cache_clear()


def _refs(result: SearchResult) -> set[str]:
    """The corpus ids of a search's documents (each document's `ref` is its BEIR id)."""
    ids = [group.document_id for group in result.documents]
    return set(Document.objects.filter(pk__in=ids).values_list("ref", flat=True))


def split_claims(ids: list[str], seed: int) -> tuple[list[str], list[str]]:
    """The claims in two halves, by id and a fixed seed: what a rule is chosen on, and what scores
    it."""
    ordered = sorted(ids, key=lambda qid: (len(qid), qid))
    tuning = set(random.Random(seed).sample(ordered, len(ordered) // 2))
    return [q for q in ordered if q in tuning], [q for q in ordered if q not in tuning]


def choose_words_share(by_share: dict[float, dict]) -> float | None:
    """The highest share of the question's words that still answers ANSWERED_AT_LEAST of the
    answerable claims (figures of the tuning half); None when no share does."""
    kept = [
        share
        for share, figures in by_share.items()
        if (figures["answered_answerable"] or 0) >= ANSWERED_AT_LEAST
    ]
    return max(kept, default=None)


def _abstention_of(
    rows: dict[str, dict[str, dict]], ids: list[str], answered: Callable[[dict], bool]
) -> dict:
    return abstention(
        [answered(rows[qid]["answerable"]) for qid in ids],
        [answered(rows[qid]["unanswerable"]) for qid in ids],
    )


def _count(values) -> dict[str, int]:
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return counts


def abstention(answerable: list[bool], unanswerable: list[bool]) -> dict:
    """Abstention as the positive class, from whether the gate answered each claim of each set."""
    abstained_right = sum(1 for answered in unanswerable if not answered)
    abstained_wrong = sum(1 for answered in answerable if not answered)
    abstained = abstained_right + abstained_wrong
    answered_right, answered = (
        len(answerable) - abstained_wrong,
        len(answerable) + len(unanswerable) - abstained,
    )
    return {
        "abstention_precision": round(abstained_right / abstained, 4) if abstained else None,
        "abstention_recall": round(abstained_right / len(unanswerable), 4)
        if unanswerable
        else None,
        "answer_precision": round(answered_right / answered, 4) if answered else None,
        "answered_answerable": round(1 - abstained_wrong / len(answerable), 4)
        if answerable
        else None,
        "abstained": {"answerable": abstained_wrong, "unanswerable": abstained_right},
        "claims": {"answerable": len(answerable), "unanswerable": len(unanswerable)},
    }


# --- the citation checker -----------------------------------------------------------------------
SHARES = tuple(
    round(0.4 + 0.05 * step, 2) for step in range(10)
)  # thresholds tried on the tuning half: 0.40-0.85


def citation_agreement(labels_path: Path, corpus: BeirCorpus) -> dict:
    """The checker's verdicts against the hand labels, overall and per split, and on planted errors.

    The threshold is chosen on the "tuning" split alone (`choose_share`) and every other split is
    reported at it. Each sentence is checked alone against its case's sources; each supported one is
    then given a wrong citation, which the checker should call unsupported.
    """
    labels = json.loads(Path(labels_path).read_text(encoding="utf-8"))
    documents = {
        str(d["_id"]): f"{d.get('title', '')}\n\n{d.get('text', '')}" for d in corpus.documents
    }
    cases = [
        (
            case.get("split", "held-out"),
            {int(n): documents[ref] for n, ref in case["sources"].items()},
            case,
        )
        for case in labels["cases"]
    ]
    splits = list(dict.fromkeys(split for split, _, _ in cases))
    rows = _verdicts(cases, citations.SUPPORTED_SHARE)
    tuned = "tuning" in splits
    sweep = {
        share: sum(r["agrees"] for r in _verdicts(cases, share) if r["split"] == "tuning")
        for share in (SHARES if tuned else ())
    }
    chosen = choose_share(sweep) if tuned else None
    at_chosen = _verdicts(cases, chosen) if tuned else []
    planted, split_agrees = [], 0
    for _, sources, case in cases:
        texts = [s["text"] for s in case["sentences"]]
        split_agrees += citations.split_sentences(" ".join(texts)) == texts
        for sentence in case["sentences"]:
            cited = citations.citations_of(sentence["text"])
            if sentence["label"] == "supported" and len(cited) == 1:
                other = next(n for n in sources if n != cited[0])
                moved = citations.MARKER.sub(f"[{other}]", sentence["text"])
                planted.append(citations.check(moved, sources).sentences[0].verdict != "supported")
    return {
        **_agreement(rows),
        "cases": len(cases),
        "split_as_labelled": split_agrees,
        "splits": {split: _agreement([r for r in rows if r["split"] == split]) for split in splits},
        "threshold": {
            "product": citations.SUPPORTED_SHARE,
            "chosen_on_tuning": chosen,
            "tuning_agree_by_share": sweep,
            "at_chosen": {
                split: _agreement([r for r in at_chosen if r["split"] == split])
                for split in splits
                if split != "tuning" and tuned
            },
        },
        "planted_wrong_citations": {"planted": len(planted), "caught": sum(planted)},
        "disagreements": [r for r in rows if not r["agrees"]],
    }


def choose_share(agree_by_share: dict[float, int]) -> float:
    """The threshold with the most agreement; among equals, the middle of the longest run of them
    (a plateau's middle is the choice least tied to one label)."""
    shares = sorted(agree_by_share)
    best = max(agree_by_share.values())
    runs, run = [], []
    for share in shares:
        if agree_by_share[share] == best:
            run.append(share)
        elif run:
            runs.append(run)
            run = []
    runs.append(run)
    longest = max((r for r in runs if r), key=len)
    return longest[(len(longest) - 1) // 2]


def _verdicts(cases: list[tuple[str, dict[int, str], dict]], share: float) -> list[dict]:
    rows = []
    for split, sources, case in cases:
        for sentence in case["sentences"]:
            checked = citations.check(sentence["text"], sources, share=share).sentences
            verdict = checked[0].verdict if len(checked) == 1 else "split"
            said = "supported" if verdict == "supported" else "unsupported"
            rows.append(
                {
                    "text": sentence["text"],
                    "kind": sentence["kind"],
                    "label": sentence["label"],
                    "split": split,
                    "verdict": verdict,
                    "agrees": said == sentence["label"],
                    "reason": checked[0].reason if checked else "",
                }
            )
    return rows


def _agreement(rows: list[dict]) -> dict:
    agree = sum(r["agrees"] for r in rows)
    kinds: dict[str, dict[str, int]] = {}
    for r in rows:
        k = kinds.setdefault(r["kind"], {"sentences": 0, "agree": 0})
        k["sentences"] += 1
        k["agree"] += r["agrees"]
    confusion = {
        f"{label} → {said}": sum(
            1
            for r in rows
            if r["label"] == label
            and ("supported" if r["verdict"] == "supported" else "unsupported") == said
        )
        for label in ("supported", "unsupported")
        for said in ("supported", "unsupported")
    }
    return {
        "sentences": len(rows),
        "agree": agree,
        "agreement": round(agree / len(rows), 4) if rows else None,
        "confusion": confusion,
        "kinds": kinds,
    }
