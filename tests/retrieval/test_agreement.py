"""How well the meaning model reads a namespace's text (retrieval/agreement.py) and the weights it
grades (retrieval/fusion.py `graded_weights`). Pure: no database."""

import json
import math
import re
from pathlib import Path

import pytest

from retrieval.agreement import MIN_HEADINGS, Reading, agreement
from retrieval.fusion import GRADED_LEXICAL_WEIGHT, MEANING_UNREAD, graded_weights


def test_lists_that_hold_the_same_results_agree_fully_and_lists_apart_not_at_all():
    same = [(list(range(i, i + 10)), list(range(i, i + 10))[::-1]) for i in range(MIN_HEADINGS)]
    apart = [(list(range(10)), list(range(10, 20)))] * MIN_HEADINGS
    assert agreement(same).shared == 1.0 and agreement(apart) == Reading(0.0, 0.0)
    assert agreement(apart).lift == 0.0
    # heading i's words and heading j's meaning share 10 - |i - j| results: chance is their mean
    pairs = [(i, j) for i in range(MIN_HEADINGS) for j in range(MIN_HEADINGS) if i != j]
    chance = sum(max(0, 10 - abs(i - j)) for i, j in pairs) / (10 * len(pairs))
    assert agreement(same).chance == pytest.approx(chance)
    assert agreement(same).lift == pytest.approx(1 / chance)


def test_only_the_first_results_count_and_headings_a_channel_found_nothing_for_are_left_out():
    half = ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], [1, 2, 3, 4, 5, 20, 21, 22, 23, 24, 11])
    assert agreement([half] * MIN_HEADINGS).shared == 0.5  # 11 is shared, beyond the first NEAREST
    assert agreement([half] * MIN_HEADINGS + [([], [1, 2]), ([1], [])] * 5).shared == 0.5


def test_too_few_headings_do_not_tell():
    pair = (list(range(10)), list(range(10)))
    assert agreement([pair] * MIN_HEADINGS).shared == 1.0
    assert agreement([pair] * (MIN_HEADINGS - 1) + [([], [1])]) is None


def test_a_model_that_finds_the_same_passages_whatever_the_heading_does_not_read_the_text():
    """The Persian handbook's case: the bundled model puts the same few long passages first for
    most headings, and the words' lists hold those too, so meaning and words share as much as
    where the model reads a little (0.100 on the Persian and on the Russian handbook). Only the
    share against chance, the same lists with the headings mismatched, tells them apart."""
    hubs = [1, 2]  # in every heading's meaning list, and in its words list by their common words
    blind = [
        ([*hubs, *range(100, 108)], [*hubs, *range(1000 + 10 * i, 1008 + 10 * i)])
        for i in range(MIN_HEADINGS)
    ]
    reads = [
        ([10 * i + 1, 10 * i + 2, *range(500, 508)], [10 * i + 1, 10 * i + 2, *range(600, 608)])
        for i in range(MIN_HEADINGS)
    ]
    assert agreement(blind).shared == agreement(reads).shared == 0.2
    assert agreement(blind).lift == 1.0 and graded_weights(agreement(blind)).lexical == 1.0
    assert math.isinf(agreement(reads).lift)
    assert graded_weights(agreement(reads)).lexical == GRADED_LEXICAL_WEIGHT
    assert "and nothing for unrelated headings" in graded_weights(agreement(reads)).reason


@pytest.mark.parametrize(
    ("reading", "lexical"),
    [
        (Reading(0.16, 0.027), GRADED_LEXICAL_WEIGHT),  # the German handbook, 5.9 times chance
        (Reading(MEANING_UNREAD * 0.02, 0.02), GRADED_LEXICAL_WEIGHT),
        (Reading(0.1, 0.1 / (MEANING_UNREAD - 0.1)), 1.0),
        (Reading(0.1, 0.034), 1.0),  # the Persian handbook, 2.9 times chance
        (Reading(0.0, 0.0), 1.0),
    ],
    ids=["reads-in-part", "at-the-line", "just-under", "persian", "blind"],
)
def test_the_reading_grades_how_much_meaning_weighs(reading, lexical):
    weights = graded_weights(reading)
    assert (weights.lexical, weights.source) == (lexical, "agreement")
    # the explanation names the evidence
    assert f"find {reading.shared:.0%} of the same passages" in weights.reason
    if reading.chance:
        assert f"{reading.lift:.1f} times what they share for unrelated headings" in weights.reason


def test_the_reading_grades_only_namespaces_in_languages_the_model_is_not_said_to_read():
    from retrieval.planning import unjudged_weights

    german = {"de": 300}
    reads, blind = Reading(0.16, 0.02), Reading(0.1, 0.05)
    weights, notes = unjudged_weights(german, "Festplatte einhängen", agreed=reads)
    assert (weights.lexical, weights.source, notes) == (GRADED_LEXICAL_WEIGHT, "agreement", ())
    weights, notes = unjudged_weights(german, "Festplatte einhängen", agreed=blind)
    assert (weights.lexical, weights.source) == (1.0, "agreement")
    [note] = notes
    assert (
        note.channel == "vector"
        and note.state == "off"
        and "does not read this namespace's text" in note.reason
        and "2.0 times what they share for unrelated headings" in note.reason
    )
    # not measured yet (or too small to tell): the languages decide, words alone, as before
    weights, notes = unjudged_weights(german, "Festplatte einhängen")
    assert (weights.lexical, weights.source) == (1.0, "language") and notes[0].state == "off"
    # a namespace in a language the model reads keeps equal weights
    assert unjudged_weights({"en": 300}, "mount a disk", agreed=blind)[0].lexical == 0.5
    assert unjudged_weights({"en": 300}, "who wrote it", agreed=reads)[0].source == "default"


HANDBOOK_DE = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "real"
    / "languages"
    / "handbook-de-sections.jsonl"
)


def _ingest_german_manual(slug: str, heading=None):
    """The 40 German handbook sections as a namespace; `heading` gives each section a heading in
    place of its own headings, which become lines of text."""
    from ingest.loaders import LoadedItem
    from ingest.pipeline import IngestPipeline
    from kb.models import IngestRun, Namespace, Source

    namespace = Namespace.objects.create(slug=slug, title="Handbuch", is_public=True)
    source = Source.objects.create(
        namespace=namespace, name="handbook", kind=Source.Kind.TEXT, text="x"
    )
    run = IngestRun.objects.create(source=source)
    sections = [json.loads(line) for line in HANDBOOK_DE.read_text().splitlines()]

    def body(section):
        if heading is None:
            return f"# {section['title']}\n\n{section['text']}"
        text = re.sub(r"^#+ (.*?)(?: \{#[^}]*\})?$", r"\1", section["text"], flags=re.MULTILINE)
        return f"# {heading(section)}\n\n{text}"

    IngestPipeline(run).execute(
        iter(
            LoadedItem(
                ref=s["id"],
                body=body(s).encode(),
                media_type="text/markdown",
                charset="utf-8",
                path=s["id"],
            )
            for s in sections
        )
    )
    namespace.refresh_from_db()
    assert namespace.document_languages["de"] >= 0.8 * len(sections)
    return namespace


@pytest.mark.django_db
def test_a_german_manual_is_searched_by_words_until_the_reading_is_measured_then_as_it_says(
    monkeypatch,
):
    """40 sections of The Debian Administrator's Handbook in German (the bundled model is said to
    read English only): words alone until the model's reading of the namespace's own headings is
    measured, then as that reading grades it, and the reason names both figures. So few sections
    share much by chance (a tenth of any list of ten), and the model reads them at about 2.6 times
    chance, under the line: words alone, as before the graded rule (the whole handbook, 780
    passages, measures 5.9). Over the line, meaning counts at the graded weight."""
    from retrieval import fusion, meaning_spread
    from retrieval.service import search

    namespace = _ingest_german_manual("agreement-handbook-de")
    question = "Wie richte ich ein Software-RAID ein?"
    meaning_spread.forget_samples()
    assert (
        search(question, namespace.slug, log=False).fusion.source == "language"
    )  # not measured yet
    agreed = meaning_spread.namespace_agreement(
        namespace.pk, sum(namespace.passage_configs.values()), wait=True
    )
    assert agreed is not None and 1 < agreed.lift < MEANING_UNREAD
    served = search(question, namespace.slug, log=False)
    assert (served.fusion.lexical, served.fusion.source) == (1.0, "agreement")
    assert agreed.clause() in served.fusion.reason
    assert not any("vector" in hit.details.channels for hit in served.hits)

    monkeypatch.setattr(fusion, "MEANING_UNREAD", agreed.lift)
    served = search(question, namespace.slug, log=False)
    assert (served.fusion.lexical, served.fusion.source) == (GRADED_LEXICAL_WEIGHT, "agreement")
    assert (
        f"meaning and words find {agreed.shared:.0%} of the same passages" in served.fusion.reason
    )
    assert any("vector" in hit.details.channels for hit in served.hits)


@pytest.mark.django_db
def test_headings_that_are_names_do_not_measure_how_the_model_reads_the_namespaces_language(
    settings,
):
    """The same German sections headed by names, as man pages are (`apt(8)`): a name is read in any
    language, so the agreement is not measured on it; with no heading in German the namespace is
    not measured and stays words alone. Where the model is said to read German too, nothing is
    measured: the agreement would decide nothing."""
    from kb.language_detection import query_language
    from retrieval import meaning_spread, model_reading
    from retrieval.service import search

    namespace = _ingest_german_manual(
        "agreement-man-pages-de", heading=lambda section: f"{section['id']}(8)"
    )
    passages = sum(namespace.passage_configs.values())
    assert not any(
        query_language(heading) == "de"
        for heading, _ in model_reading._headings(namespace.pk, passages)
    )
    assert model_reading.measure(namespace.pk, passages) is None
    meaning_spread.forget_samples()
    assert meaning_spread.namespace_agreement(namespace.pk, passages, wait=True) is None
    served = search("Wie richte ich ein Software-RAID ein?", namespace.slug, log=False)
    assert (served.fusion.lexical, served.fusion.source) == (1.0, "language")

    german = _ingest_german_manual("agreement-handbook-de-read")
    passages = sum(german.passage_configs.values())
    assert model_reading.measure(german.pk, passages) is not None  # its German headings measure it
    from kb.conf import kb_settings

    settings.KB_EMBEDDING_LANGUAGES = "en,de"
    kb_settings.cache_clear()
    try:
        assert model_reading.measure(german.pk, passages) is None
    finally:
        kb_settings.cache_clear()
