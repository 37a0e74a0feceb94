"""The browser the end-to-end page tests drive: Debian's chromium through Debian's chromedriver
(scripts/browser.sh installs both); Selenium is told where they are, so nothing is downloaded."""

from pathlib import Path

import pytest
from django.conf import settings

from tests.e2e.processes import chromium

ARTIFACTS = Path(settings.BASE_DIR) / "test-artifacts"


@pytest.fixture
def browser():
    driver = chromium("1100,1400")
    yield driver
    driver.quit()
