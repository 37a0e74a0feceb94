"""The benchmark: trec_eval metrics on hand-checked cases, and kb_bench end to end on a tiny
corpus."""

import json
import math
from importlib import metadata

import pytest
from django.core.management import call_command
from django.db import connection

from evaluation.metrics import load_beir, mrr_at, ndcg_at, percentiles, recall_at
from evaluation.provenance import processor
from kb.models import Chunk, FusionCalibration, Namespace
from retrieval import posting_lists
from retrieval.fusion import WEIGHT_GRID


def test_ndcg_uses_graded_gains_and_the_ideal_ranking_of_all_judged_documents():
    gains = {"a": 2, "b": 1, "c": 0}
    assert ndcg_at(["a", "b"], gains) == pytest.approx(1.0)
    swapped = (1 / math.log2(2) + 2 / math.log2(3)) / (2 / math.log2(2) + 1 / math.log2(3))
    assert ndcg_at(["b", "a"], gains) == pytest.approx(swapped)
    assert ndcg_at(["c", "x"], gains) == 0.0  # gain 0 means not relevant
    assert ndcg_at([], gains) == 0.0


def test_recall_and_mrr_at_their_cutoffs():
    gains = {"a": 1, "b": 1}
    assert recall_at(["x", "a"], gains, k=1) == 0.0
    assert recall_at(["x", "a"], gains, k=2) == 0.5
    assert mrr_at(["x", "y", "b"], gains) == pytest.approx(1 / 3)
    assert mrr_at(["x"] * 10 + ["a"], gains) == 0.0


def test_percentiles_are_nearest_rank():
    samples = [float(i) for i in range(1, 101)]
    assert percentiles(samples) == {"p50_ms": 50.0, "p95_ms": 95.0, "p99_ms": 99.0}


def write_beir(folder, header: bool):
    docs = [
        {
            "_id": "d1",
            "title": "Pumpkin soup",
            "text": "Roast the pumpkin, then blend it with stock and cream.",
        },
        {
            "_id": "d2",
            "title": "Bicycle repair",
            "text": "Fix a flat tyre by patching the inner tube.",
        },
        {
            "_id": "d3",
            "title": "Sourdough bread",
            "text": "A starter of flour and water leavens the dough.",
        },
    ]
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in docs))
    (folder / "queries.jsonl").write_text(
        "\n".join(
            json.dumps(q)
            for q in [
                {"_id": "q1", "text": "how do I patch a flat bicycle tyre"},
                {"_id": "q2", "text": "pumpkin soup recipe"},
                {"_id": "q3", "text": "a query without judgements"},
            ]
        )
    )
    lines = (["query-id\tcorpus-id\tscore"] if header else []) + [
        "q1\td2\t1",
        "q2\td1\t2",
        "q2\td3\t0",
    ]
    (folder / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("header", [True, False])
def test_load_beir_reads_qrels_with_or_without_a_header(tmp_path, header):
    write_beir(tmp_path / "tiny", header)
    corpus = load_beir(tmp_path / "tiny")
    assert corpus.qrels == {"q1": {"d2": 1}, "q2": {"d1": 2, "d3": 0}}
    assert set(corpus.queries) == {"q1", "q2"}  # only judged queries are evaluated


@pytest.mark.django_db
def test_kb_bench_runs_end_to_end_and_prints_one_json_object(tmp_path, capsys):
    write_beir(tmp_path / "tiny", header=True)
    call_command("kb_bench", beir=[str(tmp_path / "tiny")], json=True)
    out = capsys.readouterr().out.strip().splitlines()
    report = json.loads(out[-1])
    for key in (
        "ndcg@10",
        "recall@100",
        "mrr@10",
        "p50_ms",
        "p95_ms",
        "p99_ms",
        "ingest_docs_per_s",
        "embed_docs_per_s",
        "channels",
    ):
        assert key in report, key
    assert (
        report["ndcg@10"] == 1.0 and report["recall@100"] == 1.0
    )  # each query's one answer ranks first
    assert set(report["channels"]) == {"vector", "lexical", "rrf"}
    # what the figures were measured with: this processor, these packages, this database
    measured = report["measured_with"]
    assert measured["processor"] == processor() and measured["processor"]["model"]
    assert measured["packages"]["onnxruntime"] == metadata.version("onnxruntime")
    assert measured["packages"]["torch"] == metadata.version("torch")
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        assert measured["database"]["postgresql"] == cursor.fetchone()[0]
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        assert measured["database"]["pgvector"] == cursor.fetchone()[0]
    # the ranker's weight is fitted to the qrels and cross-validated, and not stored without
    # --keep-fit
    assert (
        report["fusion"]["lexical_weight"] in WEIGHT_GRID
        and len(report["fusion"]["fold_weights"]) == 2
    )
    assert (
        report["fusion"]["stored"] is False
        and report["fitted_ndcg@10"] == report["fitted"]["ndcg@10"]
    )
    # the default as a namespace without judged queries serves it: English, every channel, and equal
    # weights
    default = report["default_weights"]
    assert set(default) == {
        "ndcg@10",
        "recall@100",
        "mrr@10",
        "lexical_weight",
        "channels",
        "served",
        "median_excess",
    }
    assert default["served"] == {
        "lexical weight 0.5, channels vector, lexical, names, identifiers": 2
    }
    assert default["lexical_weight"] == 0.5 and default["channels"] == [
        "vector",
        "lexical",
        "names",
        "identifiers",
    ]
    assert isinstance(default["median_excess"], float)
    assert report["default_versus_best"]["method"] in report["channels"]
    assert any(
        line.startswith(
            "default weights as served without judged queries (lexical weight 0.5; the queries' "
            "best passages a median "
        )
        for line in out
    )
    assert not FusionCalibration.objects.filter(namespace__slug="bench-tiny").exists()
    versus = report["fitted_versus_best"]
    assert (
        versus["method"] in report["channels"]
        and versus["wins"] + versus["losses"] + versus["ties"] == 2
    )
    assert any(line.startswith(f"fitted ranker vs {versus['method']}") for line in out)
    assert report["ingest_measured"] == "this run"
    assert report["ingest_vs_embed"] == round(
        report["ingest_docs_per_s"] / report["embed_docs_per_s"], 3
    )
    before, after = report[
        "embed_docs_per_s_measured"
    ]  # the model timed on both sides of the ingest
    assert before > 0 and after > 0 and report["embed_docs_per_s"] == round((before + after) / 2, 2)
    assert any("before the ingest" in line for line in out)
    for surface in ("api", "page"):
        assert report["server_time"][surface]["p50_ms"] > 0
    assert any(line.startswith("server time, search page") for line in out)

    write_beir(tmp_path / "other", header=False)
    call_command(
        "kb_bench",
        beir=[str(tmp_path / "tiny"), str(tmp_path / "other")],
        json=True,
        skip_latency=True,
        lexical_agreement=1,
        admin=True,
        keep_fit=True,
    )
    out = capsys.readouterr().out.strip().splitlines()
    again, other = json.loads(out[-1])["corpora"]
    agreement = again[
        "lexical_agreement"
    ]  # the tiny corpus gets packed lists for the comparison only
    assert agreement["posting_lists"] == "built for this comparison" and set(agreement) >= {
        "cold",
        "warm",
    }
    for cache in ("cold", "warm"):
        c = agreement[cache]
        assert (
            c["overlap_mean"] == c["overlap_min"] == 1 and c["queries"] == c["queries_packed"] == 2
        )
        assert c["largest_score_difference"] < 1e-9 and c["postings_read"]["p50"] > 0
    assert posting_lists.state(Namespace.objects.get(slug="bench-tiny").id) is None  # dropped again
    assert any(
        line.startswith("lexical channel on bench-tiny (posting lists built for this comparison)")
        for line in out
    )
    pages = again["admin"]
    assert pages["namespace"] == "bench-tiny" and pages["chunk search"]["median_ms"] > 0
    assert any(line.startswith("admin pages over bench-tiny") for line in out)
    assert again["ingest_measured"].startswith("run ")  # unchanged corpus: not re-ingested
    assert len(again["embed_docs_per_s_measured"]) == 1  # nothing to bracket: measured once
    assert "ingest_vs_embed" not in again  # an older run's ingest is not set against today's model
    assert "ingest_vs_embed" in other  # ingested in this run, the model timed around it
    assert again["ndcg@10"] == report["ndcg@10"] and other["corpus"] == "other"
    calibration = FusionCalibration.objects.get(
        namespace__slug="bench-tiny"
    )  # --keep-fit stores the fit
    assert (
        calibration.lexical_weight == again["fusion"]["lexical_weight"] and calibration.queries == 2
    )
    assert (
        again["fusion"]["stored"] is True and again["fusion"]["version"] == calibration.version == 1
    )
    table = out[out.index("side by side, nDCG@10 / R@100:") + 1 :]
    assert table[0].split() == ["method", "tiny", "other"]
    assert [row.split()[0] for row in table[1:6]] == [
        "default",
        "fitted",
        "vector",
        "lexical",
        "rrf",
    ]

    # a quality run with a slow model: the model is not timed alone, the rest is measured as before
    call_command(
        "kb_bench",
        beir=[str(tmp_path / "other")],
        json=True,
        skip_latency=True,
        skip_throughput=True,
    )
    out = capsys.readouterr().out.strip().splitlines()
    quick = json.loads(out[-1])
    assert "embed_docs_per_s" not in quick and "embedding_process_mb" not in quick
    assert quick["ndcg@10"] == other["ndcg@10"] and quick["ingest_measured"].startswith("run ")
    assert any(line.endswith("raw embedding not timed") for line in out)


def test_paired_comparison_counts_queries_and_tests_the_difference():
    from evaluation.metrics import paired_comparison

    better = {f"q{i}": 0.8 for i in range(30)}
    worse = {f"q{i}": 0.5 for i in range(30)}
    result = paired_comparison(better, worse, rounds=2000)
    assert (result["wins"], result["losses"], result["ties"]) == (30, 0, 0)
    assert result["mean_difference"] == 0.3 and result["p_value"] < 0.01
    mixed = {f"q{i}": (0.6 if i % 2 else 0.4) for i in range(30)}
    flat = {f"q{i}": 0.5 for i in range(30)}
    noisy = paired_comparison(mixed, flat, rounds=2000)
    assert noisy["wins"] == noisy["losses"] == 15 and noisy["p_value"] > 0.5


@pytest.mark.django_db
def test_kb_bench_scaling_run_reports_both_passes_stages_sizes_and_build_times(tmp_path, capsys):
    write_beir(tmp_path / "tiny", header=True)
    call_command(
        "kb_bench", beir=[str(tmp_path / "tiny")], json=True, skip_quality=True, scale_chunks=9
    )
    out = capsys.readouterr().out.strip().splitlines()
    scale = json.loads(out[-1])["scale"]
    assert (
        scale["chunks"] >= 9
        and scale["vector_index"] == "too-small"
        and scale["namespace"].endswith("-scale-9")
    )
    assert scale["first_pass"]["p95_ms"] > 0 and scale["p95_ms"] > 0
    assert {"channels_ms", "vector_ms", "rank_ms", "hydrate_ms", "total_ms"} <= set(scale["stages"])
    assert scale["sizes"]["kb_chunk_term"] > 0 and "vector_index" not in scale["sizes"]
    assert scale["posting_lists"] == "too-small" and scale["posting_lists_built_s"] == 0
    assert any(line.startswith("scaling run (") and "first pass" in line for line in out)
    assert any(line.startswith("copies written in") for line in out)


@pytest.mark.django_db
def test_scaled_copies_keep_their_words_and_a_copy_made_by_another_recipe_is_refused():
    from evaluation.scale import build_scaled_copy
    from kb.models import Chunk, Source
    from tests.corpus import ingest

    long_text = " ".join(
        f"word{i}" for i in range(200)
    )  # 200 distinct words, so drops are countable
    base, _ = ingest(
        "tenant:scale-base", {"long": ("Long", long_text), "short": ("Short", "a few words only")}
    )
    per_copy = Chunk.objects.filter(namespace=base).count()
    built = build_scaled_copy("tenant:scale-base", "tenant:scale-copy", 2 * per_copy)
    assert built.chunks == 2 * per_copy
    originals = {
        c.position: set(c.text.split())
        for c in Chunk.objects.filter(namespace=base, document__ref="long")
    }
    copies = Chunk.objects.filter(
        namespace__slug="tenant:scale-copy", document__ref__startswith="long~"
    )
    assert copies.count() == 2 * len(originals)
    for chunk in copies:
        words, original = set(chunk.text.split()), originals[chunk.position]
        kept = len(words & original) / len(original)
        assert 0.9 <= kept < 1.0, (
            kept
        )  # about one word in 21-27 is dropped, never whole runs of words
        assert words - original == {f"copy{chunk.document.ref.split('~')[1]}"}  # the copy marker
    Source.objects.filter(namespace__slug="tenant:scale-copy").update(
        name="scaled copies, recipe 1"
    )
    with pytest.raises(ValueError, match="another recipe"):
        build_scaled_copy("tenant:scale-base", "tenant:scale-copy", 3 * per_copy)


@pytest.mark.django_db(
    transaction=True
)  # its live server thread reads the token from its own connection
def test_kb_bench_mcp_times_every_tool_beside_its_api_twin(tmp_path, capsys):
    from config.mcp import TOOLS
    from kb.models import ApiToken, Provider

    write_beir(tmp_path / "tiny", header=True)
    call_command(
        "kb_bench",
        beir=[str(tmp_path / "tiny")],
        json=True,
        skip_quality=True,
        skip_latency=True,
        mcp=True,
    )
    out = capsys.readouterr().out.strip().splitlines()
    report = json.loads(out[-1])["mcp"]
    from evaluation.mcp_bench import NO_ANSWER_MODEL

    for tool in TOOLS:  # every tool measured (fetch twice: a passage and a document)
        assert any(name.startswith(f"mcp {tool.name}") for name in report), tool.name
    assert report["mcp answer"] == {
        "not_measured": NO_ANSWER_MODEL
    }  # no model here: said, not timed
    for name in ("api search", "mcp search", "api context", "api knowledge retrieve"):
        assert report[name]["p95_ms"] > 0, name
    assert report["mcp_overhead_over_api_search_p95_ms"] == round(
        report["mcp search overhead"]["p95_ms"] - report["api search overhead"]["p95_ms"], 2
    )
    assert any(line.startswith("MCP overhead over /api/search") for line in out)
    assert (
        not ApiToken.objects.filter(name="kb_bench --mcp").exists()
        and not Provider.objects.exists()
    )  # cleaned up


@pytest.mark.django_db
def test_kb_bench_compares_document_runtimes_each_in_its_own_namespace(tmp_path, capsys):
    write_beir(tmp_path / "tiny", header=True)
    call_command(
        "kb_bench",
        beir=[str(tmp_path / "tiny")],
        runtimes=["torch", "onnx-int8"],
        fresh=True,
        skip_latency=True,
        json=True,
    )
    out = capsys.readouterr().out.strip().splitlines()
    torch_run, int8_run = json.loads(out[-1])["corpora"]
    assert (torch_run["runtime"], int8_run["runtime"]) == ("torch", "onnx-int8")
    for report in (torch_run, int8_run):
        assert (
            report["namespace"] == f"bench-tiny-{report['runtime']}"
            and report["ingest_measured"] == "this run"
        )
        runtimes = Chunk.objects.filter(namespace__slug=report["namespace"]).values_list(
            "embedding_runtime", flat=True
        )
        assert set(runtimes) == {report["runtime"]}
        process = report[
            "embedding_process_mb"
        ]  # a fresh process per runtime, so each peak is its own
        assert process["runtime"] == report["runtime"] and process["peak"] >= process["now"] > 100
        assert report["default_weights"]["ndcg@10"] == 1.0
    table = out[out.index(next(line for line in out if line.startswith("document runtimes"))) :]
    assert table[2].split()[:2] == ["tiny", "torch"] and table[3].split()[:2] == [
        "tiny",
        "onnx-int8",
    ]
    assert "+0.0000" in table[3] and table[2].split()[5] == "1.00x"
