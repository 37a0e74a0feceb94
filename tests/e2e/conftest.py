"""The browser the end-to-end page tests drive: Debian's chromium through Debian's chromedriver
(scripts/browser.sh installs both); Selenium is told where they are, so nothing is downloaded."""

import shutil
from pathlib import Path

import pytest
from django.conf import settings

ARTIFACTS = Path(settings.BASE_DIR) / "test-artifacts"


@pytest.fixture
def browser():
    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver_path:
        pytest.fail("chromium and chromedriver are missing: scripts/test installs them (scripts/browser.sh)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--window-size=1100,1400"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.implicitly_wait(5)
    yield driver
    driver.quit()
