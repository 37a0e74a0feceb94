"""The MCP `answer` tool through the official MCP SDK's client, against the live product on loopback
with a scripted chat-completions server behind it: the same gate, scope, rate charge and checks as
/api/answer, absolute citation URLs, and answers off as a tool error with its code."""

from __future__ import annotations

import pytest
from mcp.shared.exceptions import MCPError

from kb.auth import issue_token
from kb.conf import kb_settings
from kb.models import AnswerLog, Namespace
from tests.answers.scripted_model import Reply, ScriptedModel
from tests.mcp.conftest import run_agent, tool_error

pytestmark = pytest.mark.slow

QUESTION = "how long should I roast pumpkin for soup"


@pytest.fixture
def model(settings):
    """The product pointed at a scripted model server for the test."""
    with ScriptedModel(
        [
            Reply(
                text=[
                    "Roast the pumpkin, then blend it with stock and cream [1]. ",
                    "Pumpkins fly to the moon [1].",
                ]
            )
        ]
    ) as server:
        settings.KB_ANSWER_URL, settings.KB_ANSWER_MODEL = server.url, server.model
        settings.KB_ANSWER_TIMEOUT, settings.KB_ANSWER_TOOLS = "5,5,10", "off"
        kb_settings.cache_clear()
        yield server
    kb_settings.cache_clear()


def call(world, token: str, arguments: dict):
    return run_agent(world["url"], token, lambda client: client.call_tool("answer", arguments))


def test_an_agent_gets_a_checked_answer_with_absolute_citations(world, model):
    result = call(world, world["a"], {"q": QUESTION, "namespaces": ["tenant:a"]})
    assert not result.is_error, result.content
    answer = result.structured_content
    assert answer["gate"]["answer"] is True and answer["error"] is None
    assert answer["counts"] == {"sentences": 2, "supported": 1, "unsupported": 1, "dropped": 0}
    assert answer["sources"][0]["title"] == "Pumpkin soup"
    assert answer["sources"][0]["url"].startswith(
        world["root"] + "/documents/"
    )  # absolute, as search's
    text = result.content[0].text
    assert "Pumpkins fly to the moon [1]. (UNSUPPORTED" in text
    assert f"[1] Pumpkin soup (tenant:a) {world['root']}/documents/" in text
    row = AnswerLog.objects.get(pk=answer["answer_id"])
    assert row.query_log.caller == "mcp" and row.asker.startswith("token:")
    assert "Roast the pumpkin" in model.requests[0]["messages"][1]["content"]


def test_an_off_topic_question_is_not_covered_and_the_model_is_not_asked(world, model):
    result = call(world, world["a"], {"q": "quasar spectrography telemetry"})
    answer = result.structured_content
    assert (
        not result.is_error and answer["abstained"] and answer["gate"]["rule"] == "no-strong-match"
    )
    assert result.content[0].text.startswith(
        "The knowledge base does not cover this. (gate: no-strong-match"
    )
    assert model.requests == []


def test_another_tenants_namespace_answers_like_a_missing_one_and_reaches_no_model(world, model):
    foreign = tool_error(call(world, world["a"], {"q": QUESTION, "namespaces": ["tenant:b"]}))
    missing = tool_error(call(world, world["a"], {"q": QUESTION, "namespaces": ["tenant:nope"]}))
    assert foreign["code"] == missing["code"] == "KB_FORBIDDEN"
    assert foreign["message"].replace("tenant:b", "X") == missing["message"].replace(
        "tenant:nope", "X"
    )
    assert model.requests == [] and not AnswerLog.objects.exists()


def test_answers_off_and_off_for_the_namespace_are_tool_errors_with_their_codes(world, settings):
    settings.KB_ANSWER_URL = ""
    kb_settings.cache_clear()
    try:
        off = tool_error(call(world, world["a"], {"q": QUESTION}))
    finally:
        kb_settings.cache_clear()
    assert off["code"] == "ANSWER_OFF" and "KB_ANSWER_URL" in off["message"]
    with ScriptedModel([Reply(text=["x [1]."])]) as server:
        settings.KB_ANSWER_URL, settings.KB_ANSWER_MODEL = server.url, server.model
        kb_settings.cache_clear()
        Namespace.objects.filter(slug="tenant:a").update(answers=False)
        try:
            switched = tool_error(call(world, world["a"], {"q": QUESTION}))
        finally:
            kb_settings.cache_clear()
        assert switched["code"] == "ANSWER_OFF_FOR_NAMESPACE" and server.requests == []


def test_a_model_that_fails_is_the_answers_error_beside_its_sources(world, settings):
    with ScriptedModel([Reply(status=500, error_body="boom")]) as server:
        settings.KB_ANSWER_URL, settings.KB_ANSWER_MODEL, settings.KB_ANSWER_TOOLS = (
            server.url,
            server.model,
            "off",
        )
        kb_settings.cache_clear()
        try:
            result = call(world, world["a"], {"q": QUESTION})
        finally:
            kb_settings.cache_clear()
    assert (
        not result.is_error and result.structured_content["error"]["code"] == "ANSWER_MODEL_FAILED"
    )
    assert result.structured_content["sources"] and "boom" not in result.content[0].text
    assert result.content[0].text.startswith("The answer failed (ANSWER_MODEL_FAILED)")


def test_an_answer_costs_an_agent_what_it_costs_the_api(world, model):
    """An answer is charged as its search plus 10 (docs/answers.md): a token allowed 12 requests a
    minute gets one answer (the request, then 10 more), and its next request is refused."""
    _, secret = issue_token(
        "answers", namespaces=[Namespace.objects.get(slug="tenant:a")], rate_limit_per_minute=12
    )
    first = call(world, secret, {"q": QUESTION})
    assert not first.is_error, first.content
    with pytest.raises(ExceptionGroup) as refused:  # the SDK raises the 429 from its task group
        call(world, secret, {"q": QUESTION})
    error = refused.value
    while isinstance(error, ExceptionGroup):
        error = error.exceptions[0]
    assert isinstance(error, MCPError) and error.data["code"] == "KB_RATE_LIMITED"
