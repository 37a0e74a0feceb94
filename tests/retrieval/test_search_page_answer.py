"""The search page's answer box as the server renders it: where static/kb/answer.js finds what to
ask,
and the one line that says answers are off when no model is configured. The answer itself, streamed
from the real model, is driven in Chromium by tests/e2e/test_answer_browser.py."""

import html
import re

import pytest

from kb.conf import kb_settings
from kb.models import Namespace
from tests.corpus import CORPUS, ingest

pytestmark = pytest.mark.django_db

OFF_LINE = "Answers are off on this site: no answer model is configured. Search works as usual."


@pytest.fixture
def public():
    namespace, _ = ingest("demo", CORPUS)
    Namespace.objects.filter(pk=namespace.pk).update(is_public=True)
    return namespace


@pytest.fixture
def answer_model(settings):
    """Set the answer model's URL (the settings are read once: the cache is cleared around the
    test)."""

    def configure(url: str) -> None:
        settings.KB_ANSWER_URL, settings.KB_ANSWER_MODEL = url, "tiny" if url else ""
        kb_settings.cache_clear()

    yield configure
    kb_settings.cache_clear()


def _box(page: str) -> dict[str, str]:
    match = re.search(r'<section class="answer"([^>]*)>', page)
    assert match, page[:3000]
    return {
        name: html.unescape(value)
        for name, value in re.findall(r'(data-[a-z]+)="([^"]*)"', match.group(1))
    }


def test_without_a_model_one_line_says_answers_are_off_and_the_results_show(
    client, public, answer_model
):
    answer_model("")
    page = client.get("/", {"q": "pumpkin soup nutmeg", "namespace": "demo"}).content.decode()
    assert page.count(OFF_LINE) == 1
    assert '<section class="answer"' not in page
    assert "Pumpkin soup" in page and 'class="result"' in page


def test_with_a_model_the_box_names_the_question_namespace_and_endpoint(
    client, public, answer_model
):
    answer_model("http://127.0.0.1:9/v1")
    question = 'pumpkin "soup" <b>nutmeg</b> & stock'
    page = client.get("/", {"q": question, "namespace": "demo"}).content.decode()
    box = _box(page)
    assert box["data-url"] == "/api/answer"
    assert box["data-q"] == question  # escaped in the attribute, read back whole by the script
    assert box["data-namespace"] == "demo"
    assert "<b>nutmeg</b>" not in page
    assert OFF_LINE not in page
    assert 'src="/static/kb/answer.js"' in page
    assert page.index('<section class="answer"') < page.index(
        '<ol class="results"'
    )  # above the results


@pytest.mark.parametrize(
    "extra", [{"page": "2"}, {"voted": "1", "query_id": "5"}], ids=["page-2", "back-from-a-vote"]
)
def test_the_model_is_asked_only_on_a_searchs_first_showing(client, answer_model, extra):
    answer_model("http://127.0.0.1:9/v1")
    many = {
        f"doc{i}": (f"Pumpkin note {i}", f"Pumpkin soup with nutmeg, variation {i}.")
        for i in range(14)
    }
    namespace, _ = ingest("demo", many)
    Namespace.objects.filter(pk=namespace.pk).update(is_public=True)
    first = client.get(
        "/", {"q": "pumpkin soup nutmeg", "namespace": "demo", "group": "chunk"}
    ).content.decode()
    assert '<section class="answer"' in first
    again = client.get(
        "/", {"q": "pumpkin soup nutmeg", "namespace": "demo", "group": "chunk", **extra}
    )
    assert again.status_code == 200 and 'class="result"' in again.content.decode()
    assert '<section class="answer"' not in again.content.decode()
