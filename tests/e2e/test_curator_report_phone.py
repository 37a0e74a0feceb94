"""The curator's report on a 390 px phone, in a real headless Chromium: the page is no wider than
the screen, and every row's vote counts and its "Make eval case" button are on it."""

import pytest
from django.contrib.auth import get_user_model

from kb.models import Namespace, QueryLog
from tests.e2e.conftest import ARTIFACTS
from tests.e2e.processes import chromium

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
PHONE = 390


@pytest.fixture
def phone():
    driver = chromium(
        f"{PHONE},844"
    )  # headless Chromium keeps a window at least 500 px wide: emulate the phone
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": PHONE, "height": 844, "deviceScaleFactor": 1, "mobile": True},
    )
    yield driver
    driver.quit()


def test_the_report_fits_a_390_px_phone(live_server, phone):
    from selenium.webdriver.common.by import By

    namespace = Namespace.objects.create(slug="team:handbook", title="Team handbook")
    for query, results in [
        ("how do I configure the reimbursement policy for international travel", [1]),
        ("sphinx extensions configuration", []),
        ("vpn", [1, 2]),
        ("ERR_CONNECTION_REFUSED_WHILE_CONNECTING_TO_THE_INTERNAL_PROXY", [1]),
    ]:
        for _ in range(3):
            QueryLog.objects.create(
                namespace=namespace, query=query, result_ids=results, top_cosine=0.2, strong=False
            )
    get_user_model().objects.create_user(
        "curator", password="curator-pass-123", is_staff=True, is_superuser=True
    )
    phone.get(f"{live_server.url}/curate/?namespace=team:handbook&days=7")
    phone.find_element(By.ID, "id_username").send_keys("curator")
    phone.find_element(By.ID, "id_password").send_keys("curator-pass-123")
    phone.find_element(By.CSS_SELECTOR, ".account-form button").click()
    assert len(phone.find_elements(By.CSS_SELECTOR, "table#top tbody tr")) == 4
    ARTIFACTS.mkdir(exist_ok=True)
    phone.save_screenshot(str(ARTIFACTS / "curator-report-390.png"))
    width = phone.execute_script("return document.documentElement.clientWidth")
    assert width <= PHONE
    assert phone.execute_script("return document.documentElement.scrollWidth") <= width
    for selector in (
        "table#top tbody tr:first-child td.n:last-of-type",
        "table#top tbody tr button.to-eval",
        "table#top tbody tr a.review",
        "table#weak tbody tr button.to-eval",
    ):
        for element in phone.find_elements(By.CSS_SELECTOR, selector):
            box = element.rect
            assert 0 <= box["x"] and box["x"] + box["width"] <= width, (selector, box, width)
    votes = phone.find_element(By.CSS_SELECTOR, "table#top tbody tr:first-child")
    labels = [
        cell.get_attribute("data-label") for cell in votes.find_elements(By.CSS_SELECTOR, "td.n")
    ]
    assert labels == [
        "Searches",
        "Trend",
        "No results",
        "Weak",
        "Useful",
        "Not useful",
    ]  # each number says what it is
