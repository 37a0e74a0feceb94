"""The honesty gate over real searches: which rule opens it, and that removing a rule closes it."""

import dataclasses

import pytest

from answers.gate import CONFIRM_MARGIN, WORDS_SHARE, decide, decide_all, words_carried
from answers.service import SOURCES, answer_events
from kb.auth import Principal
from kb.embedding.embedders import strong_cosine
from kb.models import Namespace
from retrieval.service import search
from tests.answers.scripted_model import Reply
from tests.corpus import CORPUS, ingest

pytestmark = pytest.mark.django_db


@pytest.fixture
def corpus():
    namespace, _ = ingest("tenant:a", CORPUS)
    return namespace


def test_a_strong_match_opens_the_gate_and_says_why(corpus):
    gate = decide(
        search("how long should I roast pumpkin for soup", "tenant:a", group="document"),
        floor=strong_cosine(),
    )
    assert (gate.answer, gate.rule) == (True, "strong-match")
    assert "Pumpkin soup" in gate.reason and f"{strong_cosine():.3f}" in gate.reason
    assert f"of the question's (at least {WORDS_SHARE:.0%} asked)" in gate.reason


# SciFact's unanswerable claims in small: the question's own document (the soup recipe) taken away,
# a
# document on its subject stays (growing pumpkins, a strong match by meaning), and the question's
# rarer words are in a document on another subject (the kitchen's rota, below the strong floor)
WITHOUT_THE_RECIPE = {
    **{ref: doc for ref, doc in CORPUS.items() if ref != "pumpkin"},
    "rota": (
        "Volunteer rota",
        "The community kitchen needs volunteers on Sundays; soup and roast "
        "dinners are served at noon.",
    ),
}


def test_a_match_on_the_subject_without_the_questions_words_keeps_it_closed_and_the_model_uncalled(
    answer_model,
):
    ingest("tenant:no-recipe", WITHOUT_THE_RECIPE)
    question = "how long should I roast pumpkin for soup"
    result = search(question, "tenant:no-recipe", group="document", limit=SOURCES)
    assert [d.title for d in result.cited] == ["Growing pumpkins"]
    assert words_carried(result.cited[0].sections[0], result.query_idf) < WORDS_SHARE
    # the strong match alone, the gate before the words were asked, answered this
    assert decide(result, floor=strong_cosine(), words_share=None).rule == "strong-match"
    gate = decide(result, floor=strong_cosine())
    assert (gate.answer, gate.rule) == (False, "words-missing")
    assert "'Growing pumpkins' is on the question's subject" in gate.reason
    assert f"of the question's (at least {WORDS_SHARE:.0%} asked)" in gate.reason

    model = answer_model([Reply(text=["Roast it for an hour [1]."])])
    found = list(answer_events(Principal("staff"), ["tenant:no-recipe"], question, stream=True))
    assert [e["event"] for e in found] == ["gate", "sources", "answer", "done"]
    assert (found[0]["answer"], found[0]["rule"]) == (False, "words-missing")
    assert found[2]["abstained"] and found[2]["text"] == "The knowledge base does not cover this."
    assert model.requests == []  # the model is not asked at all


def test_an_off_topic_question_and_an_empty_namespace_keep_it_closed(corpus):
    gate = decide(
        search("quasar spectrography telemetry", "tenant:a", group="document"),
        floor=strong_cosine(),
    )
    assert (gate.answer, gate.rule) == (False, "no-strong-match")
    assert "below the strong floor" in gate.reason
    Namespace.objects.create(slug="tenant:empty")
    empty = decide(search("pumpkin", "tenant:empty", group="document"), floor=strong_cosine())
    assert (empty.answer, empty.rule) == (False, "no-results")


def test_a_lexical_hit_the_cosine_confirms_opens_it_and_only_that_rule_does(corpus):
    result = search("ERR_CONNECTION_REFUSED server listening port", "tenant:a", group="document")
    top = result.hits[0]
    assert top.details.channels["lexical"].rank == 1
    # a floor just above the passage's cosine: not a strong match, but within the margin
    weaker = dataclasses.replace(result, cited=[])
    floor = top.cosine + CONFIRM_MARGIN / 2
    assert decide(weaker, floor=floor).rule == "lexical-confirmed"
    assert (
        decide(weaker, floor=floor, rules=("strong-match",)).answer is False
    )  # the rule removed: closed
    assert (
        decide(weaker, floor=top.cosine + 2 * CONFIRM_MARGIN).answer is False
    )  # beyond the margin
    share = words_carried(top, result.query_idf)
    assert (
        decide(weaker, floor=floor, words_share=share + 0.01).answer is False
    )  # its words must carry the question
    assert decide(result, floor=strong_cosine(), rules=()).answer is False


def test_several_namespaces_open_it_when_one_does(corpus):
    ingest("tenant:b", {"moon": ("The moon", "The moon orbits the earth every 27 days.")})
    results = [
        search("roast pumpkin for soup", slug, group="document")
        for slug in ("tenant:b", "tenant:a")
    ]
    assert decide(results[0], floor=strong_cosine()).answer is False
    assert decide_all(results, floor=strong_cosine()).answer is True
