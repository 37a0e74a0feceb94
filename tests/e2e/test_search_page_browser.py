"""The search page in a real headless Chromium: search, open an explanation panel, read it.

Debian's chromium is driven through Debian's chromedriver (scripts/browser.sh installs both);
Selenium is told where they are, so nothing is downloaded. The screenshot is kept as a test
artefact in test-artifacts/.
"""

import pytest

from kb.models import Namespace
from tests.corpus import CORPUS, ingest
from tests.e2e.conftest import ARTIFACTS
from tests.retrieval.test_grouping_and_fusion import guide


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_search_open_explanation_panel_and_screenshot(live_server, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select, WebDriverWait

    namespace, _ = ingest("demo", CORPUS)
    guide(namespace)
    Namespace.objects.filter(pk=namespace.pk).update(is_public=True)

    browser.get(f"{live_server.url}/")
    box = browser.find_element(By.ID, "q")
    box.send_keys("Qwen 3.8 release notes", Keys.ENTER)

    results = browser.find_elements(By.CSS_SELECTOR, "ol.results > li.result")
    assert results, browser.page_source[:2000]
    first = results[0]
    assert "Qwen 3.8" in first.find_element(By.CSS_SELECTOR, "h3").text

    panel = first.find_element(By.CSS_SELECTOR, "details.why")
    assert panel.get_attribute("open") is None
    first.find_element(By.CSS_SELECTOR, "details.why > summary").send_keys(Keys.ENTER)  # keyboard
    assert panel.get_attribute("open") is not None

    body = panel.find_element(By.CSS_SELECTOR, ".panel")
    assert body.is_displayed()
    text = body.text
    for expected in ("Channels", "Score", "kept:"):
        assert expected in text
    labels = [el.text for el in body.find_elements(By.CSS_SELECTOR, ".bars .label")]
    assert any(label.startswith("versioned name #") for label in labels), labels
    assert "base" in labels and "RRF bonus" in labels and "MMR penalty" in labels, labels
    widths = [el.size["width"] for el in body.find_elements(By.CSS_SELECTOR, ".bars .bar")]
    assert any(w > 0 for w in widths), "bars are drawn with a visible width"

    # the ranking machinery is folded away for readers and one click opens it
    ranking = browser.find_element(By.CSS_SELECTOR, "details.ranking")
    fusion = ranking.find_element(By.CSS_SELECTOR, "p.fusion")
    assert ranking.get_attribute("open") is None and not fusion.is_displayed()
    ranking.find_element(By.CSS_SELECTOR, "summary").click()
    assert fusion.is_displayed()
    assert fusion.text.startswith("Meaning weighs 0.50 and words 0.50"), fusion.text

    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "search-explanation-panel.png"
    browser.execute_script("arguments[0].scrollIntoView({block: 'start'})", first)
    assert browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000

    # one result per document by default; "every passage" lists the guide's sections one by one
    browser.get(f"{live_server.url}/?q=growing+pumpkins+watering+soil+harvest&namespace=demo")
    titles = [el.text for el in browser.find_elements(By.CSS_SELECTOR, "ol.results > li.result h3")]
    assert titles.count("Pumpkin growing guide") == 1, titles
    guide_result = next(
        li
        for li in browser.find_elements(By.CSS_SELECTOR, "ol.results > li.result")
        if li.find_element(By.CSS_SELECTOR, "h3").text == "Pumpkin growing guide"
    )
    sections = guide_result.find_elements(By.CSS_SELECTOR, "ul.sections a")
    assert sections and all("#" in a.get_attribute("href") for a in sections)
    Select(browser.find_element(By.ID, "group")).select_by_value("chunk")
    browser.find_element(By.CSS_SELECTOR, "form.search button").click()
    WebDriverWait(browser, 10).until(lambda driver: "group=chunk" in driver.current_url)
    passages = [
        el.text for el in browser.find_elements(By.CSS_SELECTOR, "ol.results > li.result h3")
    ]
    assert passages.count("Pumpkin growing guide") >= 2, passages
