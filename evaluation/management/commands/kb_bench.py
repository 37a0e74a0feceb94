"""Benchmark ingest and retrieval on BEIR folders (`evaluation/benchmark.py`), and print tables.

    python manage.py kb_bench --beir DIR… [--namespace NS] [--runtimes RUNTIME…] [--keep-fit]
        [--json]

The fitted ranker is stored on the namespace only with `--keep-fit`. With `--runtimes` each corpus
is ingested once per document runtime, each in its own namespace.
"""

from __future__ import annotations

import json as jsonlib
from dataclasses import replace

from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from tqdm import tqdm

from evaluation.benchmark import LATENCY_LIMIT, BenchOptions, CorpusBenchmark
from evaluation.errors import BenchmarkIngestFailed
from evaluation.provenance import measured_with
from kb.conf import DOCUMENT_RUNTIMES, kb_settings
from kb.migrated import migration_hint


class Command(BaseCommand):
    help = "Benchmark ingest and retrieval on a BEIR-format folder."

    def add_arguments(self, parser):
        parser.add_argument(
            "--beir",
            required=True,
            nargs="+",
            help="Folders with corpus.jsonl, queries.jsonl, qrels/test.tsv; several are measured "
            "in one run and compared side by side",
        )
        parser.add_argument(
            "--namespace", help="Namespace to ingest into (default bench-<folder>; one folder only)"
        )
        parser.add_argument(
            "--json",
            action="store_true",
            help="Print one JSON object as the last line, with the processor, packages and "
            "database it was measured with (measured_with)",
        )
        parser.add_argument(
            "--queries", type=int, default=0, help="Use only the first N queries (quick runs)"
        )
        parser.add_argument("--skip-latency", action="store_true")
        parser.add_argument(
            "--skip-quality", action="store_true", help="Only ingest, latency and scaling"
        )
        parser.add_argument(
            "--skip-throughput",
            action="store_true",
            help="Do not time the model alone on the corpus (its raw embedding rate): a quality "
            "run with a slow model spends most of its time there",
        )
        parser.add_argument(
            "--fresh",
            action="store_true",
            help="Delete the namespace's documents first, so ingest throughput is measured",
        )
        parser.add_argument(
            "--scale-chunks",
            type=int,
            default=0,
            help="Also measure latency on a namespace of this many chunks (copies of the corpus)",
        )
        parser.add_argument(
            "--lexical-agreement",
            action="store_true",
            help="Also compare the lexical channel's packed read with the postings table's (top "
            "100, every query), on the corpus and on the scaled copy",
        )
        parser.add_argument(
            "--admin",
            action="store_true",
            help="Also time the curator's changelists and pages over the corpus (and the scaled "
            "copy)",
        )
        parser.add_argument(
            "--audiences",
            action="store_true",
            help="Also time search with half the documents limited to a group (as a reader outside "
            "it and inside it) and with every document limited to one of two groups, beside the "
            "open namespace in the same run (evaluation/audience_bench.py)",
        )
        parser.add_argument(
            "--mcp",
            action="store_true",
            help="Also time every MCP tool next to its JSON API twin, and the MCP overhead over "
            "/api/search (p95)",
        )
        parser.add_argument(
            "--runtimes",
            nargs="+",
            choices=DOCUMENT_RUNTIMES,
            default=[],
            help="Ingest each corpus once per document runtime, each into "
            "bench-<corpus>-<runtime>, and compare them (use with --fresh to time every ingest)",
        )
        parser.add_argument(
            "--keep-fit",
            action="store_true",
            help="Store the fusion weight fitted to the qrels as the namespace's calibration, "
            "which its searches then use; without it the run leaves the namespace as it found it",
        )
        parser.add_argument(
            "--rule-effects",
            action="store_true",
            help="Also measure quality with MMR, recency and a stricter threshold turned on",
        )

    def handle(
        self,
        *args,
        beir,
        namespace,
        json: bool,
        queries: int,
        skip_latency: bool,
        skip_quality: bool,
        skip_throughput: bool,
        fresh: bool,
        scale_chunks: int,
        rule_effects: bool,
        lexical_agreement: bool,
        admin: bool,
        mcp: bool,
        audiences: bool = False,
        runtimes: list[str],
        keep_fit: bool = False,
        **options,
    ):
        hint = migration_hint()
        if hint:
            raise CommandError(hint)
        if runtimes and kb_settings().embedder != "local":
            raise CommandError(
                f"--runtimes compares runtimes of the local model; KB_EMBEDDER is "
                f"{kb_settings().embedder!r}."
            )
        if namespace and (len(beir) > 1 or runtimes):
            raise CommandError(
                "--namespace names one corpus's namespace; give one --beir folder and no "
                "--runtimes with it."
            )
        settings = BenchOptions(
            queries=queries,
            skip_latency=skip_latency,
            skip_quality=skip_quality,
            skip_throughput=skip_throughput,
            fresh=fresh,
            rule_effects=rule_effects,
            scale_chunks=scale_chunks,
            lexical_agreement=lexical_agreement,
            admin=admin,
            mcp=mcp,
            audiences=audiences,
            keep_fit=keep_fit,
        )
        write = self.stdout.write
        reports = []
        for folder, runtime in [
            (folder, runtime) for folder in beir for runtime in runtimes or [""]
        ]:
            with ProgressBars(self.stderr) as bars:
                benchmark = CorpusBenchmark(
                    folder,
                    namespace,
                    replace(settings, runtime=runtime),
                    progress=bars.update,
                    log=self.stderr.write,
                )
                try:
                    report = benchmark.run(on_report=lambda r: print_report(write, r))
                except BenchmarkIngestFailed as exc:
                    raise CommandError(str(exc)) from exc
            if "scale" in report:
                print_report(write, {"scale": report["scale"]})
            for pages in (report.get("admin"), report.get("scale", {}).get("admin")):
                if pages:
                    timings = [
                        f"{name} {t['median_ms']} / {t['max_ms']} ms"
                        for name, t in pages.items()
                        if name != "namespace"
                    ]
                    write(
                        f"admin pages over {pages['namespace']} (median / slowest of 5): "
                        + "; ".join(timings)
                    )
            if "mcp" in report:
                print_mcp(write, report["mcp"])
            for agreement in (
                report.get("lexical_agreement"),
                report.get("scale", {}).get("lexical_agreement"),
            ):
                if agreement:
                    print_agreement(write, agreement)
            reports.append(report)
        if len(reports) > 1:
            print_side_by_side(write, reports)
        if runtimes:
            print_runtimes(write, reports)
        if json:
            result = reports[0] if len(reports) == 1 else {"corpora": reports}
            result["measured_with"] = measured_with(connection)
            write(jsonlib.dumps(result, sort_keys=True, default=str))


class ProgressBars:
    """One tqdm bar per kind of work the benchmark reports, closed when the benchmark ends."""

    def __init__(self, stream):
        self.stream, self.bars = stream, {}

    def update(self, what: str, done: int, total: int) -> None:
        bar = self.bars.get(what)
        if bar is None:
            bar = self.bars[what] = tqdm(
                total=total, desc=what, file=self.stream, disable=None, leave=False
            )
        bar.total, bar.n = total, done
        bar.refresh()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        for bar in self.bars.values():
            bar.close()


def print_report(write, report: dict) -> None:
    rows = (
        [("default weights", report["default_weights"]), ("fitted ranker", report["fitted"])]
        if "ndcg@10" in report
        else []
    ) + list(report.get("channels", {}).items())
    rows += [(name, values) for name, values in report.get("rule_effects", {}).items()]
    if rows:
        write(f"\n{'method':<20} {'nDCG@10':>8} {'R@100':>8} {'MRR@10':>8}")
    for name, values in rows:
        write(
            f"{name:<20} {values['ndcg@10']:>8.4f} {values['recall@100']:>8.4f} "
            f"{values['mrr@10']:>8.4f}"
        )
    if "fusion" in report:
        f = report["fusion"]
        stored = (
            f"stored as the namespace's calibration v{f['version']}"
            if f["stored"]
            else "not stored: --keep-fit stores it"
        )
        write(
            f"fusion weight fitted to the qrels: lexical {f['lexical_weight']} ({stored}); per "
            "fold "
            f"{f['fold_weights']}; nDCG@10 per grid weight {f['grid']}"
        )
    if "fitted_versus_best" in report:
        write(f"fitted ranker vs {_versus(report['fitted_versus_best'])}")
    if "default_versus_best" in report:
        d = report["default_weights"]
        served = (
            "; ".join(f"{n} queries {how}" for how, n in d["served"].items())
            if len(d.get("served", {})) > 1
            else "words alone"
            if "vector" not in d.get("channels", ["vector"])
            else f"lexical weight {d.get('lexical_weight')}"
        )
        if d.get("median_excess") is not None:
            served += f"; the queries' best passages a median {d['median_excess']} beyond chance"
        write(
            f"default weights as served without judged queries ({served}) vs "
            f"{_versus(report['default_versus_best'])}"
        )
    if "p50_ms" in report:
        w = report["without_embedding"]
        write(
            f"\nsearch latency (limit {LATENCY_LIMIT}): p50 {report['p50_ms']} ms, p95 "
            f"{report['p95_ms']} ms, p99 {report['p99_ms']} ms with query embedding; "
            f"p50 {w['p50_ms']} / p95 {w['p95_ms']} / p99 {w['p99_ms']} ms without"
        )
        write(_stages(report))
        for name, times in report.get("server_time", {}).items():
            label = {"api": "JSON API (GET /api/search)", "page": "search page (GET /?q=)"}[name]
            write(
                f"server time, {label}: p50 {times['p50_ms']} ms, p95 {times['p95_ms']} ms, "
                f"p99 {times['p99_ms']} ms"
            )
    if "scale" in report:
        scale, first = report["scale"], report["scale"]["first_pass"]
        write(
            f"scaling run ({scale['chunks']} chunks), second pass: p50 {scale['p50_ms']} ms, p95 "
            f"{scale['p95_ms']} ms, p99 {scale['p99_ms']} ms with query embedding; first pass "
            "(document "
            f"frequencies not cached) p50 {first['p50_ms']} / p95 {first['p95_ms']} / "
            f"p99 {first['p99_ms']} ms"
        )
        write(_stages(scale))
        write(
            f"copies written in {scale['copies_built_s']} s; vector "
            f"index {scale['vector_index']} in "
            f"{scale['vector_index_built_s']} s; posting lists {scale['posting_lists']} in "
            f"{scale['posting_lists_built_s']} s; sizes (MB): "
            + ", ".join(
                f"{name} {size / 2**20:.0f}" for name, size in sorted(scale["sizes"].items())
            )
        )
        return
    write(
        f"ingest: {report.get('ingest_docs_per_s')} docs/s "
        f"({report.get('ingest_chunks_per_s')} chunks/s; {report.get('ingest_measured')}); "
        + (
            f"raw embedding: {report['embed_docs_per_s']} docs/s{_samples(report)}"
            if "embed_docs_per_s" in report
            else "raw embedding not timed"
        )
    )


def _stages(report: dict) -> str:
    """The service's own stage timings (channels_ms: lexical, names and identifiers)."""
    return "stages, p50 / p95 / p99 ms: " + "; ".join(
        f"{stage.removesuffix('_ms')} {t['p50_ms']} / {t['p95_ms']} / {t['p99_ms']}"
        for stage, t in report.get("stages", {}).items()
    )


def print_side_by_side(write, reports: list[dict]) -> None:
    methods = [
        ("default weights", lambda r: r.get("default_weights")),
        ("fitted ranker", lambda r: r.get("fitted")),
        ("vector", lambda r: r.get("channels", {}).get("vector")),
        ("lexical", lambda r: r.get("channels", {}).get("lexical")),
        ("rrf", lambda r: r.get("channels", {}).get("rrf")),
    ]
    write("\nside by side, nDCG@10 / R@100:")
    write(f"{'method':<20}" + "".join(f"{r.get('label') or r['corpus']:>22}" for r in reports))
    for label, pick in methods:
        cells = []
        for r in reports:
            values = pick(r) if "ndcg@10" in r else None
            cells.append(f"{values['ndcg@10']:.4f} / {values['recall@100']:.4f}" if values else "-")
        write(f"{label:<20}" + "".join(f"{c:>22}" for c in cells))
    for r in reports:
        for ranker in ("default", "fitted"):
            if f"{ranker}_versus_best" in r:
                write(f"{r['corpus']}: {ranker} ranker vs {_versus(r[f'{ranker}_versus_best'])}")


def print_runtimes(write, reports: list[dict]) -> None:
    """Per corpus, each document runtime's ingest speed, peak memory and quality beside the
    first runtime's (the baseline): the figures a choice of KB_EMBEDDING_DOCUMENT_RUNTIME needs."""
    write("\ndocument runtimes, per corpus (speed-up and differences against the first runtime):")
    write(
        f"{'corpus':<10} {'runtime':<10} {'embed docs/s':>12} {'ingest docs/s':>13} {'chunks/s':>9} "  # noqa: E501
        f"{'speed-up':>8} {'peak MB':>8} {'nDCG@10':>8} {'diff':>8} {'R@100':>7} {'diff':>8}"
    )
    first: dict[str, dict] = {}
    for r in reports:
        base = first.setdefault(r["corpus"], r)
        default = r.get("default_weights") or {}
        base_default = base.get("default_weights") or {}
        speed = (r.get("ingest_chunks_per_s") or 0) / (
            base.get("ingest_chunks_per_s") or float("inf")
        )

        def diff(key, default=default, base_default=base_default) -> str:
            return (
                f"{default[key] - base_default[key]:+.4f}"
                if key in default and key in base_default
                else "-"
            )

        peak = (r.get("embedding_process_mb") or {}).get("peak") or "-"
        write(
            f"{r['corpus']:<10} {r.get('runtime') or '-':<10} {r.get('embed_docs_per_s') or '-':>12} "  # noqa: E501
            f"{r.get('ingest_docs_per_s') or '-':>13} {r.get('ingest_chunks_per_s') or '-':>9} {speed:>7.2f}x "  # noqa: E501
            f"{peak:>8} {default.get('ndcg@10', float('nan')):>8.4f} "
            f"{diff('ndcg@10'):>8} {default.get('recall@100', float('nan')):>7.4f} {diff('recall@100'):>8}"  # noqa: E501
        )
    write(
        "nDCG@10 and R@100 are the default (unfitted) ranker's; peak MB is the resident peak of "
        "a fresh process "
        "(Django set up, as a worker) embedding the raw-rate sample through that runtime."
    )


def _versus(v: dict) -> str:
    """The per-query comparison with the best other method, as both reports print it."""
    return (
        f"{v['method']} (best other method), per query on nDCG@10: {v['wins']} "
        f"wins, {v['losses']} losses, "
        f"{v['ties']} ties; mean difference {v['mean_difference']:+.4f}, paired randomisation p "
        f"= {v['p_value']}"
    )


def _samples(report: dict) -> str:
    measured = report.get("embed_docs_per_s_measured", [])
    if len(measured) == 2:
        return f" (mean of {measured[0]} before the ingest and {measured[1]} after)"
    return ""


def print_agreement(write, a: dict) -> None:
    for cache in ("cold", "warm"):
        c = a[cache]
        write(
            f"lexical channel on {a['namespace']} (posting lists {a['posting_lists']}), "
            f"top {a['depth']}, {cache} "
            "document frequencies: packed read vs postings table overlap "
            f"mean {c['overlap_mean']:.4f} (lowest "
            f"{c['overlap_min']:.2f}), largest score "
            f"difference {c['largest_score_difference']:.2g}; "
            f"{c['queries_packed']} of {c['queries']} queries read packed; postings read p50/p95 "
            f"{c['postings_read']['p50']}/{c['postings_read']['p95']}; latency p50/p95 table "
            f"{c['latency_ms']['table']['p50_ms']}/{c['latency_ms']['table']['p95_ms']} ms, packed "
            f"{c['latency_ms']['packed']['p50_ms']}/{c['latency_ms']['packed']['p95_ms']} ms"
        )


def print_mcp(write, report: dict) -> None:
    """Each MCP tool beside its API twin (server time, ms), then the search overheads."""
    write(
        f"\nMCP tools and their API twins, server time over {report['queries']} queries (p50 / "
        "p95 / p99 ms):"
    )
    for name, t in report.items():
        if isinstance(t, dict) and "p50_ms" in t:
            write(f"  {name:<28} {t['p50_ms']:>8} {t['p95_ms']:>8} {t['p99_ms']:>8}")
        elif isinstance(t, dict) and "not_measured" in t:
            write(f"  {name:<28} not measured: {t['not_measured']}")
    write(
        f"MCP search minus /api/search (group=document), server time p95: "
        f"{report['mcp_search_minus_api_search_p95_ms']} ms"
    )
    write(
        "MCP overhead over /api/search (p95 of request time minus the search it ran, MCP minus "
        "API): "
        f"{report['mcp_overhead_over_api_search_p95_ms']} ms"
    )
    write(
        f'MCP searches with nothing clearly relevant (each also computed a "did you mean"): '
        f"{report['mcp_searches_weak']} of {report['queries']}"
    )
    write(
        "Through the official MCP SDK's client and the same HTTP client on a live loopback server "
        "(client time, p50 / p95 / p99 ms):"
    )
    for name, t in report["client"].items():
        write(f"  {name:<28} {t['p50_ms']:>8} {t['p95_ms']:>8} {t['p99_ms']:>8}")
