"""`kb_site_bench --defer-embedding`: the real crawl, extraction, chunking and store, with the
chunks left for the next ordinary run to embed, and the same fidelity figures."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

from django.core.management import call_command

from ingest import store
from ingest.decisions import MODEL_CHANGED, change_reason
from ingest.service import start_ingest
from kb.embedding.embedders import get_embedder
from kb.models import Chunk, IngestItem, IngestRun, Source

SITE = Path(__file__).resolve().parent.parent / "fixtures" / "real" / "texi2html"


def _bench(**options) -> dict:
    out = StringIO()
    call_command("kb_site_bench", str(SITE), start="hello.html", json=True, stdout=out, **options)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def test_deferred_embedding_stores_chunks_for_the_next_run_to_embed(db, allow_loopback):
    report = _bench(defer_embedding=True)
    assert report["embedding"] == "deferred"
    assert report["pages_ingested"] == 9  # (the links to pages the fixture lacks fail: 404)
    assert report["recall_worst"] >= 0.98 and report["anchors_resolved_share"] >= 0.95
    assert report["recrawl_changed"] == 0  # the re-crawl finds every page as it was stored
    source = Source.objects.get(namespace__slug="bench-site-texi2html")
    chunks = Chunk.objects.filter(document__source=source)
    assert chunks.count() == report["chunks_stored"] and not chunks.exclude(embedding=None).exists()
    assert set(chunks.values_list("embedding_model", flat=True)) == {""}

    stored = store.stored_documents(source)
    assert {change_reason(d, d.content_hash, get_embedder().model_id) for d in stored.values()} == {
        MODEL_CHANGED
    }

    run = start_ingest(
        source, mode=IngestRun.Mode.REEMBED, sync=True
    )  # the site's server is gone: no fetch
    assert (
        run.status == "succeeded"
        and run.items.filter(status=IngestItem.Status.CHANGED).count() == 9
    )
    assert not chunks.filter(embedding=None).exists()
    assert set(chunks.values_list("embedding_model", flat=True)) == {get_embedder().model_id}


def test_deferred_and_embedded_runs_measure_the_same(db, allow_loopback):
    deferred, embedded = _bench(defer_embedding=True), _bench()
    assert embedded["embedding"] == "embedded"
    keys = (
        "recall_mean",
        "recall_worst",
        "chunks",
        "chunks_stored",
        "chrome_share",
        "permalink_chunks",
        "anchors_checked",
        "anchors_resolved_share",
    )
    assert {k: deferred[k] for k in keys} == {k: embedded[k] for k in keys}


def test_runtimes_crawl_once_each_into_their_own_namespace(db, allow_loopback):
    out = StringIO()
    call_command(
        "kb_site_bench",
        str(SITE),
        start="hello.html",
        runtimes=["torch", "onnx-int8"],
        json=True,
        stdout=out,
    )
    lines = out.getvalue().strip().splitlines()
    reports = json.loads(lines[-1])["runtimes"]
    assert [r["runtime"] for r in reports] == ["torch", "onnx-int8"]
    for report in reports:
        chunks = Chunk.objects.filter(
            document__source__namespace__slug=f"bench-site-texi2html-{report['runtime']}"
        )
        assert chunks.count() == report["chunks_stored"] > 0
        assert set(chunks.values_list("embedding_runtime", flat=True)) == {report["runtime"]}
        assert report["embedding_process_mb"]["runtime"] == report["runtime"]
        assert report["embedding_process_mb"]["peak"] > 100
    assert (
        reports[0]["chunks"] == reports[1]["chunks"]
    )  # the same crawl, only the embedding differs
    summary = lines[
        lines.index(next(line for line in lines if line.startswith("document runtimes"))) + 1 :
    ][:2]
    assert (
        summary[0].startswith("torch")
        and " 1.00x" in summary[0]
        and summary[1].startswith("onnx-int8")
    )
