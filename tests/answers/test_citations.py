"""The citation checker, pure: every sentence's citations verified against the sources it names."""

import pytest

from answers.citations import NOT_COVERED, check, citations_of, split_sentences

SOURCES = {
    1: "Pumpkins need sun, space and rich soil; water them deeply every week.",
    2: "Roast the pumpkin, then blend it with stock, cream and nutmeg. Serve it hot within 2 hours.",  # noqa: E501
}


def verdicts(text, sources=SOURCES):
    return [(s.verdict, s.citations) for s in check(text, sources).sentences]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Pumpkins need sun and rich soil [1].", [("supported", (1,))]),
        ("Pumpkins need rich soil. [1]", [("supported", (1,))]),
        ("Blend the roasted pumpkin with stock and cream [2].", [("supported", (2,))]),
        (
            "Blend the roasted pumpkin with stock and cream [1].",
            [("unsupported", (1,))],
        ),  # the wrong source
        ("Blend the roasted pumpkin with stock and cream [1][2].", [("supported", (1, 2))]),
        (
            "Serve it hot within 5 hours [2].",
            [("unsupported", (2,))],
        ),  # a number the source does not state
        ("Pumpkins need sun and rich soil.", [("dropped", ())]),  # cites nothing
        ("Pumpkins need sun and rich soil [7].", [("dropped", (7,))]),  # a source it was not given
        (
            'The text says "water them every day" [1].',
            [("unsupported", (1,))],
        ),  # a quote that is not in it
        ('The text says "water them deeply every week" [1].', [("supported", (1,))]),
    ],
    ids=[
        "cited",
        "marker-after-stop",
        "second-source",
        "wrong-source",
        "two-sources-one-holds",
        "wrong-number",
        "uncited",
        "unknown-source",
        "false-quote",
        "true-quote",
    ],
)
def test_each_citation_is_checked_against_the_source_it_names(text, expected):
    assert verdicts(text) == expected


def test_counts_and_the_text_shown_leave_out_the_dropped_sentences():
    checked = check(
        "Pumpkins need sun [1]. Llamas fly [9]. Soup cures colds [2]. Nobody knows.", SOURCES
    )
    assert checked.counts == {"sentences": 4, "supported": 1, "unsupported": 1, "dropped": 2}
    assert checked.text == "Pumpkins need sun [1]. Soup cures colds [2]."
    assert [s.verdict for s in checked.sentences] == [
        "supported",
        "dropped",
        "unsupported",
        "dropped",
    ]


def test_a_planted_wrong_citation_is_caught():
    """Each true sentence moved to the other source: every one of them is caught."""
    true = [
        "Pumpkins need sun, space and rich soil [1].",
        "Water pumpkins deeply every week [1].",
        "Roast the pumpkin, then blend it with stock [2].",
        "Blend it with cream and nutmeg [2].",
    ]
    assert all(check(s, SOURCES).counts["supported"] == 1 for s in true)
    planted = [s.replace("[1]", "[x]").replace("[2]", "[1]").replace("[x]", "[2]") for s in true]
    assert all(check(s, SOURCES).counts["unsupported"] == 1 for s in planted)


def test_the_model_saying_it_is_not_covered_is_an_abstention_not_a_drop():
    checked = check(NOT_COVERED, SOURCES)
    assert [s.verdict for s in checked.sentences] == ["abstention"]
    assert checked.text == NOT_COVERED and checked.counts["dropped"] == 0


def test_sentences_and_markers_are_read_as_models_write_them():
    assert split_sentences("One [1]. Two! [2] Three?\n- Four [3]") == [
        "One [1].",
        "Two! [2]",
        "Three?",
        "- Four [3]",
    ]
    assert citations_of("x [1, 2] y [Source 3] z [2]") == (1, 2, 3)
    assert citations_of("no markers, [a] or [12345]") == ()


ABSTRACT = {
    1: (
        "LDL and the heart\n\n"
        "One-fourth of all deaths result from coronary heart disease. Lowering LDL should be the "
        "primary goal. We followed 250 subjects for two years. MDSC regulation is widely variable "
        "in most eukaryotic cells. The tau protein binds deacetylated microtubules. Samples were "
        "collected under quiet and then active conditions. We studied 7610 women and controls "
        "without the disease, studying twelve polymorphisms. Drug A did not increase survival at "
        "12 weeks. Drug B increased survival at 52 weeks."
    )
}


@pytest.mark.parametrize(
    "text, verdict",
    [
        (
            "Two hundred fifty subjects were followed for two years [1].",
            "supported",
        ),  # a number in words
        (
            "One-third of all deaths result from coronary heart disease [1].",
            "unsupported",
        ),  # another fraction
        (
            "We followed 250 subjects for nine years [1].",
            "unsupported",
        ),  # a number word it does not state
        ("Lowering HDL should be the primary goal [1].", "unsupported"),  # a name it does not name
        (
            "Lowering LDL should be the primary goal for the heart [1].",
            "supported",
        ),  # the title is context
        (
            "The tau protein binds acetylated microtubules [1].",
            "unsupported",
        ),  # the prefix turned around
        (
            "Samples were collected only under active conditions [1].",
            "unsupported",
        ),  # an absolute it does not say
        (
            "MDSC regulation is uniform in most eukaryotic cells [1].",
            "unsupported",
        ),  # an opposite word
        (
            "We studied 7610 women and twelve polymorphisms [1].",
            "supported",
        ),  # a negation elsewhere in the clause
        ("Drug A increased survival at 12 weeks [1].", "unsupported"),  # the negation it drops
        (
            "The tau protein binds deacetylated microtubules in 7610 cells [1].",
            "unsupported",
        ),  # another sentence's number
        ("Drug B did not increase survival at 52 weeks [1].", "unsupported"),  # a negation it adds
    ],
    ids=[
        "number-words",
        "fraction",
        "number-word-wrong",
        "name",
        "title",
        "prefix",
        "absolute",
        "opposite",
        "negation-out-of-scope",
        "negation-dropped",
        "number-elsewhere",
        "negation-added",
    ],
)
def test_numbers_names_negations_and_absolutes_are_read_in_the_closest_window(text, verdict):
    assert check(text, ABSTRACT).sentences[0].verdict == verdict, (
        check(text, ABSTRACT).sentences[0].reason
    )


@pytest.mark.parametrize(
    "text, verdict",
    [
        ("IL-1β levels rose in the dmc1Δ mutants [1].", "supported"),
        ("IL-1α levels rose in the dmc1Δ mutants [1].", "unsupported"),
    ],
    ids=["same-name", "another-greek-letter"],
)
def test_a_name_is_read_with_its_letters_of_any_script(text, verdict):
    assert (
        check(text, {1: "IL-1β levels rose in the dmc1Δ mutants."}).sentences[0].verdict == verdict
    )
