"""Retrieval eval suites: parsing, every check, the runner, the command, JUnit, the admin."""

import json
import subprocess
import sys

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from evaluation.errors import EvalFileError
from evaluation.runner import junit_xml, run_recorded, run_suite
from evaluation.suites import ResultView, check_case, parse_suite
from kb.auth import staff_principal
from kb.models import Document, EvalRun, EvalSuite, Namespace
from tests.corpus import CORPUS, ingest
from tests.pgserver import REPO, current_database_url

R = [
    ResultView("https://docs.example.com/install#pnpm", "Docs site", "pnpm", 0.52, "install"),
    ResultView("https://docs.example.com/legacy/setup", "Old docs", "setup", 0.40, "legacy"),
    ResultView("/documents/7/", "notes", "", 0.33, "manuals/cad.pdf"),
]


def case(expect, **extra):
    data = {
        "version": 1,
        "cases": [{"id": "c", "question": "q?", "namespace": "ns", "expect": expect, **extra}],
    }
    return parse_suite(data).cases[0]


@pytest.mark.parametrize(
    "expect, passed, detail",
    [
        (
            {"sourceIncludes": "DOCS.example.com/INSTALL"},
            True,
            "result 1 matched 'DOCS.example.com/INSTALL'",
        ),
        ({"sourceIncludes": "nowhere"}, False, "no result's source matched 'nowhere' in the top 5"),
        ({"sourceIncludes": ["nowhere", "old docs"]}, True, "result 2 matched 'old docs'"),
        (
            {"sourceIncludes": "manuals/cad.pdf"},
            True,
            "result 3 matched 'manuals/cad.pdf'",
        ),  # the document's own ref
        (
            {"notSourceIncludes": "legacy"},
            False,
            "result 2 (https://docs.example.com/legacy/setup) matched 'legacy'",
        ),
        (
            {"notSourceIncludes": ["gone", "absent"]},
            True,
            "no result's source matched 'gone' or 'absent'",
        ),
        ({"anchor": "setup"}, True, "result 2 has anchor 'setup'"),
        ({"anchor": "yarn"}, False, "no chunk has anchor 'yarn' (saw 'pnpm', 'setup')"),
        ({"minScore": 0.5}, True, "top score 0.52 >= 0.50"),
        ({"minScore": 0.6}, False, "top score 0.52 < 0.60"),
    ],
    ids=[
        "source",
        "source-miss",
        "source-any-of",
        "source-document-ref",
        "not-source",
        "not-source-list",
        "anchor",
        "anchor-miss",
        "min-score",
        "min-score-miss",
    ],
)
def test_each_check_passes_and_fails_with_its_detail(expect, passed, detail):
    checks, _, _ = check_case(case(expect), R)
    assert [(c.passed, c.detail) for c in checks] == [(passed, detail)]


def test_anchor_check_when_no_chunk_has_an_anchor():
    checks, _, _ = check_case(case({"anchor": "x"}), [R[2]])
    assert checks[0].detail == "no chunk has an anchor"
    checks, _, _ = check_case(case({"minScore": 0.1}), [])
    assert checks[0].detail == "no results"


def test_relevant_ids_give_recall_and_mrr():
    _, recall, mrr = check_case(case({"relevant": ["legacy", "missing"]}), R)
    assert (recall, mrr) == (0.5, 0.5)


def test_defaults_and_per_case_overrides():
    suite = parse_suite(
        {
            "version": 1,
            "defaults": {
                "topK": 5,
                "minScore": 0.2,
                "filter": {"sourceIds": [1]},
                "namespace": "ns",
            },
            "cases": [
                {"id": "a", "question": "q"},
                {
                    "id": "b",
                    "question": "q",
                    "topK": 1,
                    "minScore": 0.9,
                    "filter": {"documentIds": [4]},
                    "namespace": "other",
                },
            ],
        }
    )
    a, b = suite.cases
    assert (a.top_k, a.expect.min_score, a.source_ids, a.namespace) == (5, 0.2, (1,), "ns")
    assert (b.top_k, b.expect.min_score, b.source_ids, b.document_ids, b.namespace) == (
        1,
        0.9,
        (),
        (4,),
        "other",
    )
    checks, _, _ = check_case(b, R)  # topK 1: only the first result counts
    assert checks[0].detail == "top score 0.52 < 0.90"
    assert (
        parse_suite(
            {
                "version": 1,
                "defaults": {"namespace": "ns"},
                "cases": [{"id": "a", "question": "q"}],
            },
            namespace="cli",
        )
        .cases[0]
        .namespace
        == "cli"
    )


@pytest.mark.parametrize(
    "data, message",
    [
        ({"version": 2, "cases": []}, "Unsupported eval file version 2"),
        ({"cases": [{"id": "a", "question": "q"}]}, "Unsupported eval file version None"),
        ({"version": 1, "cases": []}, "'cases' must be a non-empty list"),
        ({"version": 1, "cases": [{"id": "a", "namespace": "n"}]}, "case 'a', field 'question'"),
        (
            {"version": 1, "cases": [{"id": "a", "question": "q", "namespace": "n", "topK": 0}]},
            "case 'a', field 'topK'",
        ),
        (
            {
                "version": 1,
                "cases": [{"id": "a", "question": "q", "namespace": "n", "expect": {"anchr": "x"}}],
            },
            "case 'a', field 'expect.anchr'",
        ),
        (
            {
                "version": 1,
                "cases": [
                    {"id": "a", "question": "q", "namespace": "n", "expect": {"sourceIncludes": 3}}
                ],
            },
            "case 'a', field 'expect.sourceIncludes'",
        ),
        ({"version": 1, "cases": [{"id": "a", "question": "q"}]}, "case 'a', field 'namespace'"),
        (
            {
                "version": 1,
                "cases": [
                    {"id": "a", "question": "q", "namespace": "n"},
                    {"id": "a", "question": "q", "namespace": "n"},
                ],
            },
            "case 'a': the id is used twice",
        ),
        ([1, 2], "must be a JSON object"),
    ],
    ids=[
        "version-2",
        "no-version",
        "no-cases",
        "no-question",
        "bad-topk",
        "unknown-check",
        "bad-list",
        "no-namespace",
        "duplicate-id",
        "not-object",
    ],
)
def test_malformed_files_name_the_case_and_field(data, message):
    with pytest.raises(EvalFileError) as excinfo:
        parse_suite(data)
    assert message in excinfo.value.message


SUITE = {
    "version": 1,
    "defaults": {"topK": 3, "namespace": "tenant:a"},
    "cases": [
        {
            "id": "soup",
            "question": "how do I make pumpkin soup",
            "expect": {"sourceIncludes": "corpus", "minScore": 0.3, "relevant": ["pumpkin"]},
        },
        {"id": "broken", "question": "pumpkin", "namespace": "tenant:missing"},
        {"id": "impossible", "question": "pumpkin", "expect": {"notSourceIncludes": "corpus"}},
    ],
}


def test_runner_keeps_order_records_errors_and_goes_on(corpus):
    result = run_suite(parse_suite(SUITE))
    assert [c.id for c in result.cases] == ["soup", "broken", "impossible"]
    assert [c.passed for c in result.cases] == [True, False, False]
    assert result.cases[1].error.startswith("SEARCH_UNKNOWN_NAMESPACE")
    assert result.cases[0].recall == 1.0 and result.cases[0].mrr == 1.0
    assert (result.passed, result.failed, result.total) == (1, 2, 3) and result.duration_ms > 0


@pytest.mark.parametrize("method", ["vector", "lexical", "rrf"])
def test_kb_eval_methods_search_one_channel_or_plain_rrf(corpus, method):
    """`kb_eval --method`: the same suite with one channel alone or plain RRF, cases in order."""
    result = run_suite(parse_suite(SUITE), method=method)
    assert [c.id for c in result.cases] == ["soup", "broken", "impossible"]
    assert result.cases[0].error == "" and result.cases[0].top  # the soup case was searched
    assert result.cases[1].error.startswith("SEARCH_UNKNOWN_NAMESPACE")


def test_junit_output_reads_in_a_junit_parser(corpus, tmp_path):
    from junitparser import Error, Failure, JUnitXml

    path = tmp_path / "report.xml"
    path.write_text(junit_xml(run_suite(parse_suite(SUITE)), "demo"))
    suite = next(iter(JUnitXml.fromfile(str(path))))
    cases = {c.name: c for c in suite}
    assert set(cases) == {"soup", "broken", "impossible"}
    assert cases["soup"].is_passed
    assert isinstance(cases["broken"].result[0], Error)
    failure = cases["impossible"].result[0]
    assert isinstance(failure, Failure) and "matched 'corpus'" in failure.message


def _kb_eval(*args):
    return subprocess.run(
        [sys.executable, "manage.py", "kb_eval", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "DATABASE_URL": current_database_url()},
        timeout=300,
    )


def test_kb_eval_exit_codes(transactional_db, tmp_path):
    ingest("tenant:a", CORPUS)
    good = tmp_path / "good.json"
    good.write_text(json.dumps({**SUITE, "cases": SUITE["cases"][:1]}))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(SUITE))
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    passing = _kb_eval(str(good), "--junit", str(tmp_path / "j.xml"))
    assert passing.returncode == 0, passing.stdout + passing.stderr
    assert "1 passed, 0 failed" in passing.stdout and (tmp_path / "j.xml").exists()
    failing = _kb_eval(str(bad), "--json")
    assert failing.returncode == 1 and json.loads(failing.stdout)["failed"] == 2
    unusable = _kb_eval(str(broken))
    assert unusable.returncode == 2 and "is not valid JSON" in unusable.stderr


def test_the_shipped_demo_suite_passes_on_the_demo_corpus(transactional_db, settings, tmp_path):
    """The repository's own eval file gates CI: it runs against the demo corpus here."""
    settings.MEDIA_ROOT = str(tmp_path)
    from config.demo import ensure_demo_sources
    from kb.conf import kb_settings

    kb_settings.cache_clear()
    try:
        ensure_demo_sources(sync=True)
    finally:
        kb_settings.cache_clear()
    result = _kb_eval(str(REPO / "evals" / "demo.json"))
    assert result.returncode == 0, result.stdout + result.stderr


def test_api_runs_a_suite_with_namespace_checks(corpus, client):
    from kb.auth import issue_token
    from kb.models import Namespace

    _, token = issue_token("t", namespaces=[Namespace.objects.get(slug="tenant:a")])
    body = {"suite": {**SUITE, "cases": SUITE["cases"][:1]}}
    response = client.post(
        "/api/evals/run",
        data=json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 200 and response.json()["passed"] == 1
    forbidden = client.post(
        "/api/evals/run",
        data=json.dumps({"suite": SUITE}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert forbidden.status_code == 403
    malformed = client.post(
        "/api/evals/run",
        data=json.dumps({"suite": {"version": 9, "cases": []}}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert malformed.status_code == 422 and malformed.json()["code"] == "EVAL_UNKNOWN_VERSION"


def test_admin_highlights_cases_that_regressed(corpus, client):
    staff = get_user_model().objects.create_superuser("curator", "c@example.com", "pw-123456789")
    client.force_login(staff)
    suite = EvalSuite.objects.create(
        name="soup",
        namespace=Namespace.objects.get(slug="tenant:a"),
        definition={
            "version": 1,
            "defaults": {"namespace": "tenant:a", "topK": 1},
            "cases": [
                {
                    "id": "soup",
                    "question": "pumpkin soup with cream and nutmeg",
                    "expect": {"anchor": "", "relevant": ["pumpkin"]},
                },
                {
                    "id": "soup-doc",
                    "question": "pumpkin soup with cream and nutmeg",
                    "expect": {"sourceIncludes": "corpus", "minScore": 0.3},
                },
            ],
        },
    )
    first = run_recorded(suite, principal=staff_principal(staff))
    assert first.passed == 2 and first.regressions() == []
    Document.objects.filter(ref="pumpkin").delete()  # a re-crawl lost the page
    Document.objects.exclude(ref="errors").delete()
    response = client.post(
        reverse("admin:kb_evalsuite_changelist"),
        {"action": "run_now", "_selected_action": [suite.pk]},
        follow=True,
    )
    second = EvalRun.objects.exclude(pk=first.pk).get()
    assert second.failed >= 1 and "soup-doc" in second.regressions()
    assert "regressed since the previous run: soup-doc" in response.content.decode()
    page = client.get(reverse("admin:kb_evalrun_change", args=[second.pk])).content.decode()
    assert 'class="kb-regressed"' in page and "REGRESSED" in page


def test_kb_eval_fit_stores_the_namespace_weight_and_searches_say_so(transactional_db, tmp_path):
    from kb.models import FusionCalibration
    from retrieval.service import search

    ingest("tenant:a", CORPUS)
    questions = {
        "soup": ("pumpkin soup with cream", "pumpkin"),
        "grow": ("how to grow pumpkins", "garden"),
        "qwen": ("what is new in the latest Qwen", "qwen38"),
        "llama": ("quantize llama weights", "llama"),
        "refused": ("connection refused error", "errors"),
    }
    suite = {
        "version": 1,
        "defaults": {"namespace": "tenant:a", "topK": 3},
        "cases": [
            {"id": key, "question": question, "expect": {"relevant": [ref]}}
            for key, (question, ref) in questions.items()
        ],
    }
    path = tmp_path / "judged.json"
    path.write_text(json.dumps(suite))
    fitted = _kb_eval(str(path), "--fit")
    assert fitted.returncode == 0, fitted.stdout + fitted.stderr
    record = FusionCalibration.objects.get(namespace__slug="tenant:a")
    assert (
        record.queries == 5 and record.fitted_on == "eval suite judged.json" and record.version == 1
    )
    assert f"lexical weight {record.lexical_weight} (v1) on 5 judged cases" in fitted.stdout
    weights = search("pumpkin", "tenant:a", log=False).fusion
    assert (
        weights.source == "fitted" and "5 judged queries (eval suite judged.json)" in weights.reason
    )

    unjudged = tmp_path / "unjudged.json"
    unjudged.write_text(
        json.dumps(
            {
                "version": 1,
                "defaults": {"namespace": "tenant:a"},
                "cases": [
                    {
                        "id": "soup",
                        "question": "pumpkin soup",
                        "expect": {"sourceIncludes": "corpus"},
                    }
                ],
            }
        )
    )
    refused = _kb_eval(str(unjudged), "--fit")
    assert refused.returncode == 2 and "nothing to fit" in refused.stderr
