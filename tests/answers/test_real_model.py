"""The answer path through a real model behind a real server: SmolLM2-135M-Instruct under
`transformers serve` (tests/answer_model.py). The model is tiny, so these check the protocol and
the checks (events, verdicts, counts, the log), never what it writes."""

import json

import pytest

from answers.service import answer_events
from kb.auth import Principal
from kb.conf import kb_settings
from kb.models import AnswerLog, Namespace
from tests.answer_model import answer_server  # noqa: F401  (the session's real model server)
from tests.corpus import CORPUS, ingest

pytestmark = [pytest.mark.django_db, pytest.mark.slow, pytest.mark.timeout(1200)]

SUPERUSER = Principal("staff", can_write=True)
VERDICTS = {"supported", "unsupported", "dropped", "abstention"}


@pytest.fixture
def real_model(answer_server, settings):  # noqa: F811
    settings.KB_ANSWER_URL, settings.KB_ANSWER_MODEL = answer_server.base_url, answer_server.model
    # a short prompt and answer: a 135M model on a busy 2-core machine reads about a hundred tokens
    # a second
    settings.KB_ANSWER_CONTEXT_TOKENS, settings.KB_ANSWER_MAX_TOKENS = 1024, 24
    settings.KB_ANSWER_TIMEOUT = "5,300,600"
    kb_settings.cache_clear()
    ingest("tenant:a", CORPUS)
    yield answer_server
    kb_settings.cache_clear()


def test_a_covered_question_streams_through_the_api_and_every_sentence_is_checked(
    real_model, client
):
    Namespace.objects.filter(slug="tenant:a").update(is_public=True)
    response = client.post(
        "/api/answer",
        {"q": "how do I make pumpkin soup", "namespaces": ["tenant:a"], "stream": True},
        content_type="application/json",
    )
    assert response.status_code == 200 and response["Content-Type"] == "text/event-stream"
    found = [
        json.loads(line[len("data: ") :])
        for line in b"".join(response.streaming_content).decode().splitlines()
        if line.startswith("data: ")
    ]
    kinds = [e["event"] for e in found]
    assert kinds[:2] == ["gate", "sources"] and kinds[-2:] == ["answer", "done"], found
    assert found[0]["answer"] is True
    answer = found[-2]
    counts = answer["counts"]
    assert all(s["verdict"] in VERDICTS for s in answer["sentences"])
    abstentions = sum(1 for s in answer["sentences"] if s["verdict"] == "abstention")
    assert (
        counts["supported"] + counts["unsupported"] + counts["dropped"] + abstentions
        == counts["sentences"]
    )
    streamed = " ".join("".join(e["text"] for e in found if e["event"] == "delta").split())
    assert all(s["text"] in streamed for s in answer["sentences"] if s["verdict"] != "dropped")
    row = AnswerLog.objects.get(pk=found[-1]["answer_id"])
    assert (
        row.model == real_model.model
        and row.error_code == ""
        and row.sentence_count == counts["sentences"]
    )
    assert (
        row.timings["first_token_ms"] > 0
        and row.timings["before_model_ms"] < row.timings["total_ms"]
    )


def test_an_off_topic_question_never_reaches_the_model(real_model):
    found = list(
        answer_events(SUPERUSER, ["tenant:a"], "quasar spectrography telemetry", stream=True)
    )
    assert [e["event"] for e in found] == ["gate", "sources", "answer", "done"]
    assert found[2]["abstained"] and "first_token_ms" not in AnswerLog.objects.get().timings
