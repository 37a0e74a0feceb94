"""What a run's page says of the run, read as a curator reads it: each item's own duration, the
link back from a retry to the run it retries, what a queued run waits behind, and the fields the
page's script keeps live (progress.json)."""

import time
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from ingest.loaders import LoadedItem
from ingest.pipeline import IngestPipeline
from kb.embedding.embedders import get_embedder
from kb.models import IngestItem, IngestRun, Source

pytestmark = pytest.mark.django_db
SLEEP_PER_TEXT_S = 0.05


@pytest.fixture
def curator(client, db):
    client.force_login(
        get_user_model().objects.create_superuser("curator", "c@example.com", "pw-123456789")
    )
    return client


@pytest.fixture
def source(namespace):
    return Source.objects.create(namespace=namespace, name="Manuals", kind="text", text="x")


class SlowEmbedder:
    """The real model, made slow per text: a batch's embedding takes as long as its chunks."""

    def __init__(self):
        self.inner = get_embedder()
        self.model_id, self.dimension = self.inner.model_id, self.inner.dimension

    def embed_documents(self, texts):
        time.sleep(SLEEP_PER_TEXT_S * len(texts))
        return self.inner.embed_documents(texts)

    def embed_query(self, text):
        return self.inner.embed_query(text)


def test_an_items_duration_is_its_own_not_the_batchs(source):
    """A 178-byte note embedded in one batch beside a long manual, after waiting a second for the
    next file: its duration is its own work and its share of the batch, not the batch's time."""
    manual = "\n\n".join(
        f"## Part {i}\n\n" + " ".join(f"word{i}x{j} explains setting {j}." for j in range(60))
        for i in range(40)
    )

    def items():
        yield LoadedItem(
            ref="note.md",
            body=b"# Note\n\n" + b"A short note. " * 12,
            media_type="text/markdown",
            path="note.md",
        )
        time.sleep(1.0)  # the next file is slow to arrive: the note waits in the batch meanwhile
        yield LoadedItem(
            ref="manual.md", body=manual.encode(), media_type="text/markdown", path="manual.md"
        )

    run = IngestPipeline(IngestRun.objects.create(source=source), embedder=SlowEmbedder()).execute(
        items()
    )
    assert run.status == "succeeded", run.error
    took = dict(run.items.values_list("ref", "duration_ms"))
    chunks = dict(run.items.values_list("ref", "chunks"))
    batch_ms = SLEEP_PER_TEXT_S * 1000 * (chunks["note.md"] + chunks["manual.md"])
    assert chunks["manual.md"] >= 20 and batch_ms >= 1000, chunks
    # its own extraction and its share of the batch (one chunk's), not the second it waited nor the
    # manual's time
    assert took["note.md"] < min(1000, took["manual.md"] / 10), (took, chunks)
    assert took["manual.md"] >= 0.8 * batch_ms * chunks["manual.md"] / (
        chunks["note.md"] + chunks["manual.md"]
    )


def test_retrying_a_failed_run_keeps_the_link_back_to_it(curator, source):
    failed = IngestRun.objects.create(
        source=source,
        status="failed",
        error="INGEST_RUN_ABANDONED: the worker died",
        finished_at=timezone.now(),
    )
    response = curator.post(f"/admin/kb/ingestrun/{failed.pk}/retry/")
    retry = IngestRun.objects.exclude(pk=failed.pk).get()
    assert response["Location"] == f"/admin/kb/ingestrun/{retry.pk}/change/"
    assert retry.retry_of_id == failed.pk
    page = curator.get(response["Location"]).content.decode()
    assert f'href="/admin/kb/ingestrun/{failed.pk}/change/"' in page


def test_a_queued_run_says_what_it_waits_behind(curator, source, namespace):
    crawl = Source.objects.create(
        namespace=namespace, name="Python docs", kind="crawl", location="https://docs.python.org/3/"
    )
    long_run = IngestRun.objects.create(
        source=crawl,
        status="running",
        heartbeat_at=timezone.now(),
        started_at=timezone.now() - timedelta(minutes=9),
        items_total=1000,
        items_done=340,
    )
    first = IngestRun.objects.create(source=crawl)
    waiting = IngestRun.objects.create(
        source=source, queued_at=timezone.now() - timedelta(minutes=5)
    )
    expected = f"behind run #{long_run.pk} (Python docs, 340/1000 items); number 2 in the queue."
    page = curator.get(f"/admin/kb/ingestrun/{waiting.pk}/change/").content.decode()
    assert expected in page and "is a worker running?" not in page
    assert expected in curator.get(f"/admin/kb/ingestrun/{waiting.pk}/progress.json").json()["note"]
    assert (
        "number 1 in the queue"
        in curator.get(f"/admin/kb/ingestrun/{first.pk}/progress.json").json()["note"]
    )


def test_progress_json_carries_every_field_the_page_shows(curator, source):
    run = IngestRun.objects.create(
        source=source,
        status="running",
        started_at=timezone.now() - timedelta(seconds=42),
        items_total=3,
        items_done=2,
        items_changed=1,
        items_failed=1,
        attempts=1,
    )
    first = IngestItem.objects.create(
        run=run, ref="a.md", status="changed", byte_size=178, chunks=1, duration_ms=12
    )
    IngestItem.objects.create(
        run=run, ref="b.pdf", status="failed", error_code="INGEST_EMPTY_CONTENT"
    )
    url = f"/admin/kb/ingestrun/{run.pk}/progress.json"
    live = curator.get(url).json()
    assert live["title"] == f"Run #{run.pk} of Manuals (running)"
    fields = live["fields"]
    assert (fields["status"], fields["items_done"], fields["items_failed"], fields["attempts"]) == (
        "Running",
        "2",
        "1",
        "1",
    )
    assert fields["took"].startswith("running for 4") and fields["finished_at"] == "-"
    assert [
        (i["cells"]["ref"], i["cells"]["status"], i["cells"]["error_code"]) for i in live["items"]
    ] == [("a.md", "Changed", "-"), ("b.pdf", "Failed", "INGEST_EMPTY_CONTENT")]
    assert [i["cells"]["ref"] for i in curator.get(url, {"after": first.pk}).json()["items"]] == [
        "b.pdf"
    ]


def test_a_run_of_another_namespace_is_counted_not_named(client, source, namespace):
    from kb.models import Namespace, NamespaceMembership

    theirs = Namespace.objects.create(slug="tenant:other", title="Other")
    secret = Source.objects.create(
        namespace=theirs, name="Secret merger notes", kind="text", text="x"
    )
    IngestRun.objects.create(
        source=secret, status="running", started_at=timezone.now(), heartbeat_at=timezone.now()
    )
    waiting = IngestRun.objects.create(source=source)
    member = get_user_model().objects.create_user("member", password="pw", is_staff=True)
    NamespaceMembership.objects.create(user=member, namespace=namespace, can_write=True)
    client.force_login(member)
    note = client.get(f"/admin/kb/ingestrun/{waiting.pk}/progress.json").json()["note"]
    assert (
        "behind a run of another namespace; number 1 in the queue." in note and "Secret" not in note
    )
