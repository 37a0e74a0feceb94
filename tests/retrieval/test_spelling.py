"""A query misspelt throughout, as a reader meets it: not a confident answer, and offered the
collection's correction spelt as its documents spell it (issue 57, B3 and B4). Against the real
database, with documents ingested through the real pipeline."""

import pytest

from kb.embedding.embedders import strong_cosine
from kb.models import Namespace
from retrieval.candidates import NO_SHARED_TERM
from retrieval.lookups import spelling_correction
from retrieval.service import search
from retrieval.spelling import correct_query, one_edit, surface_form
from tests.corpus import ingest

pytestmark = pytest.mark.django_db

HANDBOOK = {
    "travel": (
        "Travel policy",
        "The travel policy says employees book economy class. Expenses are refunded by "
        "reimbursement within thirty days of the trip.",
    ),
    "payroll": (
        "Payroll",
        "Salaries are paid on the last working day of the month. Payslips are sent by email.",
    ),
    "kitchen": (
        "Office kitchen",
        "Clean the coffee machine every Friday and empty the fridge before holidays.",
    ),
    "sphinx": (
        "Sphinx extensions",
        "Sphinx extensions are listed in the extensions setting of conf.py. Each "
        "extension adds directives, roles or builders; configuration values of an "
        "extension are set in conf.py too.",
    ),
}


@pytest.fixture
def handbook():
    namespace, _ = ingest("handbook", HANDBOOK)
    Namespace.objects.filter(pk=namespace.pk).update(is_public=True)
    return namespace


def test_a_query_misspelt_throughout_is_no_strong_match_and_is_offered_its_correction(
    client, handbook
):
    """No word of "trvel polcy expenes reimbursemnt" occurs in the collection, yet its best
    passage clears the model's floor by the letters it shares with them: meaning alone must not
    make it a confident answer, and the page must offer the correction, spelt as the documents
    spell it ("policy", not the stem `polici`)."""
    query = "trvel polcy expenes reimbursemnt"
    result = search(query, "handbook", group="document", log=False)
    assert NO_SHARED_TERM in result.summary.channel_notes
    assert result.documents[0].title == "Travel policy"
    assert (
        result.documents[0].best_cosine >= strong_cosine()
    )  # meaning alone would have made it strong
    assert result.cited == []
    assert spelling_correction(query, "handbook") == "travel policy expenses reimbursement"
    page = client.get("/", {"q": query, "namespace": "handbook"}).content.decode()
    assert "No strong match" in page
    assert client.get("/suggest", {"q": query, "namespace": "handbook"}).json() == {
        "correction": "travel policy expenses reimbursement"
    }


def test_a_query_whose_words_occur_is_still_strong_by_meaning(handbook):
    """Only a query none of whose words the collection holds loses meaning's strong match."""
    result = search("travel policy reimbursment", "handbook", group="document", log=False)
    assert [d.title for d in result.cited][:1] == ["Travel policy"]


def test_a_correction_is_spelt_as_the_documents_spell_it(handbook):
    """ "policy" stems to `polici`, which no word of the text begins: the correction is the word
    of the text that stems to it, never the stem."""
    assert correct_query(handbook.pk, "travel polcy reimbursment") == "travel policy reimbursment"
    assert correct_query(handbook.pk, "Polcy") == "Policy"


def test_a_typo_that_changes_how_the_stemmer_cuts_is_corrected(handbook):
    """ "extenions" stems to `extenion`, three edits from `extens`; the word is one letter from
    "extensions"."""
    assert (
        correct_query(handbook.pk, "sphnix extenions configuraton")
        == "sphinx extensions configuration"
    )


def test_surface_form_reads_the_words_lexemes_and_one_edit_keeps_the_first_letter():
    assert (
        surface_form("polici", "polcy", "Read the travel policy.", {"policy": {"polici"}})
        == "policy"
    )
    assert (
        surface_form("polici", "polcy", "Read the travel policy.") == "polici"
    )  # without the lexemes: no word
    # of the words that stem to the lexeme or begin with it, the nearest to what was typed
    assert (
        surface_form(
            "compart", "cmpartments", "compartment compartments", {"compartment": {"compart"}}
        )
        == "compartments"
    )
    edits = one_edit("abc")
    assert (
        "ac" in edits
        and "acb" in edits
        and "abd" in edits
        and "abxc" in edits
        and "abc" not in edits
    )
    assert all(edit.startswith("a") for edit in edits)
