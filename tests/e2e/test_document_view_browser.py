"""The document view on a 390 px phone, as a reader of issue #57 met it: the title once, code
that scrolls sideways instead of wrapping inside a name, a cue on a table whose columns run off
the screen, and a Word file's numbered list and footnote shown as a list and a linked note.
Screenshots go to test-artifacts/."""

from pathlib import Path

import pytest

from ingest.extract import documents as doc
from ingest.loaders import LoadedItem
from ingest.pipeline import IngestPipeline
from kb.models import Document, IngestRun, Namespace, Source
from tests.e2e.conftest import ARTIFACTS

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real" / "documents"
PHONE = 390
CODE = (
    "result = asn1_decode_simple_der(ASN1_ETYPE_OCTET_STRING, der_buffer, der_buffer_length, "
    "&string, &length)"
)
GUIDE = f"""# Decoding guide

Call the decoder on the buffer:

```c
{CODE}
```

| Function | Type | Input | Output | Flags | Returns | Since | Thread safe |
|---|---|---|---|---|---|---|---|
| asn1_decode_simple_der | etype | der | str | none | ASN1_SUCCESS | 2.0 | yes |

| Code | Meaning |
|---|---|
| 0 | success |
"""


def _ingest(items: list[LoadedItem]) -> dict[str, Document]:
    namespace = Namespace.objects.create(slug="manuals", is_public=True)
    source = Source.objects.create(namespace=namespace, name="manuals", kind="text", text="x")
    run = IngestPipeline(IngestRun.objects.create(source=source)).execute(items)
    assert run.status == "succeeded", run.error
    return {d.ref: d for d in Document.objects.filter(namespace=namespace)}


def test_document_view_on_a_390px_phone(live_server, browser):
    from selenium.webdriver.common.by import By

    documents = _ingest(
        [
            LoadedItem(
                ref="guide.md", body=GUIDE.encode(), media_type="text/markdown", path="guide.md"
            ),
            LoadedItem(
                ref="gfdl.docx",
                body=(REAL / "gfdl.docx").read_bytes(),
                media_type=doc.DOCX,
                path="gfdl.docx",
            ),
            LoadedItem(
                ref="join.docx",
                body=(REAL / "tutorial-join-notes.docx").read_bytes(),
                media_type=doc.DOCX,
                path="join.docx",
            ),
        ]
    )
    browser.set_window_size(PHONE, 900)
    width = browser.execute_script("return window.innerWidth")
    browser.get(f"{live_server.url}/documents/{documents['guide.md'].pk}/")
    page = browser.find_element(By.CSS_SELECTOR, "main.document")
    assert page.text.count("Decoding guide") == 1, (
        page.text
    )  # not again as a heading or a breadcrumb

    pre = page.find_element(By.CSS_SELECTOR, "pre")
    code = pre.find_element(By.CSS_SELECTOR, "code")
    assert code.text == CODE
    lines = "return new Set(Array.from(arguments[0].getClientRects(), r => Math.round(r.top))).size"
    assert browser.execute_script(lines, code) == 1  # one line, not wrapped inside a name
    assert browser.execute_script(
        "return arguments[0].scrollWidth > arguments[0].clientWidth", pre
    )  # it scrolls
    assert pre.value_of_css_property("overflow-x") == "auto"
    assert (
        browser.execute_script("return document.documentElement.scrollWidth") <= width
    )  # the page does not

    wide, narrow = page.find_elements(By.CSS_SELECTOR, ".text table")
    assert "wide" in wide.get_attribute("class") and "wide" not in (
        narrow.get_attribute("class") or ""
    )
    hints = page.find_elements(By.CSS_SELECTOR, ".table-hint")
    assert len(hints) == 1 and hints[0].is_displayed() and "scroll it sideways" in hints[0].text
    assert browser.execute_script(
        "return arguments[0].nextElementSibling === arguments[1]", hints[0], wide
    )
    assert "radial-gradient" in wide.value_of_css_property(
        "background-image"
    )  # the shade on the hidden side
    _shot(browser, "document-view-390.png")

    browser.get(f"{live_server.url}/documents/{documents['gfdl.docx'].pk}/")
    items = browser.find_elements(By.CSS_SELECTOR, "main.document ol > li")
    assert (
        len(items) >= 20
    )  # sections 0 to 11 and conditions A to O, less those a passage break splits
    assert browser.find_element(By.CSS_SELECTOR, "main.document ol").get_attribute("start") == "0"
    assert browser.execute_script("return document.documentElement.scrollWidth") <= width

    browser.get(f"{live_server.url}/documents/{documents['join.docx'].pk}/")
    citation = browser.find_element(By.CSS_SELECTOR, "sup.note-citation a")
    citation.click()
    note = browser.find_element(By.CSS_SELECTOR, "p.note")
    assert browser.execute_script("return document.querySelector(':target') === arguments[0]", note)
    assert "This is only a conceptual model." in note.text
    _shot(browser, "document-view-390-note.png")


def _shot(browser, name):
    ARTIFACTS.mkdir(exist_ok=True)
    assert browser.save_screenshot(str(ARTIFACTS / name))
