"""The answer settings, read once and refused with a message when wrong; /healthz and the
start-up check showing the model without failing on it."""

import json

import pytest

from answers.startup import answer_model_check
from kb.conf import kb_settings
from kb.errors import ConfigurationError
from tests.answers.scripted_model import Reply, ScriptedModel


@pytest.fixture
def answer_settings(settings):
    def apply(**values):
        for name, value in values.items():
            setattr(settings, name, value)
        kb_settings.cache_clear()
        return kb_settings()

    yield apply
    kb_settings.cache_clear()


def test_the_defaults_leave_answers_off(answer_settings):
    conf = answer_settings()
    assert conf.answer_url == "" and conf.answer_tools == "auto"
    assert (
        conf.answer_timeouts == (5.0, 60.0, 180.0)
        and conf.answer_context_tokens > conf.answer_max_tokens
    )


@pytest.mark.parametrize(
    "values, setting",
    [
        ({"KB_ANSWER_TIMEOUT": "5,x,9"}, "KB_ANSWER_TIMEOUT"),
        ({"KB_ANSWER_TIMEOUT": "5,60"}, "KB_ANSWER_TIMEOUT"),
        ({"KB_ANSWER_TIMEOUT": "0"}, "KB_ANSWER_TIMEOUT"),
        ({"KB_ANSWER_TOOLS": "maybe"}, "KB_ANSWER_TOOLS"),
        ({"KB_ANSWER_URL": "ftp://model"}, "KB_ANSWER_URL"),
        ({"KB_ANSWER_URL": "http://127.0.0.1:1/v1", "KB_ANSWER_MODEL": ""}, "KB_ANSWER_MODEL"),
        ({"KB_ANSWER_MAX_TOKENS": 9000}, "KB_ANSWER_MAX_TOKENS"),
        ({"KB_ANSWER_CONTEXT_TOKENS": 100, "KB_ANSWER_MAX_TOKENS": 50}, "KB_ANSWER_CONTEXT_TOKENS"),
        ({"KB_ANSWER_CONCURRENCY": 0}, "KB_ANSWER_CONCURRENCY"),
    ],
    ids=[
        "timeout-not-a-number",
        "timeout-two-values",
        "timeout-zero",
        "tools",
        "url-scheme",
        "model-missing",
        "answer-larger-than-context",
        "context-too-small",
        "no-concurrency",
    ],
)
def test_a_wrong_answer_setting_is_refused_by_name(answer_settings, values, setting):
    with pytest.raises(ConfigurationError) as caught:
        answer_settings(**values)
    assert caught.value.details["setting"] == setting and setting in caught.value.message


def test_one_timeout_number_is_all_three(answer_settings):
    assert answer_settings(KB_ANSWER_TIMEOUT="7").answer_timeouts == (7.0, 7.0, 7.0)


@pytest.mark.django_db
def test_healthz_shows_the_model_and_never_fails_on_it(client, answer_settings):
    off = client.get("/healthz").json()
    assert off["answers"] == {"enabled": False, "ok": True, "model": "", "reachable": None}
    with ScriptedModel([Reply()]) as model:
        answer_settings(KB_ANSWER_URL=model.url, KB_ANSWER_MODEL="scripted")
        ready = client.get("/healthz").json()
        answer_settings(KB_ANSWER_URL=model.url, KB_ANSWER_MODEL="another")
        wrong = client.get("/healthz").json()
    assert ready["answers"] == {"enabled": True, "ok": True, "model": "scripted", "reachable": True}
    assert wrong["answers"]["ok"] is False and "'another'" in wrong["answers"]["error"]
    assert "scripted" not in json.dumps(
        wrong["answers"]
    )  # what the server lists is not the public's
    assert ready["status"] == wrong["status"] == off["status"]  # answers never move health


def test_the_start_up_check_warns_in_one_line_and_never_errs(answer_settings, caplog):
    assert answer_model_check(None) == []  # off: nothing to say
    with ScriptedModel([Reply()]) as model:
        answer_settings(KB_ANSWER_URL=model.url, KB_ANSWER_MODEL="scripted")
        with caplog.at_level("INFO", logger="answers.startup"):
            assert answer_model_check(None) == []
        assert "model 'scripted' ready" in caplog.text
        answer_settings(KB_ANSWER_URL=model.url, KB_ANSWER_MODEL="missing")
        warnings = answer_model_check(None)
    assert [w.id for w in warnings] == ["answers.W001"] and "'missing'" in warnings[0].msg
    assert warnings[0].level < 40  # a warning, not an error: nothing stops
