"""A live ingest run's page in a real headless Chromium: every field moves with the run, not only
the bar above them (the title, the counters, "running for", the item table), without a reload,
under the page's Content-Security-Policy (the script is a static file)."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from kb.models import IngestItem, IngestRun, Namespace, Source
from tests.e2e.processes import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
PASSWORD = "curator-pass-123"
# as loaded, and added live
ROWS = "#items-group tbody tr.has_original, #items-group tbody tr.kb-live-item"


def _sign_in(browser, live_server):
    from selenium.webdriver.common.by import By

    get_user_model().objects.create_superuser("curator", "c@example.com", PASSWORD)
    browser.get(f"{live_server.url}/admin/login/")
    browser.find_element(By.ID, "id_username").send_keys("curator")
    browser.find_element(By.ID, "id_password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "input[type=submit], button[type=submit]").click()
    wait_for(lambda: "/admin/login" not in browser.current_url, 30, "the console to sign in")


def test_every_field_of_a_live_run_moves_without_a_reload(live_server, browser):
    from selenium.webdriver.common.by import By

    namespace = Namespace.objects.create(slug="docs", title="Docs")
    source = Source.objects.create(namespace=namespace, name="Manuals", kind="text", text="x")
    run = IngestRun.objects.create(source=source)  # queued: no worker has it yet
    _sign_in(browser, live_server)
    browser.get(f"{live_server.url}/admin/kb/ingestrun/{run.pk}/change/")
    heading = browser.find_element(By.CSS_SELECTOR, "#content h1")
    assert heading.text == f"Run #{run.pk} of Manuals (queued)"
    browser.execute_script("window.kbNotReloaded = true")  # gone if the page reloads

    def field(name):
        return browser.find_element(By.CSS_SELECTOR, f".field-{name} .readonly").text

    def rows():
        return [
            row.find_element(By.CSS_SELECTOR, "td.field-ref").text
            for row in browser.find_elements(By.CSS_SELECTOR, ROWS)
        ]

    started = timezone.now() - timedelta(seconds=5)
    IngestRun.objects.filter(pk=run.pk).update(
        status="running",
        started_at=started,
        heartbeat_at=timezone.now(),
        items_total=3,
        items_done=1,
        items_changed=1,
        attempts=1,
    )
    IngestItem.objects.create(
        run=run, ref="guide.md", status="changed", byte_size=178, chunks=1, duration_ms=12
    )
    wait_for(
        lambda: heading.text == f"Run #{run.pk} of Manuals (running)",
        20,
        "the title to say running",
    )
    wait_for(
        lambda: field("items_done") == "1" and field("status") == "Running",
        10,
        "the counters to move",
    )
    wait_for(lambda: field("took").startswith("running for"), 10, "the run's time to be told")
    assert field("took") != "running for 0 s" and "1/3" in field("progress_bar")
    assert browser.title.startswith(f"Run #{run.pk} of Manuals (running)")
    wait_for(lambda: rows() == ["guide.md"], 10, "the item table to fill")

    IngestItem.objects.create(
        run=run,
        ref="manual.pdf",
        status="failed",
        error_code="INGEST_EMPTY_CONTENT",
        error_message="No chunks could be made.",
    )
    IngestRun.objects.filter(pk=run.pk).update(items_done=2, items_failed=1)
    wait_for(lambda: rows() == ["guide.md", "manual.pdf"], 10, "the next item to be added")
    failed = browser.find_elements(By.CSS_SELECTOR, ROWS)[1]
    assert (
        failed.find_element(By.CSS_SELECTOR, "td.field-error_code").text == "INGEST_EMPTY_CONTENT"
    )
    assert failed.find_element(By.CSS_SELECTOR, "td.field-status").text == "Failed"
    assert field("items_failed") == "1" and field("items_done") == "2"
    assert (
        browser.execute_script("return window.kbNotReloaded") is True
    )  # all of it live, no reload

    IngestRun.objects.filter(pk=run.pk).update(
        status="partial", finished_at=timezone.now(), items_done=3
    )

    def heading_now() -> str:
        """The page reloads once the run has ended: a heading found just before the reload is
        stale when read, and during it there is none yet; either is read on the next poll."""
        from selenium.common.exceptions import (
            NoSuchElementException,
            StaleElementReferenceException,
        )

        try:
            return browser.find_element(By.CSS_SELECTOR, "#content h1").text
        except (NoSuchElementException, StaleElementReferenceException):
            return ""

    wait_for(lambda: "(partial)" in heading_now(), 20, "the finished run's page")
    assert not browser.get_log("browser") or not [
        e for e in browser.get_log("browser") if "Content Security" in e.get("message", "")
    ]
