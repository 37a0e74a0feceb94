"""The ingest pipeline against real PostgreSQL, the real model and a real HTTP server."""

import io

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from ingest.pipeline import IngestPipeline
from ingest.service import retry_run, start_ingest
from ingest.uploads import add_files
from kb.embedding.embedders import get_embedder
from kb.embedding.http import HttpEmbedder
from kb.models import Chunk, Document, IngestRun, Source
from tests.webserver import Route

pytestmark = pytest.mark.django_db


class CountingEmbedder:
    """The real model, with a count of the texts it was asked to embed."""

    def __init__(self, inner=None):
        self.inner = inner or get_embedder()
        self.model_id, self.dimension = self.inner.model_id, self.inner.dimension
        self.texts = 0

    def embed_documents(self, texts):
        self.texts += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text):
        return self.inner.embed_query(text)


def _run(source, embedder, mode=IngestRun.Mode.INGEST, retry_of=None):
    run = IngestRun.objects.create(source=source, mode=mode, retry_of=retry_of)
    return IngestPipeline(run, embedder=embedder).execute()


def _site(web):
    web.routes["/sitemap.xml"] = Route(
        f"""<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
      <url><loc>{web.url("/install")}</loc></url><url><loc>{web.url("/usage")}</loc></url>
      <url><loc>{web.url("/faq")}</loc></url></urlset>""".encode(),
        200,
        {"Content-Type": "application/xml"},
    )
    web.page(
        "/install", "<title>Install</title><h1>Install</h1><p>Run pip install kb.</p>", ETag='"i1"'
    )
    web.page(
        "/usage",
        "<title>Usage</title><h1>Usage</h1><h2>Search</h2><p>Type a query.</p>",
        ETag='"u1"',
    )
    web.page("/faq", "<title>FAQ</title><h1>FAQ</h1><p>Questions and answers.</p>", ETag='"f1"')


@pytest.fixture
def site_source(web, namespace, allow_loopback):
    _site(web)
    return Source.objects.create(
        namespace=namespace,
        name="site",
        kind="sitemap",
        location=web.url("/sitemap.xml"),
        options={"use_llms_txt": False},
    )


def _chunk_writes(queries):
    return [
        q["sql"]
        for q in queries
        if q["sql"].split()[0] in ("INSERT", "UPDATE", "DELETE")
        and ('"kb_chunk"' in q["sql"] or '"kb_document"' in q["sql"])
    ]


def test_resync_skips_unchanged_reembeds_edits_and_removes_vanished_pages(web, site_source):
    embedder = CountingEmbedder()
    first = _run(site_source, embedder)
    assert (first.status, first.items_changed, first.chunks_written) == ("succeeded", 3, 3)
    assert set(
        Chunk.objects.filter(document__source=site_source).values_list("embed_reason", flat=True)
    ) == {"new"}
    usage = Document.objects.get(ref=web.url("/usage"))
    assert usage.title == "Usage" and usage.etag == '"u1"'
    # no ids on the page: the h2 is cited at the page top (no invented slug); the bare h1 opens its
    # chunk
    assert list(usage.chunks.values_list("anchor", flat=True)) == [""]

    # a second run of the unchanged source: 304s, zero embedding calls, zero writes
    embedder.texts = 0
    with CaptureQueriesContext(connection) as queries:
        second = _run(site_source, embedder)
    assert (second.status, second.items_unchanged, second.items_changed) == ("succeeded", 3, 0)
    assert embedder.texts == 0
    assert _chunk_writes(queries.captured_queries) == []

    # edit one page, drop another from the sitemap
    web.page(
        "/usage", "<title>Usage</title><h1>Usage</h1><p>Now one section only.</p>", ETag='"u2"'
    )
    web.routes["/sitemap.xml"].body = web.routes["/sitemap.xml"].body.replace(
        f"<url><loc>{web.url('/faq')}</loc></url>".encode(), b""
    )
    faq_chunks = list(
        Chunk.objects.filter(document__ref=web.url("/faq")).values_list("pk", flat=True)
    )
    third = _run(site_source, embedder)
    assert (third.items_changed, third.items_unchanged, third.items_removed) == (1, 1, 1)
    assert embedder.texts == 1
    usage_chunks = Chunk.objects.filter(document__ref=web.url("/usage"))
    assert [(c.position, c.embed_reason) for c in usage_chunks] == [
        (0, "content changed")
    ]  # orphan tail gone
    assert not Chunk.objects.filter(pk__in=faq_chunks).exists()
    assert {i.ref: i.status for i in third.items.all()} == {
        web.url("/install"): "unchanged",
        web.url("/usage"): "changed",
        web.url("/faq"): "removed",
    }
    # an item's size is the bytes read, changed or not (as a file's is), not its extracted text's
    sizes = {i.ref: i.byte_size for i in first.items.all()}
    assert sizes[web.url("/install")] == len(web.routes["/install"].body)
    assert sizes[web.url("/faq")] == len(web.routes["/faq"].body)


def test_an_edited_page_embeds_only_the_passages_whose_text_changed(web, site_source):
    sections = [
        f"<h2 id='s{n}'>Part {n}</h2><p>{'Paragraph about topic %d. ' % n * 60}</p>"
        for n in range(4)
    ]
    web.page("/usage", "<title>Usage</title><h1>Usage</h1>" + "".join(sections), ETag='"u1"')
    embedder = CountingEmbedder()
    first = _run(site_source, embedder)
    usage = Chunk.objects.filter(document__ref=web.url("/usage")).order_by("position")
    before = {c.anchor: (c.text, list(c.embedding)) for c in usage}
    assert len(before) == 4 and first.chunks_embedded == first.chunks_written == embedder.texts == 6

    sections[2] = "<h2 id='s2'>Part 2</h2><p>This part was rewritten from start to end.</p>"
    web.page("/usage", "<title>Usage</title><h1>Usage</h1>" + "".join(sections), ETag='"u2"')
    embedder.texts = 0
    edited = _run(site_source, embedder)
    assert (edited.items_changed, embedder.texts, edited.chunks_total, edited.chunks_embedded) == (
        1,
        1,
        1,
        1,
    )
    assert edited.chunks_written == 4  # the page's passages, all written again
    after = {
        c.anchor: (c.text, list(c.embedding), c.embed_reason)
        for c in Chunk.objects.filter(document__ref=web.url("/usage"))
    }
    assert after["s2"][2] == "content changed" and after["s2"][0] != before["s2"][0]
    for anchor in ("s0", "s1", "s3"):  # the same text keeps its vector and why it was computed
        assert after[anchor] == (*before[anchor], "new")


def test_one_failing_item_does_not_abort_the_run_and_can_be_retried(web, site_source):
    web.routes["/faq"] = Route(b"boom", 500, {"Content-Type": "text/plain"})
    run = start_ingest(site_source, sync=True)
    assert run.status == "partial"
    assert (run.items_changed, run.items_failed) == (2, 1)
    failed = run.items.get(status="failed")
    assert (failed.ref, failed.error_code) == (web.url("/faq"), "INGEST_HTTP_STATUS")
    assert "500" in failed.error_message
    assert (
        Document.objects.filter(source=site_source).count() == 2
    )  # nothing removed on a partial listing

    web.page("/faq", "<h1>FAQ</h1><p>Back.</p>")
    retry = retry_run(run, sync=True)
    assert (retry.status, retry.mode, retry.items_done, retry.items_changed) == (
        "succeeded",
        "retry",
        1,
        1,
    )
    assert Document.objects.filter(source=site_source).count() == 3


def test_a_run_that_failed_as_a_whole_is_retried_from_its_page_and_skips_what_it_wrote(
    web, site_source, admin_client
):
    """A run abandoned by a dead worker (or cut off by the database) has no failed items, only
    an error saying "Retry the run": its page offers Retry, which runs the source again; the
    documents the failed run had written are unchanged and cost nothing."""
    start_ingest(site_source, sync=True)
    web.page("/faq", "<h1>FAQ</h1><p>Changed while the worker was dead.</p>")
    dead = IngestRun.objects.create(
        source=site_source,
        status="failed",
        items_done=2,
        error="INGEST_RUN_ABANDONED: no heartbeat. Retry the run.",
    )
    page = admin_client.get(reverse("admin:kb_ingestrun_change", args=[dead.pk])).content.decode()
    assert "Retry the run</button>" in page
    response = admin_client.post(reverse("admin:kb_ingestrun_retry", args=[dead.pk]))
    queued = IngestRun.objects.exclude(pk=dead.pk).latest("pk")
    assert response.status_code == 302 and response["Location"].endswith(f"/{queued.pk}/change/")
    assert (queued.status, queued.mode, queued.task_id != "") == ("queued", "ingest", True)
    again = retry_run(dead, sync=True)
    assert (again.status, again.items_unchanged, again.items_changed) == ("succeeded", 2, 1)
    finished = IngestRun.objects.create(source=site_source, status="succeeded")
    assert retry_run(finished) is None
    # a retry of failed items that itself died retries those items, not the whole source
    partial = IngestRun.objects.create(source=site_source, status="partial", items_failed=1)
    died = IngestRun.objects.create(
        source=site_source, status="failed", mode="retry", retry_of=partial
    )
    again = retry_run(died)
    assert (again.mode, again.retry_of_id) == ("retry", partial.pk)


def test_model_change_reembeds_without_refetching_content(web, site_source):
    _run(site_source, CountingEmbedder())

    class OtherModel(CountingEmbedder):
        pass

    other = OtherModel()
    other.model_id = "st:another-model"
    run = _run(site_source, other)
    assert run.items_changed == 3 and other.texts == 3
    assert set(Chunk.objects.values_list("embed_reason", flat=True)) == {"model changed"}


def test_reembed_all_uses_stored_content(web, site_source):
    _run(site_source, CountingEmbedder())
    before = {
        d.ref: (d.path, d.etag, d.metadata) for d in Document.objects.filter(source=site_source)
    }
    hits_before = sum(web.hits.values())
    embedder = CountingEmbedder()
    run = _run(site_source, embedder, mode=IngestRun.Mode.REEMBED)
    assert {
        d.ref: (d.path, d.etag, d.metadata) for d in Document.objects.filter(source=site_source)
    } == before
    assert (run.status, run.items_changed, embedder.texts) == ("succeeded", 3, 3)
    assert sum(web.hits.values()) == hits_before
    assert set(Chunk.objects.values_list("embed_reason", flat=True)) == {"re-embed requested"}


def test_dead_embedder_fails_items_and_writes_nothing(namespace):
    source = Source.objects.create(namespace=namespace, name="t", kind="text", text="# A\n\nbody")
    dead = HttpEmbedder("http://127.0.0.1:9/v1/embeddings", model="x", dimension=384, retries=0)
    run = _run(source, dead)
    assert run.status == "failed"
    item = run.items.get()
    assert item.error_code == "INGEST_EMBEDDER_FAILED"
    assert "127.0.0.1:9" in item.error_message
    assert not Document.objects.filter(source=source).exists()


def test_embedder_failing_midway_leaves_each_document_entirely_old_or_new(namespace):
    from ingest.loaders import LoadedItem
    from kb.embedding.errors import EmbeddingFailed

    source = Source.objects.create(namespace=namespace, name="bulk", kind="text", text="x")
    items = [
        LoadedItem(ref=f"d{i}", body=f"Document {i} version one.".encode(), media_type="text/plain")
        for i in range(3)
    ]
    IngestPipeline(IngestRun.objects.create(source=source), embedder=CountingEmbedder()).execute(
        items
    )

    class FailsOnSecondCall(CountingEmbedder):
        calls = 0

        def embed_documents(self, texts):
            self.calls += 1
            if self.calls == 2:
                raise EmbeddingFailed("model crashed")
            return super().embed_documents(texts)

    from ingest import batcher

    edited = [
        LoadedItem(ref=f"d{i}", body=f"Document {i} version two.".encode(), media_type="text/plain")
        for i in range(3)
    ]
    original = batcher.EMBED_BATCH_CHUNKS
    batcher.EMBED_BATCH_CHUNKS = 1  # one document per embedding call
    try:
        run = IngestPipeline(
            IngestRun.objects.create(source=source), embedder=FailsOnSecondCall()
        ).execute(edited)
    finally:
        batcher.EMBED_BATCH_CHUNKS = original
    assert run.status == "partial"
    texts = dict(Document.objects.filter(source=source).values_list("ref", "content"))
    chunks = dict(
        Chunk.objects.filter(document__source=source).values_list("document__ref", "text")
    )
    assert texts == {
        "d0": "Document 0 version two.\n",
        "d1": "Document 1 version one.\n",
        "d2": "Document 2 version two.\n",
    }
    assert all(chunks[ref].endswith(texts[ref].strip()) for ref in texts)


def test_file_source_from_storage_and_path_traversal(namespace, settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    from kb.conf import kb_settings
    from kb.models import SourceFile

    kb_settings.cache_clear()
    ok = Source.objects.create(namespace=namespace, name="guide", kind="file")
    report = add_files(ok, [("guide.md", io.BytesIO(b"# Guide\n\n## Setup\n\nDo it.\n"))])
    assert report.added == ["guide.md"]
    run = start_ingest(ok, sync=True)
    assert run.status == "succeeded"
    document = Document.objects.get(source=ok)
    assert (document.ref, document.title, document.media_type) == (
        "guide.md",
        "Guide",
        "text/markdown",
    )

    evil = Source.objects.create(namespace=namespace, name="evil", kind="file")
    SourceFile.objects.create(source=evil, path="passwd.txt", key="../../etc/passwd")
    run = start_ingest(evil, sync=True)
    assert run.status == "failed"
    assert run.items.get().error_code == "INGEST_FILE_KEY_INVALID"
    kb_settings.cache_clear()


def test_binary_and_private_targets_are_recorded_per_item(web, namespace, allow_loopback):
    web.routes["/bin"] = Route(
        b"\x00\x01\x02" * 100, 200, {"Content-Type": "application/octet-stream"}
    )
    web.routes["/llms.txt"] = Route(
        f"- [bin]({web.url('/bin')})\n- [meta](http://169.254.169.254/latest)\n".encode(),
        200,
        {"Content-Type": "text/plain"},
    )
    source = Source.objects.create(
        namespace=namespace, name="l", kind="llms", location=web.url("/llms.txt")
    )
    run = start_ingest(source, sync=True)
    assert run.status == "failed"
    assert dict(run.items.values_list("ref", "error_code")) == {
        web.url("/bin"): "INGEST_UNSUPPORTED_TYPE",
        "http://169.254.169.254/latest": "INGEST_FETCH_BLOCKED",
    }


def test_http_embedder_against_a_loopback_openai_compatible_api(web):
    """The HTTP seam for real: batching over a bounded pool, retry after a 503, order by index."""
    import json as jsonlib

    import numpy as np

    calls = []

    def embeddings(handler):
        length = int(handler.headers["Content-Length"])
        payload = jsonlib.loads(handler.rfile.read(length))
        calls.append(payload)
        if len(calls) == 1:
            return Route(b"warming up", 503, {"Content-Type": "text/plain"})
        rows = [
            {"index": i, "embedding": [float(len(text)), 1.0, 0.0]}
            for i, text in enumerate(payload["input"])
        ]
        return Route(
            jsonlib.dumps({"data": list(reversed(rows))}).encode(),
            200,
            {"Content-Type": "application/json"},
        )

    web.post_routes = {"/v1/embeddings": embeddings}
    embedder = HttpEmbedder(
        web.url("/v1/embeddings"),
        model="test-model",
        dimension=3,
        batch_size=2,
        concurrency=2,
        retries=2,
    )
    vectors = embedder.embed_documents(["a", "bbb", "cc"])
    assert vectors.shape == (3, 3)
    assert np.allclose(vectors[1], np.array([3.0, 1.0, 0.0]) / np.linalg.norm([3.0, 1.0, 0.0]))
    assert (
        all(call["model"] == "test-model" for call in calls) and len(calls) == 3
    )  # 1 retried + 2 batches
    wrong = HttpEmbedder(web.url("/v1/embeddings"), model="m", dimension=384, retries=0)
    from kb.errors import EmbeddingDimensionMismatch

    with pytest.raises(EmbeddingDimensionMismatch, match="expected \\(1, 384\\)"):
        wrong.embed_query("x")


def test_documents_of_an_older_pipeline_are_rechunked_and_refetched_whole(web, site_source):
    from ingest.decisions import PIPELINE_VERSION

    embedder = CountingEmbedder()
    assert _run(site_source, embedder).items_changed == 3
    for document in Document.objects.filter(source=site_source):  # same bytes, older pipeline
        Document.objects.filter(pk=document.pk).update(
            metadata={**document.metadata, "pipeline": "0"}
        )
    web.hits.clear()
    embedder.texts = 0
    upgraded = _run(site_source, embedder)
    assert (
        upgraded.items_changed == 3 and embedder.texts == 0
    )  # chunked the same: the vectors stand
    assert set(upgraded.items.values_list("reason", flat=True)) == {"pipeline upgraded"}
    assert all(
        headers.get("if-none-match") is None for path, headers in web.requests[-3:]
    )  # fetched whole
    versions = Document.objects.filter(source=site_source).values_list(
        "metadata__pipeline", flat=True
    )
    assert set(versions) == {PIPELINE_VERSION}
    again = _run(site_source, embedder)
    assert (again.items_changed, again.items_unchanged) == (0, 3)
