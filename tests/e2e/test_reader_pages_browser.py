"""The reader and curator pages in a real headless Chromium, as a person uses them: the
document view on a phone with the cited passage highlighted, the no-results state and its
correction, a reader signing in to a private namespace, a member reading a public one, thumbs up
and the curator's report, and a query turned into an eval case. Screenshots go to
test-artifacts/."""

import json
from urllib.request import urlopen

import pytest
from django.contrib.auth import get_user_model

from evaluation.runner import run_suite
from evaluation.suites import parse_suite
from ingest.loaders import LoadedItem
from ingest.pipeline import IngestPipeline
from kb.models import EvalSuite, IngestRun, Namespace, NamespaceMembership, QueryFeedback, Source
from retrieval.service import search
from tests.corpus import CORPUS, ingest
from tests.e2e.conftest import ARTIFACTS
from tests.retrieval.test_languages import _ingest as _ingest_pages

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

LONG_LINE = "a_very_long_identifier_without_any_space_" * 40
MANUAL = f"""# C programming notes

## Hello world {{#hello}}

Every C program starts with a header include and a main function.

```c
#include <stdio.h>
int main(void) {{ printf("hello"); return 0; }}
```

> **Note:** compile it with `cc hello.c`.

{LONG_LINE}

## Python prompt {{#prompt}}

The interactive interpreter shows a prompt:

```python
>>> print("hi")
hi
```

1. Make three lists that are one list:

   ```python
   >>> lists = [[]] * 3
   ```

| Flag | Meaning |
|------|---------|
| -O | optimise |
| `PYTHONDONTWRITEBYTECODE` | If this is set to a non-empty string, Python will not try to write .pyc files. |

## Memory {{#memory}}

""" + "\n\n".join(  # noqa: E501
    f"Paragraph {i} about malloc, free and pointer arithmetic in the heap allocator."
    for i in range(60)
)


def _manual(namespace):
    source = Source.objects.create(namespace=namespace, name="manuals", kind="text", text="x")
    run = IngestPipeline(IngestRun.objects.create(source=source)).execute(
        [
            LoadedItem(
                ref="c-notes.md",
                body=MANUAL.encode(),
                media_type="text/markdown",
                path="c-notes.md",
            )
        ]
    )
    assert run.status == "succeeded", run.error


def _shot(browser, name):
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    assert browser.save_screenshot(str(path))
    return path


def _signed_in(browser) -> None:
    """Wait until the sign-in form's post has led to the next page: read sooner, an element of the
    sign-in page goes stale under the reader as the browser navigates (seen on a loaded machine)."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 30).until(lambda b: "/accounts/login/" not in b.current_url)


def test_document_view_on_a_phone_highlights_the_cited_passage(live_server, browser):
    from selenium.webdriver.common.by import By

    namespace, _ = ingest("docs", CORPUS)
    _manual(namespace)
    Namespace.objects.filter(pk=namespace.pk).update(is_public=True)
    hit = next(
        h
        for h in search(
            "malloc free pointer arithmetic heap allocator", "docs", limit=10, log=False
        ).hits
        if h.title == "C programming notes" and "Paragraph 5" in h.text
    )
    assert f"#passage-{hit.chunk_id}" in hit.citation_url

    browser.set_window_size(375, 812)
    browser.get(live_server.url + hit.citation_url)
    page = browser.find_element(By.CSS_SELECTOR, "main.document")
    code = [el.text for el in page.find_elements(By.CSS_SELECTOR, "pre code")]
    assert any("#include <stdio.h>" in text for text in code), code  # code verbatim, '#' kept
    assert any('>>> print("hi")' in text for text in code), code
    assert page.find_element(By.CSS_SELECTOR, "pre code.language-c")
    assert (
        page.find_element(By.CSS_SELECTOR, "ol li pre code").text == ">>> lists = [[]] * 3"
    )  # code in a list item
    assert page.find_element(By.CSS_SELECTOR, "table td").text == "-O"
    identifier = page.find_element(
        By.CSS_SELECTOR, "table td code"
    )  # a name in a narrow column stays whole
    assert identifier.text == "PYTHONDONTWRITEBYTECODE"
    assert browser.execute_script("return arguments[0].getClientRects().length", identifier) == 1
    assert page.find_element(By.CSS_SELECTOR, "blockquote strong").text == "Note:"
    width = browser.execute_script("return document.documentElement.scrollWidth")
    assert width <= 375, f"the page is {width}px wide on a 375px phone"

    cited = browser.find_element(By.ID, f"passage-{hit.chunk_id}")
    assert "Paragraph 5" in cited.text
    assert browser.execute_script(
        "return document.querySelector(':target') === arguments[0]", cited
    )
    background = cited.value_of_css_property("background-color")
    assert background not in ("rgba(0, 0, 0, 0)", "transparent"), background
    top = browser.execute_script("return arguments[0].getBoundingClientRect().top", cited)
    assert 0 <= top < 812, "the cited passage is scrolled into view"
    passages = browser.find_elements(By.CSS_SELECTOR, "section.passage")
    assert len({p.get_attribute("id") for p in passages}) == len(passages) > 2  # one anchor each
    prompt = next(
        h
        for h in search("interactive interpreter prompt python", "docs", limit=10, log=False).hits
        if h.title == "C programming notes" and "interpreter" in h.text
    )
    browser.get(live_server.url + prompt.citation_url)
    shown = browser.find_element(By.ID, f"passage-{prompt.chunk_id}")
    assert browser.execute_script(
        "return document.querySelector(':target') === arguments[0]", shown
    )
    _shot(browser, "document-view-phone.png")

    browser.get(f"{live_server.url}/documents/{hit.document_id}/#prompt")  # a section anchor
    marked = browser.find_element(By.CSS_SELECTOR, "section.passage.cited")
    assert "interactive interpreter" in marked.text


def test_no_results_state_offers_a_working_correction(live_server, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    namespace, _ = ingest("docs", CORPUS)
    Namespace.objects.filter(pk=namespace.pk).update(is_public=True, title="Product docs")
    browser.get(f"{live_server.url}/")
    assert (
        browser.find_element(By.CSS_SELECTOR, "#namespace option[selected]").text == "Product docs"
    )
    box = browser.find_element(By.ID, "q")
    assert "Search the documents" in box.get_attribute("placeholder")
    browser.find_element(By.TAG_NAME, "body").click()
    browser.find_element(By.TAG_NAME, "body").send_keys("/")
    assert browser.switch_to.active_element == box, "/ focuses the search box"
    box.send_keys("nutmg", Keys.ENTER)

    status = browser.find_element(By.CSS_SELECTOR, "[role=status]")
    assert "nutmg" in status.text and (
        "No results for" in status.text or "No strong match" in status.text
    )
    correction = status.find_element(By.CSS_SELECTOR, ".correction a")
    assert correction.text == "nutmeg"
    body = browser.find_element(By.TAG_NAME, "body").text
    for internal in (
        "Meaning weighs",
        "candidate",
        "Dropped:",
        "RRF",
        "MMR",
        "Suggested documents",
    ):
        assert internal not in body, internal  # ranking internals stay folded away
    _shot(browser, "search-no-results-correction.png")
    correction.click()
    first = browser.find_element(By.CSS_SELECTOR, "ol.results > li.result h3")
    assert first.text == "Pumpkin soup"
    for placeholder in browser.find_elements(
        By.CSS_SELECTOR, ".correction[data-suggest]"
    ):  # weak again
        answered = browser.find_element(
            By.CSS_SELECTOR, ".correction[data-suggested]"
        )  # waits for /suggest
        assert answered.get_attribute("data-suggested") == "no" and not placeholder.is_displayed()
    assert not [
        shown
        for shown in browser.find_elements(By.CSS_SELECTOR, ".correction")
        if shown.is_displayed()
    ]
    # apps get the same correction over HTTP
    with urlopen(f"{live_server.url}/api/spelling?query=nutmg&namespace=docs") as answer:
        assert json.load(answer) == {"correction": "nutmeg"}


def test_a_word_typed_without_its_accents_is_found_and_the_ranking_panel_says_how(
    live_server, browser
):
    from selenium.webdriver.common.by import By

    namespace = _ingest_pages("manuel", "user-space.fr-FR.html")  # a real French manual page
    browser.get(f"{live_server.url}/?q=extremites&namespace={namespace.slug}")
    first = browser.find_element(By.CSS_SELECTOR, "ol.results > li.result")
    assert "extrémités" in [mark.text for mark in first.find_elements(By.TAG_NAME, "mark")]
    panel = browser.find_element(By.CSS_SELECTOR, "details.ranking")
    line = panel.find_element(By.CSS_SELECTOR, ".accents-restored")
    assert not line.is_displayed()  # folded away for readers
    panel.find_element(By.TAG_NAME, "summary").click()
    assert line.text == (
        "Words typed without their accents, read with them: extremites as extrémités "
        "(extrem, where the text holds no extremit)."
    )
    considered = panel.find_element(
        By.CSS_SELECTOR, ".candidates"
    ).text  # one with the bundled model
    count = int(considered.split()[0])
    assert considered.startswith(
        f"{count} candidate passage{'' if count == 1 else 's'} considered"
    ), considered
    _shot(browser, "search-accents-restored.png")


def test_reader_signs_in_and_sees_only_their_namespace(live_server, browser):
    from selenium.webdriver.common.by import By

    team_a, _ = ingest("team-a", CORPUS)
    ingest("team-b", CORPUS)
    Namespace.objects.filter(slug="team-a").update(title="Team A handbook")
    reader = get_user_model().objects.create_user(
        "reader", password="reader-pass-123", email="r@example.com"
    )
    NamespaceMembership.objects.create(user=reader, namespace=team_a)

    browser.get(f"{live_server.url}/?q=pumpkin+soup&namespace=team-a")
    alert = browser.find_element(By.CSS_SELECTOR, ".sign-in")
    assert "Bearer" not in alert.text and "Sign in" in alert.text
    alert.find_element(By.LINK_TEXT, "Sign in").click()
    browser.find_element(By.ID, "id_username").send_keys("reader")
    browser.find_element(By.ID, "id_password").send_keys("reader-pass-123")
    _shot(browser, "reader-sign-in.png")
    browser.find_element(By.CSS_SELECTOR, ".account-form button").click()
    _signed_in(browser)

    results = browser.find_elements(By.CSS_SELECTOR, "ol.results > li.result h3")
    assert results and results[0].text == "Pumpkin soup"
    options = [o.text for o in browser.find_elements(By.CSS_SELECTOR, "#namespace option")]
    assert options == ["Team A handbook"], options
    assert "reader" in browser.find_element(By.CSS_SELECTOR, "header.top").text
    _shot(browser, "reader-signed-in-results.png")

    browser.get(f"{live_server.url}/api/search?query=pumpkin&namespace=team-a")
    assert json.loads(browser.find_element(By.TAG_NAME, "body").text)["results"]
    browser.get(f"{live_server.url}/api/search?query=pumpkin&namespace=team-b")
    assert json.loads(browser.find_element(By.TAG_NAME, "body").text)["code"] == "KB_FORBIDDEN"
    other = search("pumpkin", "team-b", limit=1, log=False).hits[0]
    browser.get(f"{live_server.url}/documents/{other.document_id}/")
    assert "Document not available" in browser.find_element(By.CSS_SELECTOR, "main h1").text
    assert "a member of its collection" in browser.find_element(By.CSS_SELECTOR, "p.error").text
    mine = search("pumpkin", "team-a", limit=1, log=False).hits[0]
    browser.get(live_server.url + mine.citation_url)
    assert browser.find_element(By.CSS_SELECTOR, "main.document h1").text == mine.title
    browser.get(
        f"{live_server.url}/curate/"
    )  # a curator's page: told so, not asked to sign in again
    assert browser.find_element(By.CSS_SELECTOR, "main h1").text == "For staff"
    assert "reader" in browser.find_element(By.CSS_SELECTOR, "p.error").text


def test_a_signed_in_member_of_another_namespace_reads_a_public_one(live_server, browser):
    """Signing in must not make the product less useful: a member of team-a still reads the public
    demo, whose page, search results and document it opened signed out; team-b stays closed."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    team_a, _ = ingest("team-a", CORPUS)
    ingest("team-b", CORPUS)
    demo, _ = ingest(
        "demo", {"faq": ("Public FAQ", "Pumpkins are orange, and this answer is public.")}
    )
    Namespace.objects.filter(slug="team-a").update(title="Team A handbook")
    Namespace.objects.filter(pk=demo.pk).update(is_public=True, title="Demo docs")
    reader = get_user_model().objects.create_user(
        "reader", password="reader-pass-123", email="r@example.com"
    )
    NamespaceMembership.objects.create(user=reader, namespace=team_a)

    browser.get(f"{live_server.url}/accounts/login/?next=/")
    browser.find_element(By.ID, "id_username").send_keys("reader")
    browser.find_element(By.ID, "id_password").send_keys("reader-pass-123")
    browser.find_element(By.CSS_SELECTOR, ".account-form button").click()
    _signed_in(browser)
    assert "reader" in browser.find_element(By.CSS_SELECTOR, "header.top").text

    groups = {
        g.get_attribute("label"): [o.text for o in g.find_elements(By.TAG_NAME, "option")]
        for g in browser.find_elements(By.CSS_SELECTOR, "#namespace optgroup")
    }
    assert groups == {
        "Your collections": ["Team A handbook"],
        "Public collections": ["Demo docs"],
    }, groups
    assert (
        Select(browser.find_element(By.ID, "namespace")).first_selected_option.text
        == "Team A handbook"
    )
    Select(browser.find_element(By.ID, "namespace")).select_by_visible_text("Demo docs")
    box = browser.find_element(By.ID, "q")
    box.send_keys("orange pumpkins")
    box.submit()
    assert "namespace=demo" in browser.current_url
    first = browser.find_element(By.CSS_SELECTOR, "ol.results > li.result")
    assert first.find_element(By.CSS_SELECTOR, "h3").text == "Public FAQ"
    assert not browser.find_elements(By.CSS_SELECTOR, "p.error")
    _shot(browser, "member-reads-public-namespace.png")
    first.find_element(By.CSS_SELECTOR, "h3 a").click()
    assert browser.find_element(By.CSS_SELECTOR, "main.document h1").text == "Public FAQ"
    assert "Pumpkins are orange" in browser.find_element(By.CSS_SELECTOR, "main.document").text

    browser.get(
        f"{live_server.url}/api/search?query=pumpkins&namespace=demo"
    )  # the API, with the session
    assert (
        json.loads(browser.find_element(By.TAG_NAME, "body").text)["results"][0]["title"]
        == "Public FAQ"
    )
    browser.get(f"{live_server.url}/api/namespaces")
    listed = json.loads(browser.find_element(By.TAG_NAME, "body").text)["namespaces"]
    assert {n["slug"]: n["access"] for n in listed} == {"demo": "public", "team-a": "member"}
    browser.get(f"{live_server.url}/?q=pumpkin&namespace=team-b")  # private namespaces stay closed
    assert "not a member" in browser.find_element(By.CSS_SELECTOR, "p.error").text


def test_feedback_reaches_the_curator_report_and_becomes_an_eval_case(live_server, browser):
    from selenium.webdriver.common.by import By

    namespace, _ = ingest("docs", CORPUS)
    Namespace.objects.filter(pk=namespace.pk).update(is_public=True)
    browser.get(f"{live_server.url}/?q=roast+pumpkin+soup&namespace=docs")
    first = browser.find_element(By.CSS_SELECTOR, "ol.results > li.result")
    assert first.find_element(By.CSS_SELECTOR, "h3").text == "Pumpkin soup"
    first.find_element(By.CSS_SELECTOR, "button.vote.up").click()
    assert "Thank you" in browser.find_element(By.CSS_SELECTOR, ".thanks").text
    vote = QueryFeedback.objects.get()
    assert vote.helpful and vote.query_log.query == "roast pumpkin soup"
    browser.get(f"{live_server.url}/?q=qwen+release&namespace=docs")
    browser.get(f"{live_server.url}/?q=qwen+release&namespace=docs")

    get_user_model().objects.create_user(
        "curator", password="curator-pass-123", is_staff=True, is_superuser=True
    )
    browser.get(f"{live_server.url}/curate/?namespace=docs&days=7")
    browser.find_element(By.ID, "id_username").send_keys("curator")
    browser.find_element(By.ID, "id_password").send_keys("curator-pass-123")
    browser.find_element(By.CSS_SELECTOR, ".account-form button").click()
    _signed_in(browser)
    top = browser.find_elements(By.CSS_SELECTOR, "table#top tbody tr")
    rows = {
        r.find_element(By.CSS_SELECTOR, "td.q").text: [
            c.text for c in r.find_elements(By.CSS_SELECTOR, "td.n")
        ]
        for r in top
    }
    assert rows["qwen release"][0] == "2" and rows["roast pumpkin soup"][0] == "1", rows
    assert rows["roast pumpkin soup"][4] == "1"  # the thumbs up, shown with its query
    _shot(browser, "curator-report.png")

    voted = browser.find_element(By.CSS_SELECTOR, "table#voted tbody tr")
    voted.find_element(
        By.CSS_SELECTOR, "button.to-eval"
    ).click()  # one click: judged by the thumbs up
    assert "Eval case added" in browser.find_element(By.CSS_SELECTOR, ".made").text
    _shot(browser, "curator-eval-case.png")

    suite = EvalSuite.objects.get(namespace__slug="docs")
    case = suite.definition["cases"][0]
    assert case["question"] == "roast pumpkin soup" and case["expect"]["relevant"] == ["pumpkin"]
    outcome = run_suite(parse_suite(suite.definition, namespace="docs"))
    assert outcome.cases[0].passed, outcome.cases[0]

    # "choose documents" opens the review page, ticked as the votes say, to judge by hand
    browser.find_element(By.CSS_SELECTOR, "table#voted tbody tr a.review").click()
    ticked = browser.find_elements(By.CSS_SELECTOR, "form.eval-case input[name=relevant]:checked")
    assert [t.get_attribute("value") for t in ticked] == ["pumpkin"]
