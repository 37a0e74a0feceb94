"""Measure the answer path on a BEIR folder of claims: checker, gate and latency before the model.

    python manage.py kb_answer_bench --beir DIR [--queries N] [--latency-queries N]
        [--answer-tokens N] [--json]

The latency is measured against the model in KB_ANSWER_URL, and skipped without one.
"""

from __future__ import annotations

import json as jsonlib
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evaluation.answer_bench import LABELS, AnswerBenchmark, AnswerBenchOptions
from evaluation.management.commands.kb_bench import ProgressBars
from kb.migrated import migration_hint


class Command(BaseCommand):
    help = (
        "Measure grounded answers on a BEIR folder of claims: the honesty gate, the citation "
        "checker, latency."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--beir", required=True, help="Folder with corpus.jsonl, queries.jsonl, qrels/test.tsv"
        )
        parser.add_argument(
            "--namespace",
            help="Namespace of the whole corpus (default bench-<folder>, as kb_bench); "
            "the corpus less the claims' evidence goes in <namespace>-no-evidence",
        )
        parser.add_argument(
            "--queries", type=int, default=0, help="Use only the first N claims (quick runs)"
        )
        parser.add_argument(
            "--latency-queries",
            type=int,
            default=20,
            help="Answers to time through the configured model (default 20)",
        )
        parser.add_argument(
            "--answer-tokens",
            type=int,
            default=0,
            help="Cap each timed answer at this many tokens (default: KB_ANSWER_MAX_TOKENS)",
        )
        parser.add_argument(
            "--labels",
            type=Path,
            default=LABELS,
            help="Hand-labelled sentences for the citation checker (default: the SciFact labels)",
        )
        parser.add_argument("--skip-gate", action="store_true")
        parser.add_argument("--skip-citations", action="store_true")
        parser.add_argument("--skip-latency", action="store_true")
        parser.add_argument(
            "--json", action="store_true", help="Print one JSON object as the last line"
        )

    def handle(
        self,
        *args,
        beir,
        namespace,
        queries: int,
        latency_queries: int,
        answer_tokens: int,
        labels: Path,
        skip_gate: bool,
        skip_citations: bool,
        skip_latency: bool,
        json: bool,
        **options,
    ):
        hint = migration_hint()
        if hint:
            raise CommandError(hint)
        if not Path(beir, "corpus.jsonl").is_file():
            raise CommandError(
                f"--beir {beir!r} holds no corpus.jsonl: give a BEIR folder (corpus.jsonl, "
                "queries.jsonl, qrels/test.tsv)."
            )
        if not skip_citations and not labels.is_file():
            raise CommandError(f"--labels {str(labels)!r} does not exist.")
        settings = AnswerBenchOptions(
            queries=queries,
            latency_queries=latency_queries,
            answer_tokens=answer_tokens,
            skip_gate=skip_gate,
            skip_citations=skip_citations,
            skip_latency=skip_latency,
            labels=labels,
        )
        with ProgressBars(self.stderr) as bars:
            report = AnswerBenchmark(
                beir, settings, namespace=namespace, progress=bars.update, log=self.stderr.write
            ).run()
        print_report(self.stdout.write, report)
        if json:
            self.stdout.write(
                jsonlib.dumps(report, sort_keys=True, default=str, ensure_ascii=False)
            )


def _share(value) -> str:
    return "–" if value is None else f"{value:.3f}"


def print_report(write, report: dict) -> None:
    write(
        f"{report['corpus']}: {report['claims']} claims; answerable in {report['namespace']}, "
        "unanswerable in "
        f"{report['namespace_without_evidence']}"
    )
    c = report.get("citations")
    if c:
        write(
            f"\ncitation checker vs hand labels: {c['agree']} of {c['sentences']} sentences agree "
            f"({c['agreement']:.1%}); "
            + ", ".join(f"labelled {k}: {v}" for k, v in c["confusion"].items())
        )
        write(
            "  by kind: "
            + "; ".join(f"{kind} {k['agree']}/{k['sentences']}" for kind, k in c["kinds"].items())
        )
        for split, part in c["splits"].items():
            write(
                f"  {split} labels: {part['agree']} of {part['sentences']} "
                f"({part['agreement']:.1%}); "
                + ", ".join(f"labelled {k}: {v}" for k, v in part["confusion"].items())
            )
        t = c["threshold"]
        if t["chosen_on_tuning"] is not None:
            write(
                f"  threshold chosen on the tuning labels: {t['chosen_on_tuning']} (the "
                f"product's: {t['product']}); "
                "at it: "
                + "; ".join(
                    f"{split} {part['agree']} of {part['sentences']} ({part['agreement']:.1%})"
                    for split, part in t["at_chosen"].items()
                )
            )
        p = c["planted_wrong_citations"]
        write(
            "  planted wrong citations (a supported sentence cited to the other "
            f"source): {p['caught']} of "
            f"{p['planted']} caught"
        )
    g = report.get("gate")
    if g:
        write(
            f"\nhonesty gate (strong cosine {g['strong_cosine']}, words "
            f"share {g['words_share']}), abstaining "
            "as the positive class; claims split by id "
            f"(seed {g['split']['seed']}): {g['split']['tuning']} "
            f"tuning, {g['split']['held_out']} held out"
        )
        write(
            f"{'half':<9} {'variant':<26} {'abstention precision':>20} {'recall':>7} {'answer precision':>16} "  # noqa: E501
            f"{'answered answerable':>19}"
        )
        for half, variants in (("all", g["variants"]), *g["halves"].items()):
            for name, v in variants.items():
                write(
                    f"{half:<9} {name:<26} {_share(v['abstention_precision']):>20} "
                    f"{_share(v['abstention_recall']):>7} {_share(v['answer_precision']):>16} "
                    f"{_share(v['answered_answerable']):>19}"
                )
        w = g["words_share_chosen_on_tuning"]
        write(
            f"  words share chosen on the tuning half (the highest answering at least "
            f"{w['answered_at_least']:.0%} of its answerable claims): {w['chosen']}; tried: "
            + ", ".join(
                f"{share} ({_share(v['answered_answerable'])} answered, "
                f"{_share(v['abstention_recall'])} abstained)"
                for share, v in w["tuning_by_share"].items()
            )
        )
        for half, v in (w["at_chosen"] or {}).items():
            write(
                f"  at {w['chosen']}, {half}: abstention "
                f"precision {_share(v['abstention_precision'])}, recall "
                f"{_share(v['abstention_recall'])}; answer "
                f"precision {_share(v['answer_precision'])}, answered "
                f"answerable {_share(v['answered_answerable'])}"
            )
        write(
            "  rules that decided: "
            + "; ".join(
                f"{kind}: " + ", ".join(f"{rule} {n}" for rule, n in rules.items())
                for kind, rules in g["rules"].items()
            )
        )
        e = g["answered_with_evidence_among_sources"]
        write(
            "  answered answerable claims with a qrels document among the "
            f"sources: {e['with_evidence']} of "
            f"{e['answered']} (of {e['evidence_among_sources']} claims whose evidence is among "
            "the sources)"
        )
    t = report.get("latency")
    if t:
        if "skipped" in t:
            write(f"\nlatency: skipped, {t['skipped']}")
        else:
            b = t["before_model"]
            verdict = "within" if t["within_limit"] else "OVER"
            write(
                f"\nlatency the product adds before the model, beyond retrieval ({t['answers']} "
                "answers by "
                f"{t['model']}, at most {t['answer_tokens']} tokens each): p50 {b['p50_ms']} ms, "
                f"p95 {b['p95_ms']} "
                f"ms ({verdict} the {t['limit_ms']} ms limit); retrieval "
                f"p50 {t['retrieval']['p50_ms']} ms, "
                f"p95 {t['retrieval']['p95_ms']} ms; the model's first token "
                f"p50 {t['first_token']['p50_ms']} ms"
                + (f"; errors {t['errors']}" if t["errors"] else "")
            )
