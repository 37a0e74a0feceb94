"""The model's agreement with a namespace's words (retrieval/agreement.py) and the weights it
grades (retrieval/fusion.py `graded_weights`). Pure: no database."""

import json
import re
from pathlib import Path

import pytest

from retrieval.agreement import MIN_HEADINGS, agreement
from retrieval.fusion import GRADED_LEXICAL_WEIGHT, MEANING_UNREAD, graded_weights


def test_lists_that_hold_the_same_results_agree_fully_and_lists_apart_not_at_all():
    same = [(list(range(i, i + 10)), list(range(i, i + 10))[::-1]) for i in range(MIN_HEADINGS)]
    apart = [(list(range(10)), list(range(10, 20)))] * MIN_HEADINGS
    assert agreement(same) == 1.0 and agreement(apart) == 0.0


def test_only_the_first_results_count_and_headings_a_channel_found_nothing_for_are_left_out():
    half = ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], [1, 2, 3, 4, 5, 20, 21, 22, 23, 24, 11])
    assert agreement([half] * MIN_HEADINGS) == 0.5  # 11 is shared, but beyond the first NEAREST
    assert agreement([half] * MIN_HEADINGS + [([], [1, 2]), ([1], [])] * 5) == 0.5


def test_too_few_headings_do_not_tell():
    pair = (list(range(10)), list(range(10)))
    assert agreement([pair] * MIN_HEADINGS) == 1.0
    assert agreement([pair] * (MIN_HEADINGS - 1) + [([], [1])]) is None


@pytest.mark.parametrize(
    ("agreed", "lexical"),
    [
        (0.5, GRADED_LEXICAL_WEIGHT),
        (MEANING_UNREAD, GRADED_LEXICAL_WEIGHT),
        (MEANING_UNREAD - 0.01, 1.0),
        (0.0, 1.0),
    ],
    ids=["reads-in-part", "at-the-line", "just-under", "blind"],
)
def test_the_agreement_grades_how_much_meaning_weighs(agreed, lexical):
    weights = graded_weights(agreed)
    assert (weights.lexical, weights.source) == (lexical, "agreement")
    assert (
        f"find {agreed:.0%} of the same passages" in weights.reason
    )  # the explanation names the evidence


def test_the_agreement_grades_only_namespaces_in_languages_the_model_is_not_said_to_read():
    from retrieval.planning import unjudged_weights

    german = {"de": 300}
    weights, notes = unjudged_weights(german, "Festplatte einhängen", agreed=MEANING_UNREAD + 0.05)
    assert (weights.lexical, weights.source, notes) == (GRADED_LEXICAL_WEIGHT, "agreement", ())
    weights, notes = unjudged_weights(german, "Festplatte einhängen", agreed=MEANING_UNREAD / 2)
    assert (weights.lexical, weights.source) == (1.0, "agreement")
    [note] = notes
    assert (
        note.channel == "vector"
        and note.state == "off"
        and "does not read this namespace's text" in note.reason
    )
    # not measured yet (or too small to tell): the languages decide, words alone, as before
    weights, notes = unjudged_weights(german, "Festplatte einhängen")
    assert (weights.lexical, weights.source) == (1.0, "language") and notes[0].state == "off"
    # a namespace in a language the model reads keeps equal weights, and the search log's estimate
    assert unjudged_weights({"en": 300}, "mount a disk", agreed=0.01)[0].lexical == 0.5
    assert (
        unjudged_weights({"en": 300}, "who wrote it", log=(2.5, 40), agreed=0.3)[0].source
        == "estimated"
    )


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
def test_a_german_manual_is_searched_by_words_with_meaning_weighing_less_once_the_agreement_is_measured():
    """40 sections of The Debian Administrator's Handbook in German (the bundled model is said to
    read English only): words alone until the model's agreement with the words is measured on the
    namespace's own headings, then meaning counts at the graded weight, and the reason says why."""
    from retrieval import meaning_spread
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
    assert agreed is not None and agreed >= MEANING_UNREAD
    served = search(question, namespace.slug, log=False)
    assert (served.fusion.lexical, served.fusion.source) == (GRADED_LEXICAL_WEIGHT, "agreement")
    assert f"meaning and words find {agreed:.0%} of the same passages" in served.fusion.reason
    assert any("vector" in hit.details.channels for hit in served.hits)


@pytest.mark.django_db
def test_headings_that_are_names_do_not_measure_how_the_model_reads_the_namespaces_language(
    settings,
):
    """The same German sections headed by names, as man pages are (`apt(8)`): a name is read in any
    language, so the agreement is not measured on it; with no heading in German the namespace is
    not measured and stays words alone. Where the model is said to read German too, nothing is
    measured: the agreement would decide nothing."""
    from kb.languages import query_language
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
