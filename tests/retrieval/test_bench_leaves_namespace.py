"""kb_bench measures the product without changing it: its headline is the default (unfitted) ranker,
and the weight it fits is stored on the namespace only when asked (`--keep-fit`)."""

import json

import pytest
from django.core.management import call_command
from django.utils import timezone

from evaluation.fitting import judged_runs
from evaluation.metrics import load_beir, mean_scores
from kb.models import FusionCalibration, Namespace
from tests.retrieval.test_bench import write_beir


def bench(capsys, folder, **options) -> dict:
    call_command(
        "kb_bench",
        beir=[str(folder)],
        json=True,
        skip_latency=True,
        skip_throughput=True,
        **options,
    )
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


@pytest.mark.django_db
def test_a_run_leaves_no_calibration_and_its_headline_is_the_default_ranker(tmp_path, capsys):
    write_beir(tmp_path / "tiny", header=True)
    report = bench(capsys, tmp_path / "tiny")

    assert not FusionCalibration.objects.filter(namespace__slug="bench-tiny").exists()
    assert report["fusion"]["stored"] is False and report["fusion"]["version"] is None
    # the headline is what the namespace serves without judged queries, searched here afresh
    corpus = load_beir(tmp_path / "tiny")
    served = mean_scores(judged_runs("bench-tiny", corpus.queries), corpus.qrels)
    assert (
        report["ndcg@10"]
        == report["default_ndcg@10"]
        == report["default_weights"]["ndcg@10"]
        == served["ndcg@10"]
    )
    assert report["recall@100"] == served["recall@100"] and report["mrr@10"] == served["mrr@10"]
    assert report["fitted_ndcg@10"] == report["fitted"]["ndcg@10"]


@pytest.mark.django_db
def test_a_run_leaves_a_calibration_it_found_as_it_was_and_keep_fit_stores_a_new_one(
    tmp_path, capsys
):
    write_beir(tmp_path / "tiny", header=True)
    bench(capsys, tmp_path / "tiny")  # ingests; the namespace exists now
    namespace = Namespace.objects.get(slug="bench-tiny")
    FusionCalibration.objects.create(
        namespace=namespace,
        lexical_weight=0.3,
        fitted_on="a curator's eval suite",
        queries=40,
        cross_validated_ndcg=0.5,
        default_ndcg=0.4,
        fitted_at=timezone.now(),
    )

    bench(capsys, tmp_path / "tiny")
    found = FusionCalibration.objects.get(namespace=namespace)
    assert (found.lexical_weight, found.fitted_on, found.version) == (
        0.3,
        "a curator's eval suite",
        1,
    )

    kept = bench(capsys, tmp_path / "tiny", keep_fit=True)
    stored = FusionCalibration.objects.get(namespace=namespace)
    assert kept["fusion"]["stored"] is True and kept["fusion"]["version"] == stored.version == 2
    assert stored.lexical_weight == kept["fusion"][
        "lexical_weight"
    ] and stored.fitted_on.startswith("benchmark tiny")
