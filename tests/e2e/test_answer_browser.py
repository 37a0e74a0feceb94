"""The answer on the search page, in headless Chromium, against the product's web server as
scripts/run starts it.

Two deployments over the test database: one whose answer model is the real SmolLM2-135M behind
`transformers serve` (tests/answer_model.py), and one whose model is a scripted chat-completions
server on loopback, which is then stopped so the endpoint is dead. The real model's words are never
checked, only what the page makes of them: the answer streams in, its counts and sources show, every
source and citation link opens the document view at its passage, a vote is stored. The scripted
model says exactly what is needed for what a tiny model cannot be relied on to write: a cited
sentence its source holds, one it does not, and markup that must stay text.
"""

from __future__ import annotations

import re
import sys
import urllib.parse

import pytest

from ingest.loaders import LoadedItem
from ingest.pipeline import IngestPipeline
from kb.models import AnswerLog, IngestRun, Namespace, Source
from tests.answer_model import answer_server  # noqa: F401  (the fixture)
from tests.answers.scripted_model import Reply, ScriptedModel
from tests.e2e.conftest import ARTIFACTS
from tests.e2e.processes import Http, Process, free_port, product_env, record_timing, wait_for
from tests.pgserver import current_database_url

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

DOCUMENTS = {
    "soup": (
        "Pumpkin soup",
        "# Pumpkin soup\n\n## Method\n\nRoast the pumpkin, then blend it with stock, cream and "
        "nutmeg. Season the soup with salt and serve it hot.\n",
    ),
    "garden": (
        "Growing pumpkins",
        "# Growing pumpkins\n\n## Soil and water\n\nPumpkins need sun, space and rich "
        "soil; water them deeply every week.\n",
    ),
    "errors": (
        "Connection errors",
        "# Connection errors\n\nIf you see ERR_CONNECTION_REFUSED the server is not "
        "listening on the port.\n",
    ),
}
QUESTION = "How do I make pumpkin soup?"
OFF_TOPIC = "What is the orbital period of Neptune around the sun?"
ANSWER_SECONDS = (
    900  # the real model on a busy 2-core machine: a prompt of a few hundred tokens, 24 tokens out
)


def _web(tmp_path, name: str, **answer_env: str) -> tuple[Process, Http]:
    """The web server as `kb_run` (scripts/run) starts it: threaded, serving the page's scripts
    too."""
    port = free_port()
    env = product_env(DATABASE_URL=current_database_url(), KB_WARM_MODEL="query", **answer_env)
    args = [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"]
    return Process(args, env, tmp_path / f"web-{name}.log").start(), Http(
        f"http://127.0.0.1:{port}"
    )


@pytest.fixture(scope="module")
def deployments(django_db_setup, django_db_blocker, tmp_path_factory, answer_server):  # noqa: F811
    tmp_path = tmp_path_factory.mktemp("answer-browser")
    scripted = ScriptedModel(
        [
            Reply(
                text=[
                    "Roast the pumpkin, then blend it with stock, cream and nutmeg [1]. ",
                    "Pumpkins were first grown on the moon <b>in 1969</b> [1]. ",
                    "Water them deeply every week [2].",
                ]
            )
        ]
    )
    scripted.__enter__()
    with django_db_blocker.unblock():
        real = _web(
            tmp_path,
            "real",
            KB_ANSWER_URL=answer_server.base_url,
            KB_ANSWER_MODEL=answer_server.model,
            KB_ANSWER_MAX_TOKENS="24",
            KB_ANSWER_CONTEXT_TOKENS="2048",
            KB_ANSWER_TOOLS="off",
            KB_ANSWER_TIMEOUT=f"5,{ANSWER_SECONDS},{ANSWER_SECONDS}",
        )
        fake = _web(
            tmp_path,
            "scripted",
            KB_ANSWER_URL=scripted.url,
            KB_ANSWER_MODEL=scripted.model,
            KB_ANSWER_TOOLS="off",
            KB_ANSWER_TIMEOUT="3,20,30",
        )
    try:
        for process, http in (real, fake):
            wait_for(
                lambda http=http, process=process: http.healthy() or not process.alive(),
                240,
                "the web server to answer",
            )
            assert process.alive(), process.output()[-4000:]
        yield {"real": real[1], "scripted": fake[1], "scripted_model": scripted}
    finally:
        scripted.__exit__(None, None, None)
        for process, _ in (real, fake):
            process.stop()
    for process, _ in (real, fake):
        assert "Traceback" not in process.output(), process.output()[-4000:]


@pytest.fixture
def demo(transactional_db):
    namespace = Namespace.objects.create(slug="demo", title="Demo", is_public=True)
    source = Source.objects.create(namespace=namespace, name="notes", kind="text", text="x")
    items = [
        LoadedItem(
            ref=ref,
            body=text.encode(),
            media_type="text/markdown",
            title_hint=title,
            path=f"{ref}.md",
        )
        for ref, (title, text) in DOCUMENTS.items()
    ]
    run = IngestPipeline(IngestRun.objects.create(source=source)).execute(items)
    assert run.status == "succeeded", run.error
    return namespace


def _ask(browser, http: Http, question: str, seconds: float = 60):
    from selenium.webdriver.common.by import By

    browser.get(f"{http.base}/?" + urllib.parse.urlencode({"q": question, "namespace": "demo"}))
    box = browser.find_element(By.CSS_SELECTOR, "section.answer")
    try:
        wait_for(
            lambda: box.get_attribute("data-state") == "done",
            seconds,
            "the answer to finish",
            every=1,
        )
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {box.get_attribute('outerHTML')[:3000]}") from exc
    return box


def _opens_at_its_passage(browser, href: str) -> None:
    """`href` opens the document view with the linked passage highlighted."""
    browser.get(href)
    fragment = urllib.parse.urlparse(href).fragment
    assert fragment.startswith("passage-"), href
    wait_for(
        lambda: browser.execute_script(
            "var t = document.getElementById(arguments[0]); return !!t && "
            "t.classList.contains('cited');",
            fragment,
        ),
        10,
        f"passage {fragment} to be highlighted",
    )


def _results_still_show(browser) -> list[str]:
    from selenium.webdriver.common.by import By

    titles = [el.text for el in browser.find_elements(By.CSS_SELECTOR, "ol.results > li.result h3")]
    assert titles, browser.page_source[-3000:]
    return titles


def test_the_real_model_streams_an_answer_whose_sources_open_at_their_passages(
    deployments, demo, browser
):
    from selenium.webdriver.common.by import By

    http = deployments["real"]
    box = _ask(browser, http, QUESTION, seconds=ANSWER_SECONDS)
    assert not box.find_elements(By.CSS_SELECTOR, ".answer-error"), box.text
    # streamed: text arrives as delta events, a sentence at a time (24 tokens make one or two)
    assert int(box.get_attribute("data-deltas") or 0) >= 1, box.get_attribute("outerHTML")
    counts = box.find_element(By.CSS_SELECTOR, ".answer-counts").text
    numbers = re.fullmatch(
        r"(\d+) sentences?: (\d+) supported by their sources, (\d+) unsupported \(marked\), "
        r"(\d+) dropped \(cited nothing checkable\)\.",
        counts,
    )
    assert numbers, counts
    total, supported, unsupported, dropped = map(int, numbers.groups())
    assert total >= 1 and supported + unsupported + dropped <= total
    shown = box.find_elements(By.CSS_SELECTOR, ".answer-text .sentence")
    assert len(shown) == total - dropped  # dropped sentences are counted, not shown
    assert len(box.find_elements(By.CSS_SELECTOR, ".sentence.unsupported .flag")) == unsupported
    row = AnswerLog.objects.get(pk=int(box.get_attribute("data-answer-id")))
    assert (row.sentence_count, row.supported, row.unsupported, row.dropped) == (
        total,
        supported,
        unsupported,
        dropped,
    )
    assert row.answered and row.gate_rule in ("strong-match", "lexical-confirmed")
    record_timing("answer_real_model_page_seconds", row.timings.get("total_ms", 0) / 1000)
    assert "Pumpkin soup" in _results_still_show(browser)

    # a vote on the answer is stored against it
    box.find_element(By.CSS_SELECTOR, ".answer-feedback .vote.up").click()
    wait_for(lambda: "Thank you" in box.text, 20, "the vote to be thanked")
    row.refresh_from_db()
    assert row.helpful is True

    # readable on a phone: nothing wider than the screen
    browser.set_window_size(390, 844)
    width = browser.execute_script("return document.documentElement.scrollWidth")
    assert width <= 390, width
    ARTIFACTS.mkdir(exist_ok=True)
    assert browser.save_screenshot(str(ARTIFACTS / "answer-real-model-390px.png"))

    # every source, and every citation the model did write, opens the document view at its passage
    links = [
        a for a in box.find_elements(By.CSS_SELECTOR, ".answer-sources a, .answer-text a.cite")
    ]
    assert links, box.get_attribute("outerHTML")
    for href in sorted({a.get_attribute("href") for a in links}):
        _opens_at_its_passage(browser, href)


def test_an_off_topic_question_is_not_covered_and_shows_the_closest_passages(
    deployments, demo, browser
):
    from selenium.webdriver.common.by import By

    box = _ask(browser, deployments["real"], OFF_TOPIC)
    status = box.find_element(By.CSS_SELECTOR, ".answer-status")
    assert status.text == "The knowledge base does not cover this question.", box.text
    closest = box.find_elements(By.CSS_SELECTOR, ".answer-sources a")
    assert (
        closest
        and box.find_element(By.CSS_SELECTOR, ".answer-sources h3").text == "Closest passages"
    )
    row = AnswerLog.objects.get(pk=int(box.get_attribute("data-answer-id")))
    assert not row.answered and row.gate_rule == "no-strong-match", (row.gate_rule, row.gate_reason)
    assert "model_ms" not in row.timings  # the model was not asked
    _results_still_show(browser)
    _opens_at_its_passage(browser, closest[0].get_attribute("href"))


def test_citations_open_at_their_passages_unsupported_ones_are_marked_and_a_dead_model_is_said(
    deployments, demo, browser
):
    from selenium.webdriver.common.by import By

    http = deployments["scripted"]
    box = _ask(browser, http, QUESTION)
    sentences = box.find_elements(By.CSS_SELECTOR, ".answer-text .sentence")
    assert len(sentences) == 3, box.get_attribute("outerHTML")
    assert int(box.get_attribute("data-deltas") or 0) == 3  # streamed: one delta event a sentence
    unsupported = box.find_elements(By.CSS_SELECTOR, ".sentence.unsupported")
    assert unsupported and all(
        s.find_element(By.CSS_SELECTOR, ".flag").text == "not supported by its source"
        for s in unsupported
    )
    moon = next(s for s in sentences if "moon" in s.text)
    assert "unsupported" in moon.get_attribute("class")
    assert (
        "supported" == sentences[0].get_attribute("class").split()[-1]
    )  # the soup's method, cited to it
    # the model's markup is shown as text, never as HTML
    assert "<b>in 1969</b>" in moon.text and not box.find_elements(
        By.CSS_SELECTOR, ".answer-text b"
    )
    assert box.find_element(By.CSS_SELECTOR, ".answer-counts").text.startswith("3 sentences: ")
    cites = box.find_elements(By.CSS_SELECTOR, ".answer-text a.cite")
    assert [a.text for a in cites] == ["[1]", "[1]", "[2]"]
    targets = [a.get_attribute("href") for a in cites]
    _results_still_show(browser)
    ARTIFACTS.mkdir(exist_ok=True)
    assert browser.save_screenshot(str(ARTIFACTS / "answer-checked-citations.png"))
    for href in dict.fromkeys(targets):
        browser.get(f"{http.base}/?" + urllib.parse.urlencode({"q": QUESTION, "namespace": "demo"}))
        box = browser.find_element(By.CSS_SELECTOR, "section.answer")
        wait_for(
            lambda box=box: box.get_attribute("data-state") == "done", 60, "the answer to finish"
        )
        link = next(
            a
            for a in box.find_elements(By.CSS_SELECTOR, ".answer-text a.cite")
            if a.get_attribute("href") == href
        )
        link.click()
        wait_for(lambda href=href: browser.current_url == href, 10, "the citation to open")
        _opens_at_its_passage(browser, href)

    # the model's server goes away: the page says so plainly and the results stand
    deployments["scripted_model"].__exit__(None, None, None)
    box = _ask(browser, http, QUESTION)
    error = box.find_element(By.CSS_SELECTOR, ".answer-error").text
    assert (
        error.startswith("No answer: ") and "The search results below are not affected." in error
    ), error
    assert re.search(r"\(ANSWER_[A-Z_]+\)", error), error
    assert "Pumpkin soup" in _results_still_show(browser)
