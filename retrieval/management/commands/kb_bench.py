"""python manage.py kb_bench --beir DIR [--namespace NS] [--json]

Ingests a BEIR folder through the real pipeline (once: an unchanged corpus costs only its
hashes), runs every query through the real search service, and reports retrieval quality for the
full ranker, each channel alone and plain RRF; search latency with and without query embedding;
and ingest throughput next to the model's raw embedding throughput measured in the same run.
"""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from ingest.embed import get_embedder
from ingest.loaders import LoadedItem
from ingest.pipeline import IngestPipeline
from kb.migrated import migration_hint
from kb.models import Document, IngestRun, Namespace, Source
from retrieval.bench import evaluate, load_beir, paired_comparison, per_query_ndcg, percentiles
from retrieval.calibration import fit_namespace, judged_runs
from retrieval.eval_runner import METHODS
from retrieval.fusion import DEFAULT_LEXICAL_WEIGHT, FOLDS, WEIGHT_GRID
from retrieval.ranker import RankerParams
from retrieval.service import search

QUALITY_DOCUMENTS = 100
METHOD_LABELS = {"vector": "vector alone", "lexical": "lexical alone", "rrf": "plain RRF k=60"}
LATENCY_LIMIT = 10
RAW_EMBED_SAMPLE = 512


class Command(BaseCommand):
    help = "Benchmark ingest and retrieval on a BEIR-format folder."

    def add_arguments(self, parser):
        parser.add_argument("--beir", required=True, nargs="+",
                            help="Folders with corpus.jsonl, queries.jsonl, qrels/test.tsv; several are measured "
                                 "in one run and compared side by side")
        parser.add_argument("--namespace", help="Namespace to ingest into (default bench-<folder>; one folder only)")
        parser.add_argument("--json", action="store_true", help="Print one JSON object as the last line")
        parser.add_argument("--queries", type=int, default=0, help="Use only the first N queries (quick runs)")
        parser.add_argument("--skip-latency", action="store_true")
        parser.add_argument("--skip-quality", action="store_true", help="Only ingest, latency and scaling")
        parser.add_argument("--fresh", action="store_true",
                            help="Delete the namespace's documents first, so ingest throughput is measured")
        parser.add_argument("--scale-chunks", type=int, default=0,
                            help="Also measure latency on a namespace of this many chunks (copies of the corpus)")
        parser.add_argument("--rule-effects", action="store_true",
                            help="Also measure quality with MMR, recency and a stricter threshold turned on")

    def handle(self, *args, beir, namespace, json: bool, **options):
        hint = migration_hint()
        if hint:
            raise CommandError(hint)
        if namespace and len(beir) > 1:
            raise CommandError("--namespace names one corpus's namespace; give one --beir folder with it.")
        reports = [self.corpus_report(folder, namespace, **options) for folder in beir]
        if len(reports) > 1:
            self.print_side_by_side(reports)
        if json:
            self.stdout.write(__import__("json").dumps(reports[0] if len(reports) == 1 else {"corpora": reports},
                                                       sort_keys=True, default=str))

    def corpus_report(self, beir, namespace, *, queries: int, skip_latency: bool, fresh: bool,
                      rule_effects: bool, scale_chunks: int, skip_quality: bool, **options) -> dict:
        self.per_query: dict[str, dict[str, float]] = {}
        corpus = load_beir(beir)
        namespace = namespace or f"bench-{corpus.name.lower()}"
        query_items = list(corpus.queries.items())[: queries or None]
        qrels = {qid: corpus.qrels[qid] for qid, _ in query_items}
        self.log(f"{corpus.name}: {len(corpus.documents)} documents, {len(query_items)} queries")

        if fresh:
            Source.objects.filter(namespace__slug=namespace).delete()
        # the model's speed drifts with the machine's load over a several-minute ingest: a full
        # ingest is compared with the mean of the raw rate measured just before and just after it
        full_ingest_expected = not Document.objects.filter(namespace__slug=namespace).exists()
        raw_rates = [self.raw_embedding_rate(corpus)] if full_ingest_expected else []
        ingest = self.ingest(corpus, namespace)
        raw_rates.append(self.raw_embedding_rate(corpus))
        embed_rate = round(sum(raw_rates) / len(raw_rates), 2)
        if ingest.get("ingest_measured") == "this run":
            self.settle()
        vectors = self.query_vectors(query_items)

        report: dict = {"corpus": corpus.name, "namespace": namespace, "queries": len(query_items), "channels": {}}
        if not skip_quality:
            report.update(self.fitted_quality(corpus.name, query_items, qrels, namespace, vectors))
            report["channels"] = {
                name: self.quality(query_items, qrels, namespace, vectors, METHOD_LABELS[name], **METHODS[name])
                for name in ("vector", "lexical", "rrf")
            }
            best = max(report["channels"], key=lambda name: report["channels"][name]["ndcg@10"])
            report["versus_best"] = {"method": best, **paired_comparison(
                self.per_query["full ranker"], self.per_query[METHOD_LABELS[best]])}
        if rule_effects:
            variants = {
                "mmr_lambda=0.9": RankerParams(mmr_lambda=0.9), "mmr_lambda=0.7": RankerParams(mmr_lambda=0.7),
                "recency_weight=0.1": RankerParams(recency_weight=0.1), "floor=0.5": RankerParams(floor=0.5),
                "rrf_weight=1": RankerParams(rrf_weight=1.0),
            }
            report["rule_effects"] = {
                name: self.quality(query_items, qrels, namespace, vectors, name, params=params)
                for name, params in variants.items()
            }
        if not skip_latency:
            report.update(self.latency(query_items, namespace))
            report["server_time"] = self.surface_latency(query_items, namespace)
        report.update(ingest)
        report["embed_docs_per_s"] = embed_rate
        report["embed_docs_per_s_measured"] = raw_rates
        if ingest.get("ingest_docs_per_s") and embed_rate:
            report["ingest_vs_embed"] = round(ingest["ingest_docs_per_s"] / embed_rate, 3)
        self.print_report(report)
        if scale_chunks:  # after the main report, so a long scaling run never loses it
            report["scale"] = self.scale(namespace, scale_chunks, query_items)
            self.print_report({"scale": report["scale"]})
        return report

    def log(self, message: str) -> None:
        self.stderr.write(message)

    # --- ingest ---------------------------------------------------------------------------------
    def ingest(self, corpus, namespace: str) -> dict:
        ns, _ = Namespace.objects.get_or_create(slug=namespace, defaults={"title": f"Benchmark: {corpus.name}"})
        source, _ = Source.objects.get_or_create(
            namespace=ns, name=f"beir:{corpus.name}", defaults={"kind": Source.Kind.TEXT, "text": corpus.name}
        )
        items = (
            LoadedItem(ref=str(doc["_id"]), body=doc.get("text", "").encode("utf-8"), media_type="text/plain",
                       charset="utf-8", title_hint=doc.get("title", ""), path=str(doc["_id"]))
            for doc in corpus.documents
        )
        run = IngestRun.objects.create(source=source)
        with tqdm(total=len(corpus.documents), unit="doc", desc="ingest", file=self.stderr, disable=None) as bar:
            def progress(r):
                bar.n = r.items_done
                bar.set_postfix(changed=r.items_changed, chunks=r.chunks_written)
                bar.refresh()

            started = time.perf_counter()
            IngestPipeline(run, on_progress=progress).execute(items)
            seconds = time.perf_counter() - started
        run.refresh_from_db()
        self.log(f"ingest run {run.pk}: {run.status}, {run.items_changed} changed, "
                 f"{run.items_unchanged} unchanged, {run.chunks_written} chunks in {seconds:.1f}s")
        if run.items_changed >= len(corpus.documents) * 0.9:
            return {"ingest_docs_per_s": round(run.items_changed / seconds, 2),
                    "ingest_chunks_per_s": round(run.chunks_written / seconds, 2),
                    "ingest_run": run.pk, "ingest_measured": "this run"}
        previous = (IngestRun.objects.filter(source=source, items_changed__gte=len(corpus.documents) * 0.9)
                    .exclude(started_at=None).exclude(finished_at=None).order_by("-pk").first())
        if previous is None:
            return {"ingest_docs_per_s": None, "ingest_measured": "corpus unchanged; no full ingest on record"}
        seconds = (previous.finished_at - previous.started_at).total_seconds()
        return {"ingest_docs_per_s": round(previous.items_changed / seconds, 2),
                "ingest_chunks_per_s": round(previous.chunks_written / seconds, 2),
                "ingest_run": previous.pk,
                "ingest_measured": f"run {previous.pk} (the corpus was unchanged this time; re-ingest cost "
                                   f"{run.items_unchanged} hash checks and no embedding)"}

    def settle(self) -> None:
        """VACUUM (ANALYZE) after a large ingest, as autovacuum does within a minute or two:
        latency is measured on a settled database, not on freshly written, unvacuumed pages
        (index-only scans of the postings need the visibility map)."""
        from django.db import connection

        command = "ANALYZE" if connection.in_atomic_block else "VACUUM (ANALYZE)"  # VACUUM needs autocommit
        with connection.cursor() as cursor:
            for table in ("kb_chunk_term", "kb_chunk", "kb_document"):
                cursor.execute(f"{command} {table}")

    def raw_embedding_rate(self, corpus) -> float:
        """The model alone on the same documents (title + text), batched as the pipeline batches."""
        embedder = get_embedder()
        sample = [f"{d.get('title', '')}\n\n{d.get('text', '')}" for d in corpus.documents[:RAW_EMBED_SAMPLE]]
        embedder.embed_documents(sample[:16])  # warm-up: model load
        started = time.perf_counter()
        embedder.embed_documents(sample)
        return round(len(sample) / (time.perf_counter() - started), 2)

    # --- quality --------------------------------------------------------------------------------
    def query_vectors(self, query_items):
        embedder = get_embedder()
        return {qid: embedder.embed_query(text) for qid, text in query_items}

    def quality(self, query_items, qrels, namespace, vectors, label, **kwargs) -> dict:
        self.log(f"{label} ...")
        runs = judged_runs(namespace, dict(query_items), vectors=vectors, depth=QUALITY_DOCUMENTS, **kwargs)
        self.per_query[label] = per_query_ndcg(runs, qrels)
        return evaluate(runs, qrels)

    def fitted_quality(self, corpus_name: str, query_items, qrels, namespace, vectors) -> dict:
        """The full ranker as the product runs it here: with the lexical weight fitted to this
        corpus's judgements (stored as the namespace's calibration), each query scored with the
        weight fitted on the other folds. The default weights are reported beside it."""
        with tqdm(total=len(WEIGHT_GRID), desc="fit fusion weight", file=self.stderr, disable=None) as bar:
            def progress(done, total):
                bar.n = done
                bar.refresh()

            calibration = fit_namespace(namespace, dict(query_items), qrels, vectors=vectors, progress=progress,
                                        fitted_on=f"benchmark {corpus_name} qrels, {FOLDS}-fold cross-validated")
        held_out = calibration.held_out_runs()
        self.per_query["full ranker"] = per_query_ndcg(held_out, qrels)
        fit = calibration.fit
        return {**evaluate(held_out, qrels),
                "default_weights": evaluate(calibration.runs[DEFAULT_LEXICAL_WEIGHT], qrels),
                "fusion": {"lexical_weight": fit.weight, "fold_weights": list(fit.fold_weights),
                           "version": calibration.record.version,
                           "grid": {str(w): evaluate(runs, qrels)["ndcg@10"] for w, runs in calibration.runs.items()}}}

    # --- latency --------------------------------------------------------------------------------
    def latency(self, query_items, namespace) -> dict:
        texts = [text for _, text in query_items]
        search(texts[0], namespace, limit=LATENCY_LIMIT, log=False)  # warm-up
        with_embedding, without_embedding = [], []
        embedder = get_embedder()
        for text in tqdm(texts, desc="latency", file=self.stderr, disable=None, leave=False):
            started = time.perf_counter()
            search(text, namespace, limit=LATENCY_LIMIT)
            with_embedding.append((time.perf_counter() - started) * 1000)
        for text in texts:
            vector = embedder.embed_query(text)
            started = time.perf_counter()
            search(text, namespace, limit=LATENCY_LIMIT, query_vector=vector)
            without_embedding.append((time.perf_counter() - started) * 1000)
        report = percentiles(with_embedding)
        report["without_embedding"] = percentiles(without_embedding)
        report["queries_per_s"] = round(len(texts) / (sum(with_embedding) / 1000), 2)
        return report

    def surface_latency(self, query_items, namespace) -> dict:
        """Server time of a whole request through the JSON API and through the search page.

        Requests go through Django's full stack in-process (middleware, auth, the query log,
        serialisation or template rendering), signed in as a temporary staff user; network time
        is left out, so the figures compare with the service latency above.
        """
        from django.contrib.auth import get_user_model
        from django.test import Client

        texts = [text for _, text in query_items]
        user = get_user_model().objects.create_user(f"kb-bench-{time.time_ns()}", is_staff=True, is_superuser=True)
        try:
            client = Client(HTTP_HOST="localhost")
            client.force_login(user)
            surfaces = {
                "api": lambda text: client.get("/api/search", {"query": text, "namespace": namespace,
                                                               "limit": LATENCY_LIMIT}),
                "page": lambda text: client.get("/", {"q": text, "namespace": namespace}),
            }
            report = {}
            for name, request in surfaces.items():
                assert request(texts[0]).status_code == 200  # warm-up, and a check the surface answers
                samples = []
                for text in tqdm(texts, desc=f"{name} server time", file=self.stderr, disable=None, leave=False):
                    started = time.perf_counter()
                    response = request(text)
                    samples.append((time.perf_counter() - started) * 1000)
                    if response.status_code != 200:
                        raise RuntimeError(f"{name} answered {response.status_code} for {text!r}")
                report[name] = percentiles(samples)
            return report
        finally:
            user.delete()

    def scale(self, namespace: str, target_chunks: int, query_items) -> dict:
        from retrieval.scale import build_scaled_copy

        scaled = f"{namespace}-scale"
        with tqdm(total=0, desc="scale copies", file=self.stderr, disable=None) as bar:
            def progress(done, total):
                bar.total, bar.n = total, done
                bar.refresh()

            chunks = build_scaled_copy(namespace, scaled, target_chunks, progress)
        report = self.latency(query_items, scaled)
        report["chunks"] = chunks
        return report

    def print_report(self, report: dict) -> None:
        rows = ([("full ranker", report), ("default weights", report["default_weights"])]
                if "ndcg@10" in report else []) + list(report.get("channels", {}).items())
        rows += [(name, values) for name, values in report.get("rule_effects", {}).items()]
        if rows:
            self.stdout.write(f"\n{'method':<20} {'nDCG@10':>8} {'R@100':>8} {'MRR@10':>8}")
        for name, values in rows:
            self.stdout.write(f"{name:<20} {values['ndcg@10']:>8.4f} {values['recall@100']:>8.4f} "
                              f"{values['mrr@10']:>8.4f}")
        if "fusion" in report:
            f = report["fusion"]
            self.stdout.write(f"fusion weight fitted to the qrels: lexical {f['lexical_weight']} (calibration "
                              f"v{f['version']}); per fold {f['fold_weights']}; nDCG@10 per grid weight {f['grid']}")
        if "versus_best" in report:
            v = report["versus_best"]
            self.stdout.write(f"full ranker vs {_versus(v)}")
        if "p50_ms" in report:
            w = report["without_embedding"]
            self.stdout.write(f"\nsearch latency (limit {LATENCY_LIMIT}): p50 {report['p50_ms']} ms, p95 "
                              f"{report['p95_ms']} ms, p99 {report['p99_ms']} ms with query embedding; "
                              f"p50 {w['p50_ms']} / p95 {w['p95_ms']} / p99 {w['p99_ms']} ms without")
            for name, times in report.get("server_time", {}).items():
                label = {"api": "JSON API (GET /api/search)", "page": "search page (GET /?q=)"}[name]
                self.stdout.write(f"server time, {label}: p50 {times['p50_ms']} ms, p95 {times['p95_ms']} ms, "
                                  f"p99 {times['p99_ms']} ms")
        if "scale" in report:
            scale = report["scale"]
            self.stdout.write(f"scaling run ({scale['chunks']} chunks): p50 {scale['p50_ms']} ms, p95 "
                              f"{scale['p95_ms']} ms, p99 {scale['p99_ms']} ms with query embedding")
            return
        self.stdout.write(f"ingest: {report.get('ingest_docs_per_s')} docs/s "
                          f"({report.get('ingest_chunks_per_s')} chunks/s; {report.get('ingest_measured')}); "
                          f"raw embedding: {report['embed_docs_per_s']} docs/s{_samples(report)}")


    def print_side_by_side(self, reports: list[dict]) -> None:
        methods = [("full ranker", lambda r: r), ("default weights", lambda r: r.get("default_weights")),
                   ("vector", lambda r: r.get("channels", {}).get("vector")),
                   ("lexical", lambda r: r.get("channels", {}).get("lexical")),
                   ("rrf", lambda r: r.get("channels", {}).get("rrf"))]
        self.stdout.write("\nside by side, nDCG@10 / R@100:")
        self.stdout.write(f"{'method':<20}" + "".join(f"{r['corpus']:>22}" for r in reports))
        for label, pick in methods:
            cells = []
            for r in reports:
                values = pick(r) if "ndcg@10" in r else None
                cells.append(f"{values['ndcg@10']:.4f} / {values['recall@100']:.4f}" if values else "-")
            self.stdout.write(f"{label:<20}" + "".join(f"{c:>22}" for c in cells))
        for r in reports:
            if "versus_best" in r:
                self.stdout.write(f"{r['corpus']}: full ranker vs {_versus(r['versus_best'])}")


def _versus(v: dict) -> str:
    """The per-query comparison with the best other method, as both reports print it."""
    return (f"{v['method']} (best other method), per query on nDCG@10: {v['wins']} wins, {v['losses']} losses, "
            f"{v['ties']} ties; mean difference {v['mean_difference']:+.4f}, paired randomisation p = {v['p_value']}")


def _samples(report: dict) -> str:
    measured = report.get("embed_docs_per_s_measured", [])
    if len(measured) == 2:
        return f" (mean of {measured[0]} before the ingest and {measured[1]} after)"
    return ""
