"""Run `kb_bench` on one BEIR folder: ingest, quality, latency and throughput.

Everything goes through the real pipeline and search service. The headline is the default ranker as
a namespace without judged queries serves it; the fitted fusion weight is stored only with
`BenchOptions.keep_fit`, so a run leaves the product as it found it. With `BenchOptions.runtime` the
corpus goes into a namespace of its own, so runtimes compare side by side. Progress and messages go
to callbacks, so the command decides how they look.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.db import connection

from evaluation import memory
from evaluation import search_parts as evaluate
from evaluation.audience_bench import audience_latency
from evaluation.errors import BenchmarkIngestFailed
from evaluation.fitting import fit_weights, judged_runs, store_calibration
from evaluation.mcp_bench import mcp_latency
from evaluation.metrics import (
    BeirCorpus,
    load_beir,
    mean_scores,
    paired_comparison,
    per_query_ndcg,
    percentiles,
)
from evaluation.runner import METHODS
from evaluation.scale import build_scaled_copy
from ingest.service import ingest_texts
from kb.embedding.embedders import get_embedder, local_embedder
from kb.models import Document, IngestRun, Namespace, Source
from retrieval.fusion import FOLDS, WEIGHT_GRID
from retrieval.ranker import CHANNELS, RankerParams
from retrieval.service import search

QUALITY_DOCUMENTS = 100
METHOD_LABELS = {"vector": "vector alone", "lexical": "lexical alone", "rrf": "plain RRF k=60"}
LATENCY_LIMIT = 10
RAW_EMBED_SAMPLE = 512
FULL_INGEST_SHARE = 0.9  # a run that changed this share of the corpus measured ingest throughput
ADMIN_ROUNDS = 5
AGREEMENT_DEPTH = 100  # the ranker reads the lexical channel this deep
# recency in spreads of the query's list: 1.5 is about 0.1 of the bundled model's cosine
RULE_VARIANTS = {
    "mmr_lambda=0.9": RankerParams(mmr_lambda=0.9),
    "mmr_lambda=0.7": RankerParams(mmr_lambda=0.7),
    "recency_weight=1.5": RankerParams(recency_weight=1.5),
    "floor=0.5": RankerParams(floor=0.5),
    "rrf_weight=1": RankerParams(rrf_weight=1.0),
}

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class BenchOptions:
    queries: int = 0  # only the first N queries (quick runs); 0: all
    skip_latency: bool = False
    skip_quality: bool = False
    skip_throughput: bool = (
        False  # do not time the model alone (raw embedding rate, the embedding process's memory)
    )
    fresh: bool = False  # delete the namespace's documents first, so ingest throughput is measured
    rule_effects: bool = False
    scale_chunks: int = 0
    lexical_agreement: bool = (
        False  # compare the lexical channel's packed read with the postings table's
    )
    admin: bool = False  # also time the curator's changelists
    audiences: bool = False  # also time search with half and all documents restricted
    mcp: bool = (
        False  # also time every MCP tool next to its JSON API twin (evaluation/mcp_bench.py)
    )
    runtime: str = (
        ""  # embed documents through this runtime of the local model, in its own namespace
    )
    keep_fit: bool = (
        False  # store the fitted fusion weight as the namespace's calibration (it then serves it)
    )


def _quiet(*args) -> None:
    return None


class CorpusBenchmark:
    """One corpus's benchmark; `run()` returns its report as a dict of plain values."""

    def __init__(
        self,
        folder,
        namespace: str | None,
        options: BenchOptions,
        *,
        progress: Progress = _quiet,
        log: Callable[[str], None] = _quiet,
    ):
        self.corpus: BeirCorpus = load_beir(folder)
        suffix = f"-{options.runtime}" if options.runtime else ""
        self.namespace = namespace or f"bench-{self.corpus.name.lower()}{suffix}"
        self.embedder = local_embedder(options.runtime) if options.runtime else get_embedder()
        self.options, self.progress, self.log = options, progress, log
        self.query_items = list(self.corpus.queries.items())[: options.queries or None]
        self.qrels = {qid: self.corpus.qrels[qid] for qid, _ in self.query_items}
        self.per_query: dict[str, dict[str, float]] = {}

    def run(self, on_report: Callable[[dict], None] = _quiet) -> dict:
        """Measure; `on_report` sees the main report before a scaling run starts, so a long
        scaling run never loses it."""
        corpus, options = self.corpus, self.options
        self.log(
            f"{corpus.name}: {len(corpus.documents)} documents, {len(self.query_items)} queries"
        )
        if options.fresh:
            Source.objects.filter(namespace__slug=self.namespace).delete()
        # the model's speed drifts with the machine's load over a several-minute ingest: a full
        # ingest is compared with the mean of the raw rate measured just before and just after it
        full_ingest_expected = not Document.objects.filter(namespace__slug=self.namespace).exists()
        timed = not options.skip_throughput
        raw_rates = [self.raw_embedding_rate()] if full_ingest_expected and timed else []
        ingest = self.ingest()
        if timed:
            raw_rates.append(self.raw_embedding_rate())
        ingested_now = ingest.get("ingest_measured") == "this run"
        if ingested_now:
            settle()
        vectors = self.query_vectors()
        report: dict = {
            "corpus": corpus.name,
            "namespace": self.namespace,
            "queries": len(self.query_items),
            "channels": {},
            "label": f"{corpus.name} {options.runtime}".strip(),
            "runtime": getattr(self.embedder, "document_runtime_in_use", ""),
        }
        if not options.skip_quality:
            report.update(self.quality_report(vectors))
        if options.rule_effects:
            report["rule_effects"] = {
                name: self.quality(vectors, name, params=params)
                for name, params in RULE_VARIANTS.items()
            }
        if not options.skip_latency:
            report.update(self.latency(self.namespace))
            report["server_time"] = self.surface_latency()
        if options.audiences:
            report["audiences"] = audience_latency(self.namespace, self.latency)
        report.update(ingest)
        if raw_rates:
            report["embed_docs_per_s"] = round(sum(raw_rates) / len(raw_rates), 2)
            report["embed_docs_per_s_measured"] = raw_rates
        if full_ingest_expected and timed:
            runtime = options.runtime or getattr(self.embedder, "document_runtime", "")
            if runtime:
                report["embedding_process_mb"] = memory.embedding_process_peak(
                    runtime, self.raw_sample()
                )
        # an older run's ingest was timed in another machine state: no ratio
        if ingested_now and ingest.get("ingest_docs_per_s") and report.get("embed_docs_per_s"):
            report["ingest_vs_embed"] = round(
                ingest["ingest_docs_per_s"] / report["embed_docs_per_s"], 3
            )
        on_report(report)
        if options.lexical_agreement:
            report["lexical_agreement"] = lexical_agreement(self.namespace, self.query_items)
        if options.admin:
            report["admin"] = admin_latency(self.namespace)
        if options.mcp:
            report["mcp"] = mcp_latency(
                self.namespace, [text for _, text in self.query_items], self.progress
            )
        if options.scale_chunks:
            report["scale"] = self.scale(options.scale_chunks)
            scaled = report["scale"]["namespace"]
            if options.admin:
                report["scale"]["admin"] = admin_latency(scaled)
            if options.lexical_agreement:
                report["scale"]["lexical_agreement"] = lexical_agreement(scaled, self.query_items)
        return report

    # --- ingest ---------------------------------------------------------------------------------
    def ingest(self) -> dict:
        corpus = self.corpus
        ns, _ = Namespace.objects.get_or_create(
            slug=self.namespace, defaults={"title": f"Benchmark: {corpus.name}"}
        )
        source, _ = Source.objects.get_or_create(
            namespace=ns,
            name=f"beir:{corpus.name}",
            defaults={"kind": Source.Kind.TEXT, "text": corpus.name},
        )
        documents = (
            (str(doc["_id"]), doc.get("title", ""), doc.get("text", "")) for doc in corpus.documents
        )
        started = time.perf_counter()
        run = ingest_texts(
            source,
            documents,
            embedder=self.embedder,
            on_progress=lambda r: self.progress("ingest", r.items_done, len(corpus.documents)),
        )
        seconds = time.perf_counter() - started
        self.log(
            f"ingest run {run.pk}: {run.status}, {run.items_changed} changed, "
            f"{run.items_unchanged} unchanged, {run.chunks_written} chunks in {seconds:.1f}s"
        )
        if run.status != "succeeded":
            raise BenchmarkIngestFailed(
                f"The corpus {corpus.name!r} did not ingest (run {run.pk}: {run.status}"
                f"{': ' + run.error if run.error else ''}); nothing is measured on part of it."
            )
        if run.items_failed:
            self.log(
                f"{run.items_failed} documents failed to ingest (the run's page lists them): the "
                "figures "
                f"below leave them out"
            )
        full = len(corpus.documents) * FULL_INGEST_SHARE
        if run.items_changed >= full:
            return {
                "ingest_docs_per_s": round(run.items_changed / seconds, 2),
                "ingest_chunks_per_s": round(run.chunks_written / seconds, 2),
                "ingest_run": run.pk,
                "ingest_measured": "this run",
            }
        previous = (
            IngestRun.objects.filter(source=source, items_changed__gte=full)
            .exclude(started_at=None)
            .exclude(finished_at=None)
            .order_by("-pk")
            .first()
        )
        if previous is None:
            return {
                "ingest_docs_per_s": None,
                "ingest_measured": "corpus unchanged; no full ingest on record",
            }
        seconds = (previous.finished_at - previous.started_at).total_seconds()
        return {
            "ingest_docs_per_s": round(previous.items_changed / seconds, 2),
            "ingest_chunks_per_s": round(previous.chunks_written / seconds, 2),
            "ingest_run": previous.pk,
            "ingest_measured": f"run {previous.pk} (the corpus was unchanged this time; "
            "re-ingest cost "
            f"{run.items_unchanged} hash checks and no embedding)",
        }

    def raw_embedding_rate(self) -> float:
        """The model alone on the same documents (title + text), batched as the pipeline batches."""
        embedder = self.embedder
        sample = self.raw_sample()
        embedder.embed_documents(sample[:16])  # warm-up: model load
        started = time.perf_counter()
        embedder.embed_documents(sample)
        return round(len(sample) / (time.perf_counter() - started), 2)

    def raw_sample(self) -> list[str]:
        return [
            f"{d.get('title', '')}\n\n{d.get('text', '')}"
            for d in self.corpus.documents[:RAW_EMBED_SAMPLE]
        ]

    # --- quality --------------------------------------------------------------------------------
    def query_vectors(self) -> dict:
        embedder = self.embedder
        return {qid: embedder.embed_query(text) for qid, text in self.query_items}

    def quality_report(self, vectors) -> dict:
        """The default ranker (the headline: top-level `ndcg@10`, `recall@100`, `mrr@10`), the
        fitted one, each channel and RRF, and the per-query comparison of each ranker with the
        best other method."""
        report = self.fitted_quality(vectors)
        report["channels"] = {
            name: self.quality(vectors, METHOD_LABELS[name], **METHODS[name])
            for name in ("vector", "lexical", "rrf")
        }
        best = max(report["channels"], key=lambda name: report["channels"][name]["ndcg@10"])
        report["fitted_versus_best"] = {
            "method": best,
            **paired_comparison(
                self.per_query["fitted ranker"], self.per_query[METHOD_LABELS[best]]
            ),
        }
        report["default_versus_best"] = {
            "method": best,
            **paired_comparison(
                self.per_query["default weights"], self.per_query[METHOD_LABELS[best]]
            ),
        }
        return report

    def quality(self, vectors, label: str, **kwargs) -> dict:
        self.log(f"{label} ...")
        runs = judged_runs(
            self.namespace,
            dict(self.query_items),
            vectors=vectors,
            depth=QUALITY_DOCUMENTS,
            **kwargs,
        )
        self.per_query[label] = per_query_ndcg(runs, self.qrels)
        return mean_scores(runs, self.qrels)

    def fitted_quality(self, vectors) -> dict:
        """The default ranker as a namespace without judged queries serves it, and the ranker with
        the lexical weight fitted to this corpus's judgements, each query scored with the weight
        fitted on the other folds. The fit is stored as the namespace's calibration only with
        `keep_fit`: otherwise the namespace serves afterwards what it served before."""
        qrels = self.qrels
        calibration = fit_weights(
            self.namespace,
            dict(self.query_items),
            qrels,
            vectors=vectors,
            progress=lambda done, total: self.progress("fit fusion weight", done, len(WEIGHT_GRID)),
        )
        if self.options.keep_fit:
            calibration = store_calibration(
                self.namespace,
                calibration,
                fitted_on=f"benchmark {self.corpus.name} qrels, {FOLDS}-fold cross-validated",
            )
        held_out = calibration.held_out_runs()
        self.per_query["fitted ranker"] = per_query_ndcg(held_out, qrels)
        fit = calibration.fit
        served: dict[
            tuple[float, tuple[str, ...]], dict[str, str]
        ] = {}  # each query as served without judgements
        texts = dict(self.query_items)
        excess = evaluate.search_excess(self.namespace, texts, vectors)
        for qid, how in evaluate.unjudged_defaults(self.namespace, texts).items():
            served.setdefault(how, {})[qid] = texts[qid]
        default_runs = {}
        for (weight, channels), queries in served.items():
            if weight in calibration.runs and channels == CHANNELS:  # a grid weight: already run
                default_runs.update({qid: calibration.runs[weight][qid] for qid in queries})
            else:  # another weight or fewer channels than any grid run
                self.log(
                    f"default as served to {len(queries)} queries: lexical weight {weight}, "
                    f"channels {', '.join(channels)} ..."
                )
                default_runs.update(
                    judged_runs(
                        self.namespace,
                        queries,
                        vectors=vectors,
                        params=RankerParams(lexical_weight=weight),
                        channels=channels,
                    )
                )
        self.per_query["default weights"] = per_query_ndcg(default_runs, qrels)
        weight, channels = (
            next(iter(served)) if len(served) == 1 else (None, None)
        )  # else per query: `served`
        default, fitted = mean_scores(default_runs, qrels), mean_scores(held_out, qrels)
        return {
            **default,
            "default_ndcg@10": default["ndcg@10"],
            "fitted_ndcg@10": fitted["ndcg@10"],
            "default_weights": {
                **default,
                "lexical_weight": weight,
                "channels": list(channels) if channels else None,
                "served": {
                    f"lexical weight {w}, channels {', '.join(c)}": len(q)
                    for (w, c), q in served.items()
                },
                "median_excess": _median([v for v in excess.values() if v is not None]),
            },
            "fitted": fitted,
            "fusion": {
                "lexical_weight": fit.weight,
                "fold_weights": list(fit.fold_weights),
                "stored": calibration.record is not None,
                "version": calibration.record.version if calibration.record else None,
                "grid": {
                    str(w): mean_scores(runs, qrels)["ndcg@10"]
                    for w, runs in calibration.runs.items()
                },
            },
        }

    # --- latency --------------------------------------------------------------------------------
    def latency(self, namespace: str, reach: frozenset[int] | None = frozenset()) -> dict:
        """Search latency with query embedding (and its stages, from the service's own timings)
        and without, one query at a time, after one warm-up search; `reach`: as a reader of
        those audiences (`kb.audiences`; by default, one who reads open documents only)."""
        texts = [text for _, text in self.query_items]
        search(texts[0], namespace, limit=LATENCY_LIMIT, log=False, reach=reach)  # warm-up
        with_embedding, without_embedding = [], []
        stages: dict[str, list[float]] = {}
        embedder = get_embedder()
        for done, text in enumerate(texts, 1):
            started = time.perf_counter()
            result = search(text, namespace, limit=LATENCY_LIMIT, reach=reach)
            with_embedding.append((time.perf_counter() - started) * 1000)
            for stage, ms in result.timings.items():
                stages.setdefault(stage, []).append(ms)
            self.progress("latency", done, len(texts))
        for text in texts:
            vector = embedder.embed_query(text)
            started = time.perf_counter()
            search(text, namespace, limit=LATENCY_LIMIT, query_vector=vector, reach=reach)
            without_embedding.append((time.perf_counter() - started) * 1000)
        report = percentiles(with_embedding)
        report["without_embedding"] = percentiles(without_embedding)
        report["stages"] = {
            stage: percentiles(samples) for stage, samples in sorted(stages.items())
        }
        report["queries_per_s"] = round(len(texts) / (sum(with_embedding) / 1000), 2)
        return report

    def surface_latency(self) -> dict:
        """Server time of a whole request through the JSON API and through the search page.

        Requests go through Django's full stack in-process (middleware, auth, the query log,
        serialisation or template rendering), signed in as a temporary staff user; network time
        is left out, so the figures compare with the service latency above.
        """
        texts = [text for _, text in self.query_items]
        surfaces = {
            "api": (
                "/api/search",
                lambda text: {"query": text, "namespace": self.namespace, "limit": LATENCY_LIMIT},
            ),
            "page": ("/", lambda text: {"q": text, "namespace": self.namespace}),
        }
        report = {}
        with signed_in_client() as client:
            for name, (url, query) in surfaces.items():
                timed_get(client, url, query(texts[0]))  # warm-up, and a check the surface answers
                samples = []
                for done, text in enumerate(texts, 1):
                    samples.append(timed_get(client, url, query(text)))
                    self.progress(f"{name} server time", done, len(texts))
                report[name] = percentiles(samples)
        return report

    def scale(self, target_chunks: int) -> dict:
        """Latency on a copy of the namespace grown to `target_chunks` (built once, reused by later
        runs; one namespace per size, so several sizes can be compared): a first pass right after
        building or reusing it (the document-frequency cache empty) and a second pass (cache
        warm), with index sizes and build times."""
        scaled = f"{self.namespace}-scale-{target_chunks}"
        built = build_scaled_copy(
            self.namespace,
            scaled,
            target_chunks,
            lambda done, total: self.progress("scale copies", done, total),
        )
        evaluate.clear_document_frequencies()
        first = self.latency(scaled)
        return {
            **self.latency(scaled),
            "first_pass": first,
            "chunks": built.chunks,
            "namespace": scaled,
            "copies_built_s": built.copies_seconds,
            "vector_index_built_s": built.index_seconds,
            "vector_index": built.index_state,
            "posting_lists_built_s": built.lists_seconds,
            "posting_lists": built.lists_state,
            "sizes": index_sizes(scaled),
        }


def index_sizes(namespace: str) -> dict[str, int]:
    """Bytes on disk of the namespace's own vector index, and of the tables and indexes every
    namespace shares (chunks, postings, the text index)."""
    ns = Namespace.objects.get(slug=namespace)
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT c.relname, CASE WHEN c.relname IN ('kb_posting_list', 'kb_posting_list_build')
                                       THEN pg_total_relation_size(c.oid) ELSE pg_relation_size(c.oid) END
                 FROM pg_class c
               WHERE c.relname = ANY(%s) OR c.relname = %s""",  # noqa: E501
            [
                [
                    "kb_chunk",
                    "kb_chunk_term",
                    "kb_chunk_term_pkey",
                    "kb_chunk_term_chunk",
                    "kb_posting_list",
                    "kb_posting_list_build",
                    "chunk_search_vector_gin",
                    "kb_document",
                ],
                evaluate.vector_index_name(ns.pk),
            ],
        )
        own = evaluate.vector_index_name(ns.pk)
        return {name if name != own else "vector_index": size for name, size in cursor.fetchall()}


def admin_latency(namespace: str, rounds: int = ADMIN_ROUNDS) -> dict:
    """Server time of the curator's pages over the namespace, signed in as a superuser (the
    whole table is theirs to list): the chunk and document changelists unfiltered and filtered to
    the namespace, a chunk search by words, a document search by title, the run list and the
    namespace's source page. Each page is fetched `rounds` times; the report gives the slowest
    (the first fetch is cold) and the median."""
    ns = Namespace.objects.get(slug=namespace)
    source = Source.objects.filter(namespace=ns).order_by("pk").first()
    pages = {
        "chunks": "/admin/kb/chunk/",
        "chunks in namespace": f"/admin/kb/chunk/?namespace__id__exact={ns.pk}",
        "chunk search": f"/admin/kb/chunk/?namespace__id__exact={ns.pk}&q=gene+expression",
        "documents": "/admin/kb/document/",
        "documents in namespace": f"/admin/kb/document/?namespace__id__exact={ns.pk}",
        "document search": f"/admin/kb/document/?namespace__id__exact={ns.pk}&q=protein",
        "runs": "/admin/kb/ingestrun/",
        "source page": f"/admin/kb/source/{source.pk}/change/",
    }
    report: dict = {"namespace": namespace}
    with signed_in_client() as client:
        for name, url in pages.items():
            samples = sorted(timed_get(client, url) for _ in range(rounds))
            report[name] = {
                "median_ms": round(samples[len(samples) // 2], 1),
                "max_ms": round(samples[-1], 1),
            }
    return report


@contextlib.contextmanager
def signed_in_client():
    """A test client signed in as a temporary superuser, deleted afterwards."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    user = get_user_model().objects.create_user(
        f"kb-bench-{time.time_ns()}", is_staff=True, is_superuser=True
    )
    try:
        client = Client(HTTP_HOST="localhost")
        client.force_login(user)
        yield client
    finally:
        user.delete()


def timed_get(client, url: str, query: dict | None = None) -> float:
    """Milliseconds of one GET through the whole Django stack; anything but 200 is an error."""
    started = time.perf_counter()
    response = client.get(url, query or {})
    elapsed = (time.perf_counter() - started) * 1000
    if response.status_code != 200:
        raise RuntimeError(f"{url} {query or ''} answered {response.status_code}")
    return elapsed


def lexical_agreement(namespace: str, query_items, depth: int = AGREEMENT_DEPTH) -> dict:
    """The lexical channel read from the namespace's packed posting lists against the same BM25
    summed by PostgreSQL over the postings table, on every query at the ranker's depth: the share
    of the table's top `depth` the packed read returns (mean, and the lowest), the largest score
    difference, postings read, and each read's latency (statistics and channel, without
    embedding), with a cold and a warm document-frequency cache. A namespace below the lists'
    threshold gets them for the comparison only."""
    ns = Namespace.objects.get(slug=namespace)
    temporary = (
        not evaluate.posting_lists_in_force(ns.id)
        and evaluate.build_posting_lists(ns.id) == "built"
    )
    texts = [text for _, text in query_items]
    lexemes = {text: evaluate.query_lexemes(text, ns.id) for text in texts}
    report: dict = {
        "namespace": namespace,
        "depth": depth,
        "posting_lists": "built for this comparison" if temporary else "in force",
    }
    for cache in ("cold", "warm"):
        timings: dict[str, list[float]] = {"table": [], "packed": []}
        overlaps, packed_queries, read, largest_difference = [], 0, [], 0.0
        for text in texts:
            if cache == "cold":  # each read counts the document frequencies itself
                evaluate.clear_document_frequencies()
            started = time.perf_counter()
            table = evaluate.lexical_read(ns.id, lexemes[text], depth, packed=False)
            timings["table"].append((time.perf_counter() - started) * 1000)
            if cache == "cold":
                evaluate.clear_document_frequencies()
            started = time.perf_counter()
            packed = evaluate.lexical_read(ns.id, lexemes[text], depth)
            timings["packed"].append((time.perf_counter() - started) * 1000)
            truth = {row.chunk_id: row.raw for row in table.rows}
            if truth:
                overlaps.append(
                    len(truth.keys() & {row.chunk_id for row in packed.rows}) / len(truth)
                )
            largest_difference = max(
                [largest_difference]
                + [
                    abs(row.raw - truth[row.chunk_id])
                    for row in packed.rows
                    if row.chunk_id in truth
                ]
            )
            packed_queries += packed.report.mode == "packed"
            read.append(table.report.postings_read)
        report[cache] = {
            "overlap_mean": round(sum(overlaps) / max(len(overlaps), 1), 5),
            "overlap_min": round(min(overlaps, default=1), 4),
            "largest_score_difference": largest_difference,
            "queries_packed": packed_queries,
            "queries": len(texts),
            "postings_read": _quantiles(read),
            "latency_ms": {mode: percentiles(samples) for mode, samples in timings.items()},
        }
    if temporary:
        evaluate.drop_posting_lists(ns.id)
    return report


def _median(values: list[float]) -> float | None:
    """The queries' median excess over chance, what a search log would hold (rounded)."""
    return round(statistics.median(values), 2) if values else None


def _quantiles(counts: list[int]) -> dict[str, int]:
    ordered = sorted(counts) or [0]
    return {
        f"p{p}": ordered[min(len(ordered) - 1, max(0, -(-p * len(ordered) // 100) - 1))]
        for p in (50, 95, 99)
    }


def settle() -> None:
    """VACUUM (ANALYZE) after a large ingest, as autovacuum does within a minute or two:
    latency is measured on a settled database, not on freshly written, unvacuumed pages
    (index-only scans of the postings need the visibility map)."""
    from django.db import connection

    command = (
        "ANALYZE" if connection.in_atomic_block else "VACUUM (ANALYZE)"
    )  # VACUUM needs autocommit
    with connection.cursor() as cursor:
        for table in ("kb_chunk_term", "kb_chunk", "kb_document"):
            cursor.execute(f"{command} {table}")
