"""The label-free weights a namespace's search log estimates: each search's excess over chance,
read from the namespace's passages and logged, and the median of the latest, kept by the log's
writer, that sets the weights when no judged queries fitted them. Real database, real model."""

import numpy as np
import pytest
from django.utils import timezone

from kb.embedding.embedders import get_embedder
from kb.models import Chunk, FusionCalibration, MeaningEstimate, QueryLog
from retrieval import meaning_spread, querylog
from retrieval.breadth import ESTIMATE_MIN_SEARCHES, WORDS_OFF_EXCESS, meaning_excess
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


def test_a_namespace_whose_searches_stand_far_beyond_chance_ranks_by_meaning_alone(corpus, client):
    namespace = corpus
    _logged(namespace, 2.6, ESTIMATE_MIN_SEARCHES - 1)
    _logged(namespace, None, 30)  # searches without meaning, or filtered: not counted
    assert (
        search("pumpkin soup", namespace.slug, log=False).fusion.source == "default"
    )  # too few to tell
    _logged(namespace, 2.4, 1)
    estimated = search("pumpkin soup", namespace.slug, log=False)
    assert (
        estimated.fusion.source,
        estimated.fusion.lexical,
        estimated.summary.lexical_weight,
    ) == ("estimated", 0, 0)
    assert estimated.fusion.reason.startswith(
        f"estimated from this namespace's search log: {ESTIMATE_MIN_SEARCHES} "
        "of its latest searches stood a median 2.6 standard deviations"
    )
    assert all(
        h.details.base == pytest.approx(max(h.cosine, 1e-6)) for h in estimated.hits
    )  # meaning alone
    namespace.is_public = True
    namespace.save()
    answer = client.get(
        "/api/search", {"query": "pumpkin soup", "namespace": namespace.slug}
    ).json()
    fusion = answer["summary"]["fusion"]
    assert (fusion["source"], fusion["lexical"]) == ("estimated", 0.0)
    # judged queries, where there are some, decide instead
    FusionCalibration.objects.create(
        namespace=namespace,
        lexical_weight=0.25,
        fitted_on="eval suite garden",
        queries=12,
        cross_validated_ndcg=0.81,
        default_ndcg=0.74,
        fitted_at=timezone.now(),
    )
    assert search("pumpkin soup", namespace.slug, log=False).fusion.source == "fitted"


def test_the_words_stop_weighing_at_the_threshold_beyond_chance(corpus):
    namespace = corpus
    _logged(namespace, WORDS_OFF_EXCESS - 0.01, ESTIMATE_MIN_SEARCHES)  # a manual's searches
    assert search(
        "pumpkin soup", namespace.slug, log=False
    ).summary.lexical_weight == pytest.approx(0.5)
    _logged(
        namespace, WORDS_OFF_EXCESS, ESTIMATE_MIN_SEARCHES + 1
    )  # the median moves to the threshold
    assert search("pumpkin soup", namespace.slug, log=False).summary.lexical_weight == 0.0
    # the product's own tools (benchmarks, evaluation) do not count
    _logged(
        namespace, WORDS_OFF_EXCESS - 1, 3 * ESTIMATE_MIN_SEARCHES, caller=QueryLog.Caller.INTERNAL
    )
    assert search("pumpkin soup", namespace.slug, log=False).summary.lexical_weight == 0.0


def test_the_namespace_console_shows_what_the_log_estimates(corpus, client, django_user_model):
    namespace = corpus
    client.force_login(django_user_model.objects.create_superuser("root", "root@example.org", "pw"))
    page = client.get(f"/admin/kb/namespace/{namespace.pk}/change/").content.decode()
    assert "default (no judged queries fitted)</div>" in page
    _logged(namespace, 2.6, 3)
    page = client.get(f"/admin/kb/namespace/{namespace.pk}/change/").content.decode()
    assert (
        "3 of its latest searches stood a median 2.6 standard deviations beyond chance, fewer than "
        "the 20 a median needs"
    ) in page
    _logged(namespace, 1.2, ESTIMATE_MIN_SEARCHES)
    page = client.get(f"/admin/kb/namespace/{namespace.pk}/change/").content.decode()
    assert (
        "23 of its latest searches stood a median 1.2 standard deviations beyond chance, below "
        "the 2.6" in page
    )
    _logged(namespace, 2.6, ESTIMATE_MIN_SEARCHES)
    page = client.get(f"/admin/kb/namespace/{namespace.pk}/change/").content.decode()
    assert (
        "1 / 0, estimated from the search log (43 of its latest searches stood a median 2.6" in page
    )
    assert (
        "1 / 0, estimated" in client.get("/admin/kb/namespace/").content.decode()
    )  # the list shows it too


def test_the_estimate_reads_the_latest_searches_only(corpus):
    namespace = corpus
    _logged(namespace, 2.6, ESTIMATE_MIN_SEARCHES)
    assert MeaningEstimate.objects.get(namespace=namespace).searches == ESTIMATE_MIN_SEARCHES
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
        for i in range(ESTIMATE_MIN_SEARCHES)
    ]  # outside a transaction: queued for the writer
    querylog.flush()
    assert QueryLog.objects.filter(pk__in=ids).count() == len(ids)
    estimate = MeaningEstimate.objects.get(namespace=namespace)
    assert estimate.searches == ESTIMATE_MIN_SEARCHES and estimate.median_excess == pytest.approx(
        3.095
    )


def test_the_benchmark_serves_each_query_the_estimate_of_the_others_never_its_own(corpus):
    from evaluation.search_parts import unjudged_defaults

    namespace = corpus
    queries = {f"q{i}": "pumpkin soup" for i in range(ESTIMATE_MIN_SEARCHES + 1)}
    excess = {qid: 3.0 for qid in queries} | {"q0": None}  # q0 logged none (a filtered search)
    served = unjudged_defaults(namespace.slug, queries, excess)
    # q0's others are 20 broad searches; every other query has only 19 others with an excess
    assert served["q0"][0] == 0.0 and {served[qid][0] for qid in queries if qid != "q0"} == {0.5}
