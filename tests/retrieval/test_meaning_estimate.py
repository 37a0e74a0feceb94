"""What a namespace's search log says of it: each search's excess over chance, read from the
namespace's passages and logged, and the median of the latest, kept by the log's writer and shown
in the console. It does not set the weights (measured out of sample: docs/benchmarks.md). Real
database, real model."""

import numpy as np
import pytest

from kb.embedding.embedders import get_embedder
from kb.models import Chunk, MeaningEstimate, QueryLog
from retrieval import meaning_spread, querylog
from retrieval.breadth import meaning_excess
from retrieval.service import Filters, search
from tests.corpus import CORPUS, ingest

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_samples():
    """Each test reads its namespace's passages afresh (another test's sample may share its id)."""
    meaning_spread.forget_samples()
    yield
    meaning_spread.forget_samples()


def test_the_excess_of_a_small_namespace_is_read_over_every_passage(corpus):
    namespace = corpus
    vectors = np.asarray(
        [
            np.asarray(v, dtype=np.float32)
            for v in Chunk.objects.filter(namespace=namespace).values_list("embedding", flat=True)
        ]
    )
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    query = np.asarray(
        get_embedder().embed_query("how long should I roast pumpkin for soup"), dtype=np.float32
    )
    cosines = vectors @ (query / np.linalg.norm(query))
    exact = meaning_excess(
        float(cosines.max()), float(cosines.mean()), float(cosines.std()), len(vectors)
    )
    # read now (a search does not wait for it: see below), over every passage of a namespace this
    # small
    assert meaning_spread.query_excess(
        namespace.pk, len(vectors), query, float(cosines.max()), wait=True
    ) == (pytest.approx(exact, abs=1e-4))
    result = search("how long should I roast pumpkin for soup", namespace.slug, limit=3)
    assert result.meaning_excess == pytest.approx(
        exact, abs=1e-3
    )  # the vector channel's best is the best
    querylog.flush()
    assert QueryLog.objects.get(pk=result.query_id).meaning_excess == pytest.approx(
        result.meaning_excess
    )


@pytest.mark.django_db(transaction=True)
def test_the_first_search_reads_the_sample_on_a_thread_and_logs_no_excess_until_it_is_read():
    import time

    meaning_spread.forget_samples()
    namespace, _ = ingest("estimate-first", CORPUS)
    first = search("pumpkin soup", namespace.slug, log=False)
    assert first.meaning_excess is None and first.hits  # not waited for
    deadline = time.monotonic() + 10
    while (later := search("pumpkin soup", namespace.slug, log=False)).meaning_excess is None:
        assert time.monotonic() < deadline, "the sample was never read"
        time.sleep(0.05)
    assert later.meaning_excess is not None
    meaning_spread.forget_samples()


def test_a_filtered_search_logs_no_excess(corpus):
    namespace, source = corpus, corpus.sources.get()
    meaning_spread.namespace_sample(
        namespace.pk, Chunk.objects.filter(namespace=namespace).count(), wait=True
    )
    assert (
        search("pumpkin", namespace.slug, log=False).meaning_excess is not None
    )  # unfiltered, it has one
    result = search("pumpkin", namespace.slug, filters=Filters(source_ids=[source.pk]))
    querylog.flush()
    assert (
        result.meaning_excess is None
        and QueryLog.objects.get(pk=result.query_id).meaning_excess is None
    )


def _logged(namespace, excess, count, caller=QueryLog.Caller.API):
    for i in range(count):  # as searches log themselves: the writer keeps the namespace's estimate
        querylog.record(
            namespace_id=namespace.pk, query=f"q{i}", meaning_excess=excess, caller=caller
        )


def test_a_namespace_whose_searches_stand_far_beyond_chance_keeps_equal_weights(corpus, client):
    """An encyclopedia's searches stand far beyond chance, and so do a dictionary's: words off
    from a broad median cost a dictionary the rule was not chosen on 0.098, so the log is shown,
    not obeyed."""
    namespace = corpus
    _logged(namespace, 3.5, 40)  # far beyond the medians of DBpedia (2.99) and WordNet (2.91)
    assert MeaningEstimate.objects.get(namespace=namespace).median_excess == pytest.approx(3.5)
    served = search("pumpkin soup", namespace.slug, log=False)
    assert (served.fusion.source, served.fusion.lexical, served.summary.lexical_weight) == (
        "default",
        0.5,
        0.5,
    )
    assert "search log" not in served.fusion.reason
    namespace.is_public = True
    namespace.save()
    fusion = client.get(
        "/api/search", {"query": "pumpkin soup", "namespace": namespace.slug}
    ).json()["summary"]["fusion"]
    assert (fusion["source"], fusion["lexical"]) == ("default", 0.5)


def test_the_namespace_console_shows_what_the_log_says_and_that_it_does_not_set_the_weights(
    corpus, client, django_user_model
):
    namespace = corpus
    client.force_login(django_user_model.objects.create_superuser("root", "root@example.org", "pw"))
    page = client.get(f"/admin/kb/namespace/{namespace.pk}/change/").content.decode()
    assert "default (no judged queries fitted)</div>" in page
    _logged(namespace, 2.6, 3)
    page = client.get(f"/admin/kb/namespace/{namespace.pk}/change/").content.decode()
    assert (
        "default (no judged queries fitted; 3 of its latest searches stood a median 2.6 standard "
        "deviations beyond chance, which does not set the weights)"
    ) in page
    assert "which does not set the weights" in client.get("/admin/kb/namespace/").content.decode()


def test_the_estimate_reads_the_latest_searches_only(corpus):
    namespace = corpus
    _logged(namespace, 2.6, 20)
    assert MeaningEstimate.objects.get(namespace=namespace).searches == 20
    # the product's own tools (benchmarks, evaluation) do not count
    _logged(namespace, 9.0, 30, caller=QueryLog.Caller.INTERNAL)
    estimate = MeaningEstimate.objects.get(namespace=namespace)
    assert (estimate.searches, estimate.median_excess) == (20, pytest.approx(2.6))
    _logged(
        namespace, None, querylog.ESTIMATE_WINDOW
    )  # the broad searches are no longer among the latest
    assert MeaningEstimate.objects.get(namespace=namespace).searches == 0
    assert search("pumpkin soup", namespace.slug, log=False).fusion.source == "default"


@pytest.mark.django_db(transaction=True)
def test_the_log_writer_keeps_the_estimate_of_the_namespaces_it_wrote():
    namespace, _ = ingest("estimate-writer", CORPUS)
    ids = [
        querylog.record(namespace_id=namespace.pk, query=f"q{i}", meaning_excess=3.0 + i / 100)
        for i in range(20)
    ]  # outside a transaction: queued for the writer
    querylog.flush()
    assert QueryLog.objects.filter(pk__in=ids).count() == len(ids)
    estimate = MeaningEstimate.objects.get(namespace=namespace)
    assert estimate.searches == 20 and estimate.median_excess == pytest.approx(3.095)
