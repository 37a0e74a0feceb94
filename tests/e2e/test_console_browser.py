"""The curator's console in a real headless Chromium, as a curator uses it: choosing a kind and
getting only its fields, a loopback URL refused at save with the allow-list entry it needs, a
new web source ingested on save by a real django-q2 worker up to a finished run, "Ingest now"
on the source's own page, a failed run that looks failed, and the one-time API token's copy
button. Screenshots go to test-artifacts/."""

import os
import subprocess
import sys

import pytest
from django.contrib.auth import get_user_model

from ingest.service import start_ingest
from kb.conf import kb_settings
from kb.models import ApiToken, IngestRun, Namespace, Source
from tests.e2e.conftest import ARTIFACTS
from tests.e2e.processes import REPO, wait_for
from tests.pgserver import current_database_url

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
PASSWORD = "curator-pass-123"


def _shot(browser, name):
    ARTIFACTS.mkdir(exist_ok=True)
    assert browser.save_screenshot(str(ARTIFACTS / name))


def _sign_in(browser, live_server):
    from selenium.webdriver.common.by import By

    get_user_model().objects.create_superuser("curator", "c@example.com", PASSWORD)
    browser.get(f"{live_server.url}/admin/login/")
    browser.find_element(By.ID, "id_username").send_keys("curator")
    browser.find_element(By.ID, "id_password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "input[type=submit], button[type=submit]").click()
    wait_for(lambda: "/admin/login" not in browser.current_url, 30, "the console to sign in")


@pytest.fixture
def allowed(settings):
    """Set KB_FETCH_ALLOWED_PRIVATE for the live server (it runs in this process)."""

    def allow(*entries):
        settings.KB_FETCH_ALLOWED_PRIVATE = list(entries)
        kb_settings.cache_clear()

    yield allow
    kb_settings.cache_clear()


@pytest.fixture
def worker(web):
    """A real django-q2 worker on the test database, allowed to fetch the loopback test site."""
    process = subprocess.Popen(
        [sys.executable, "manage.py", "qcluster"],
        cwd=REPO,
        env={
            **os.environ,
            "DATABASE_URL": current_database_url(),
            "KB_FETCH_ALLOWED_PRIVATE": "127.0.0.0/8:*",
        },
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    yield process
    process.terminate()
    process.wait(timeout=60)


def _fill(browser, namespace: str, name: str, location: str):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element(By.ID, "id_namespace")).select_by_value(
        str(Namespace.objects.get(slug=namespace).pk)
    )
    browser.find_element(By.ID, "id_name").send_keys(name)
    browser.find_element(By.ID, "id_location").send_keys(location)


def _run_text(browser) -> str:
    from selenium.webdriver.common.by import By

    return browser.find_element(By.CSS_SELECTOR, ".kb-run-text").text


def test_per_kind_form_and_the_save_time_refusal(live_server, browser, web, allowed):
    from selenium.webdriver.common.by import By

    Namespace.objects.create(slug="manuals", title="Manuals")
    web.page("/manual/", "<main><h1>Manual</h1><p>The manual's first page.</p></main>")
    allowed()  # nothing private may be fetched
    _sign_in(browser, live_server)
    browser.get(f"{live_server.url}/admin/kb/source/add/")
    kinds = [
        a.get_attribute("data-kind") for a in browser.find_elements(By.CSS_SELECTOR, "a.kb-kind")
    ]
    assert kinds == ["url", "sitemap", "crawl", "llms", "file", "text", "folder", "git"]
    _shot(browser, "console-choose-kind.png")
    browser.find_element(By.CSS_SELECTOR, "a.kb-kind[data-kind=crawl]").click()

    labels = [
        label.text.rstrip(":") for label in browser.find_elements(By.CSS_SELECTOR, "fieldset label")
    ]
    assert {
        "Start URL",
        "Max depth",
        "Max pages",
        "Allowed domains",
        "Include",
        "Exclude",
        "Respect robots",
    } <= set(labels), labels
    assert not browser.find_elements(By.NAME, "options") and not browser.find_elements(
        By.NAME, "text"
    )
    assert "0: the start page only" in browser.find_element(By.ID, "id_max_depth_helptext").text
    _fill(browser, "manuals", "Manual", web.url("/manual/"))
    browser.find_element(By.ID, "id_max_depth").send_keys("1")
    browser.find_element(By.ID, "id_include").send_keys("/manual/*")
    _shot(browser, "console-crawl-form.png")
    browser.find_element(By.NAME, "_save").click()

    error = browser.find_element(By.CSS_SELECTOR, ".field-location .errorlist").text
    port = web.url("/").split(":")[2].split("/")[0]
    assert "loopback" in error and f"add '127.0.0.1:{port}' to KB_FETCH_ALLOWED_PRIVATE" in error, (
        error
    )
    assert not Source.objects.exists()
    browser.execute_script(
        "arguments[0].scrollIntoView()", browser.find_element(By.CSS_SELECTOR, ".errorlist")
    )
    _shot(browser, "console-url-refused.png")

    allowed(f"127.0.0.1:{port}")  # the entry the message named
    browser.find_element(By.NAME, "_save").click()
    wait_for(lambda: Source.objects.exists(), 30, "the source to save")
    source = Source.objects.get()
    assert source.kind == "crawl" and source.options == {"max_depth": 1, "include": ["/manual/*"]}


def test_a_new_source_is_ingested_on_save_and_again_from_its_page(
    live_server, browser, web, allowed, worker
):
    from selenium.webdriver.common.by import By

    Namespace.objects.create(slug="manuals", title="Manuals")
    web.page(
        "/guide",
        "<main><h1>Zebrafinch guide</h1><p>The zebrafinch ledger counts pelicans.</p></main>",
    )
    allowed("127.0.0.0/8:*")
    _sign_in(browser, live_server)
    browser.get(f"{live_server.url}/admin/kb/source/add/?kind=url")
    _fill(browser, "manuals", "Guide", web.url("/guide"))
    browser.find_element(By.NAME, "_continue").click()  # save and stay on the source's page
    # the click returns before the saved page arrives; the form it leaves has no run links
    wait_for(
        lambda: browser.find_elements(By.PARTIAL_LINK_TEXT, "run #"), 30, "the queued run's link"
    )[0].click()
    wait_for(
        lambda: _run_text(browser).startswith("succeeded"), 180, "the run queued on save to succeed"
    )
    assert browser.find_element(By.CSS_SELECTOR, "h1").text.startswith("Run #")
    assert "of Guide" in browser.title and "run 1 of" not in browser.title
    _shot(browser, "console-ingested-on-save.png")
    first = IngestRun.objects.get()
    assert first.status == "succeeded" and first.items_changed == 1

    browser.get(f"{live_server.url}/admin/kb/source/{first.source_id}/change/")
    browser.find_element(By.CSS_SELECTOR, "button.kb-ingest-now").click()
    assert "Queued run #" in browser.find_element(By.CSS_SELECTOR, ".messagelist").text
    _shot(browser, "console-ingest-now.png")
    browser.find_element(By.CSS_SELECTOR, ".messagelist a").click()
    wait_for(lambda: _run_text(browser).startswith("succeeded"), 120, "Ingest now's run to succeed")
    second = IngestRun.objects.exclude(pk=first.pk).get()
    assert second.status == "succeeded" and second.items_unchanged == 1


def test_a_failed_run_looks_failed(live_server, browser, allowed):
    from selenium.webdriver.common.by import By

    namespace = Namespace.objects.create(slug="wiki", title="Wiki")
    allowed()
    source = Source.objects.create(
        namespace=namespace, name="Intranet wiki", kind="url", location="http://127.0.0.1:9/wiki"
    )
    run = start_ingest(source, sync=True)
    assert run.status == "failed"
    _sign_in(browser, live_server)
    browser.get(f"{live_server.url}/admin/kb/ingestrun/{run.pk}/change/")
    bar = browser.find_element(By.CSS_SELECTOR, ".kb-run-live progress")
    assert bar.get_attribute("value") == "0"
    assert (
        browser.execute_script("return getComputedStyle(arguments[0]).accentColor", bar)
        == "rgb(186, 33, 33)"
    )
    assert "every item failed" in browser.find_element(By.CSS_SELECTOR, ".kb-run-error").text
    item_error = browser.find_element(By.CSS_SELECTOR, ".field-error_message").text
    assert "KB_FETCH_ALLOWED_PRIVATE='127.0.0.1:9'" in item_error
    assert browser.title.startswith(f"Run #{run.pk} of Intranet wiki (failed)")
    _shot(browser, "console-failed-run.png")
    size = browser.get_window_size()
    try:  # at a laptop's width the History button floats beside the title, not over the run's line
        browser.set_window_size(1280, 900)
        history = browser.find_element(By.CSS_SELECTOR, ".object-tools").rect
        line = browser.find_element(By.CSS_SELECTOR, ".kb-run-text").rect
        assert (
            line["y"] >= history["y"] + history["height"]
            or line["x"] + line["width"] <= history["x"]
        ), (line, history)
    finally:
        browser.set_window_size(size["width"], size["height"])


def test_the_one_time_token_has_a_copy_button(live_server, browser):
    from selenium.webdriver.common.by import By

    Namespace.objects.create(slug="docs", title="Docs")
    _sign_in(browser, live_server)
    browser.execute_cdp_cmd(
        "Browser.grantPermissions",
        {
            "origin": live_server.url,
            "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"],
        },
    )
    browser.get(f"{live_server.url}/admin/kb/apitoken/add/")
    assert browser.find_element(By.CSS_SELECTOR, "h1").text == "Add API token"
    assert browser.find_element(By.CSS_SELECTOR, "#site-name").text == "Knowledge base console"
    browser.find_element(By.ID, "id_name").send_keys("ci")
    browser.find_element(By.CSS_SELECTOR, "select#id_namespaces_from option").click()
    browser.find_element(By.CSS_SELECTOR, "#id_namespaces_add, #id_namespaces_add_link").click()
    browser.find_element(By.NAME, "_save").click()
    secret = browser.find_element(By.ID, "kb-new-token").text
    assert secret and ApiToken.objects.count() == 1
    button = browser.find_element(By.CSS_SELECTOR, "button.kb-copy")
    button.click()
    wait_for(lambda: button.text == "Copied", 10, "the copy button to say Copied")
    copied = browser.execute_async_script(
        "const done = arguments[0]; navigator.clipboard.readText().then(done, e => done('ERROR ' "
        "+ e));"
    )
    assert copied == secret
    _shot(browser, "console-token-copy.png")
