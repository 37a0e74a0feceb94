"""Answer cases of eval suites ("must cite document X", "must abstain") run through the real answer
path: real PostgreSQL, the real search and gate, a scripted model server on loopback, the real
citation checker, and `kb_eval`'s exit status, which is what CI gates on."""

import json
from pathlib import Path

import pytest
from django.core.management import call_command

from evaluation.errors import EvalFileError
from evaluation.runner import run_suite
from evaluation.suites import parse_suite
from kb.conf import kb_settings
from kb.models import AnswerLog
from tests.answers.scripted_model import Reply

pytestmark = pytest.mark.django_db

SOUP = "how long should I roast pumpkin for soup"
OFF_TOPIC = "quasar spectrography telemetry"


def suite(*cases) -> dict:
    return {"version": 1, "defaults": {"namespace": "tenant:a"}, "cases": list(cases)}


CITES_SOUP = {"id": "cites-soup", "question": SOUP, "expect": {"mustCite": "pumpkin"}}
ABSTAINS = {"id": "abstains", "question": OFF_TOPIC, "expect": {"mustAbstain": True}}


def kb_eval(tmp_path, data: dict, *args) -> tuple[int, str]:
    """`manage.py kb_eval` in this process (the scripted model's settings hold), its exit status
    and output."""
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(data))
    out = tmp_path / "out.txt"
    with out.open("w") as stdout:
        try:
            call_command("kb_eval", str(path), *args, stdout=stdout)
            status = 0
        except SystemExit as exc:
            status = exc.code
    return status, out.read_text()


def test_a_supported_citation_of_the_document_passes_and_an_abstention_on_an_off_topic_question(
    corpus, answer_model, tmp_path
):
    model = answer_model(
        [Reply(text=["Roast the pumpkin, then blend it with stock and cream [1]."])]
    )
    status, output = kb_eval(tmp_path, suite(CITES_SOUP, ABSTAINS))
    assert status == 0, output
    assert "2 passed, 0 failed" in output
    assert "a supported sentence cites 'pumpkin'" in output
    assert (
        len(model.requests) == 1
    )  # the off-topic question never reached the model: the gate abstained
    rows = AnswerLog.objects.order_by("pk")
    assert [(row.question, row.answered) for row in rows] == [(SOUP, True), (OFF_TOPIC, False)]
    assert rows[0].query_log.caller == "internal"


def test_an_unsupported_citation_and_an_answer_where_one_must_abstain_fail_the_command(
    corpus, answer_model, tmp_path
):
    answer_model([Reply(text=["Pumpkins fly to the moon on Tuesdays [1]."])])
    must_abstain = {"id": "must-abstain", "question": SOUP, "expect": {"mustAbstain": True}}
    status, output = kb_eval(tmp_path, suite(CITES_SOUP, must_abstain), "--json")
    assert status == 1
    result = json.loads(output)
    assert (result["passed"], result["failed"]) == (0, 2)
    cite, abstain = result["cases"]
    assert cite["checks"] == [
        {
            "name": "mustCite",
            "passed": False,
            "detail": "no supported sentence cites 'pumpkin'; cited without support: 'pumpkin' "
            "(unsupported); 1 sentence(s), 0 supported, 1 unsupported, 0 dropped",
        }
    ]
    assert cite["answer"]["counts"]["unsupported"] == 1 and cite["answer"]["answer_id"]
    assert abstain["checks"][0]["name"] == "mustAbstain" and not abstain["checks"][0]["passed"]
    assert abstain["checks"][0]["detail"].startswith("it answered: 1 sentence(s)")


def test_the_model_abstaining_by_itself_counts_as_an_abstention(corpus, answer_model):
    answer_model([Reply(text=["The knowledge base does not cover this."])])
    result = run_suite(
        parse_suite(suite({"id": "soup", "question": SOUP, "expect": {"mustAbstain": True}}))
    )
    assert result.cases[0].passed, result.as_dict()


def test_answers_off_fail_an_answer_case_with_the_answers_code(corpus, tmp_path):
    status, output = kb_eval(tmp_path, suite(CITES_SOUP))
    assert status == 1
    assert "ERROR cites-soup" in output and "ANSWER_OFF: " in output


def test_a_dead_model_is_the_cases_error_and_junit_reports_it(corpus, answer_model, tmp_path):
    from junitparser import Error, JUnitXml

    answer_model([Reply(status=500, error_body="boom")], tools="off")
    report = tmp_path / "report.xml"
    status, _ = kb_eval(tmp_path, suite(CITES_SOUP, ABSTAINS), "--junit", str(report))
    assert status == 1
    cases = {case.name: case for case in next(iter(JUnitXml.fromfile(str(report))))}
    assert isinstance(cases["cites-soup"].result[0], Error)
    assert cases["cites-soup"].result[0].message.startswith("ANSWER_MODEL_FAILED")
    assert cases["abstains"].is_passed  # the gate abstained before any model was asked


def test_a_reader_runs_answer_cases_only_in_namespaces_it_reads(corpus, answer_model):
    from kb.auth import Principal

    answer_model([Reply(text=["Roast the pumpkin [1]."])])
    stranger = Principal("token", namespaces=frozenset({"tenant:other"}), token_id=1)
    result = run_suite(parse_suite(suite(CITES_SOUP)), principal=stranger)
    assert result.cases[0].error.startswith("KB_FORBIDDEN: ") and not AnswerLog.objects.exists()


@pytest.mark.parametrize(
    "expect, message",
    [
        ({"mustAbstain": "yes"}, "field 'expect.mustAbstain': must be true or false, got 'yes'"),
        ({"mustAbstain": True, "mustCite": "x"}, "ask for mustCite or mustAbstain, not both"),
        ({"mustCite": []}, "field 'expect.mustCite': must be a non-empty string or a list of them"),
    ],
    ids=["abstain-not-bool", "both", "empty-cite"],
)
def test_malformed_answer_checks_name_the_case_and_field(expect, message):
    with pytest.raises(EvalFileError) as excinfo:
        parse_suite(suite({"id": "a", "question": "q", "expect": expect}))
    assert message in excinfo.value.message


@pytest.mark.slow  # the demo corpus is every page of docs/, ingested through the real pipeline
def test_the_shipped_answer_suite_abstains_on_the_demo_corpus(
    transactional_db, settings, answer_model, tmp_path
):
    """evals/demo-answers.json gates the honesty gate: questions off the product's subjects are not
    answered, whatever the model (the scripted one is never asked)."""
    from config.demo import ensure_demo_sources

    settings.MEDIA_ROOT = str(tmp_path)
    kb_settings.cache_clear()
    ensure_demo_sources(sync=True)
    model = answer_model([Reply(text=["Tungsten boils at 5,555 degrees [1]."])])
    shipped = Path(__file__).resolve().parents[2] / "evals" / "demo-answers.json"
    status, output = kb_eval(tmp_path, json.loads(shipped.read_text()))
    assert status == 0, output
    assert model.requests == []
    on_topic = {
        "version": 1,
        "defaults": {"namespace": "demo"},
        "cases": [
            {
                "id": "run-tests",
                "question": "How do I run the test suite?",
                "expect": {"mustAbstain": True},
            }
        ],
    }
    status, output = kb_eval(
        tmp_path, on_topic
    )  # the same check fails where the knowledge base does cover it
    assert status == 1 and "mustAbstain: it answered" in output and len(model.requests) == 1
