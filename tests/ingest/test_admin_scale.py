"""The curator's console on tables that grow to millions of rows: estimated counts, chunk search
through the lexical channel, fixed filter choices, and run and source pages that stay short."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from kb.admin_counts import EstimatedCountPaginator
from kb.models import Chunk, IngestItem, IngestRun
from tests.corpus import CORPUS

pytestmark = pytest.mark.django_db


@pytest.fixture
def curator(client):
    client.force_login(
        get_user_model().objects.create_superuser("curator", "c@example.com", "pw-123456789")
    )
    return client


def test_counts_are_exact_when_small_and_the_statistics_estimate_when_unfiltered(
    corpus, monkeypatch
):
    filtered = Chunk.objects.filter(document__ref__in=["pumpkin", "garden"])
    assert EstimatedCountPaginator(filtered, 100).count == 2
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE kb_chunk")
        cursor.execute("SELECT reltuples::bigint FROM pg_class WHERE oid = 'kb_chunk'::regclass")
        estimate = cursor.fetchone()[0]
    monkeypatch.setattr(
        EstimatedCountPaginator, "EXACT_COUNT_BELOW", 0
    )  # as for a table of millions
    assert (
        EstimatedCountPaginator(Chunk.objects.all(), 100).count == estimate == Chunk.objects.count()
    )
    assert (
        EstimatedCountPaginator(filtered, 100).count >= 1
    )  # the planner's estimate, never a count


def test_chunk_search_goes_through_the_lexical_channel(curator, corpus):
    page = curator.get("/admin/kb/chunk/", {"q": "pumpkins"}).content.decode()
    listed = set(re.findall(r"/admin/kb/chunk/(\d+)/change/", page))
    expected = {
        str(pk)
        for pk in Chunk.objects.filter(document__ref__in=["pumpkin", "garden"]).values_list(
            "pk", flat=True
        )
    }
    assert listed == expected  # stemmed words, as search matches them: "pumpkins" finds "pumpkin"
    assert not re.findall(
        r"/admin/kb/chunk/(\d+)/change/",
        curator.get("/admin/kb/chunk/", {"q": "umpki"}).content.decode(),
    )  # no substring scan


def test_the_embed_reason_filter_offers_the_pipelines_reasons(curator, corpus):
    page = curator.get("/admin/kb/chunk/", {"embed_reason": "new"}).content.decode()
    assert (
        "content changed" in page and "site boilerplate learned" in page
    )  # offered without a scan
    assert len(set(re.findall(r"/admin/kb/chunk/(\d+)/change/", page))) == len(CORPUS)
    assert not re.findall(
        r"/admin/kb/chunk/(\d+)/change/",
        curator.get("/admin/kb/chunk/", {"embed_reason": "model changed"}).content.decode(),
    )


def test_document_and_source_lists_count_per_row(curator, corpus):
    documents = curator.get("/admin/kb/document/").content.decode()
    assert documents.count('class="field-chunk_count">1<') == len(CORPUS)
    sources = curator.get("/admin/kb/source/").content.decode()
    assert f'class="field-document_count">{len(CORPUS)}<' in sources


def test_a_source_page_shows_its_latest_runs_and_a_run_page_its_failed_items_first(curator, corpus):
    from ingest.admin import runs as run_admin
    from ingest.admin import sources as source_admin

    source = corpus.sources.get()
    runs = IngestRun.objects.bulk_create(
        [IngestRun(source=source, status="succeeded") for _ in range(30)]
    )
    page = curator.get(f"/admin/kb/source/{source.pk}/change/").content.decode()
    shown = {int(pk) for pk in re.findall(r"ingestrun/(\d+)/change/", page)}
    assert len(shown) == source_admin.RECENT_RUNS
    latest = (
        IngestRun.objects.filter(source=source).order_by("-queued_at").values_list("pk", flat=True)
    )
    assert shown == set(latest[: source_admin.RECENT_RUNS])

    run = runs[0]
    shown_items = 3
    items = [IngestItem(run=run, ref=f"page-{i}", status="unchanged") for i in range(10)]
    items.append(
        IngestItem(run=run, ref="broken-page", status="failed", error_code="INGEST_HTTP_STATUS")
    )
    IngestItem.objects.bulk_create(items)
    run_admin.ITEMS_SHOWN, saved = shown_items, run_admin.ITEMS_SHOWN
    try:
        run_page = curator.get(f"/admin/kb/ingestrun/{run.pk}/change/").content.decode()
    finally:
        run_admin.ITEMS_SHOWN = saved
    refs = re.findall(r"(page-\d+|broken-page)", run_page)
    assert "broken-page" in refs and len(set(refs)) == shown_items


def test_document_search_goes_by_words_or_by_exact_ref(curator, corpus):
    def listed(query):
        page = curator.get("/admin/kb/document/", {"q": query}).content.decode()
        return {int(pk) for pk in re.findall(r"/admin/kb/document/(\d+)/change/", page)}

    from kb.models import Document

    pumpkins = set(
        Document.objects.filter(ref__in=["pumpkin", "garden"]).values_list("pk", flat=True)
    )
    assert listed("pumpkins") == pumpkins  # the words of their chunks, title included
    assert listed("qwen25") == {Document.objects.get(ref="qwen25").pk}  # an exact ref
    assert listed("Pumpki") == set()  # no substring scan
