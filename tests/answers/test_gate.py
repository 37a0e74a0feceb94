"""The honesty gate over real searches: which rule opens it, and that removing a rule closes it."""

import dataclasses

import pytest

from answers.gate import CONFIRM_MARGIN, decide, decide_all
from kb.embedding.embedders import strong_cosine
from kb.models import Namespace
from retrieval.service import search
from tests.corpus import CORPUS, ingest

pytestmark = pytest.mark.django_db


@pytest.fixture
def corpus():
    namespace, _ = ingest("tenant:a", CORPUS)
    return namespace


def test_a_strong_match_opens_the_gate_and_says_why(corpus):
    gate = decide(search("how long should I roast pumpkin for soup", "tenant:a", group="document"),
                  floor=strong_cosine())
    assert (gate.answer, gate.rule) == (True, "strong-match")
    assert "Pumpkin soup" in gate.reason and f"{strong_cosine():.3f}" in gate.reason


def test_an_off_topic_question_and_an_empty_namespace_keep_it_closed(corpus):
    gate = decide(search("quasar spectrography telemetry", "tenant:a", group="document"), floor=strong_cosine())
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
    assert decide(weaker, floor=floor, rules=("strong-match",)).answer is False  # the rule removed: closed
    assert decide(weaker, floor=top.cosine + 2 * CONFIRM_MARGIN).answer is False  # beyond the margin
    assert decide(result, floor=strong_cosine(), rules=()).answer is False


def test_several_namespaces_open_it_when_one_does(corpus):
    ingest("tenant:b", {"moon": ("The moon", "The moon orbits the earth every 27 days.")})
    results = [search("roast pumpkin for soup", slug, group="document") for slug in ("tenant:b", "tenant:a")]
    assert decide(results[0], floor=strong_cosine()).answer is False
    assert decide_all(results, floor=strong_cosine()).answer is True
