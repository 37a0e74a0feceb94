"""Single sign-on in a real headless Chromium against the product started as `scripts/run` starts
it (`kb_run`, its own embedded database, web server and worker), a real OpenID Connect provider
and a real OpenLDAP, each its own process on loopback. A reader signs in through the provider and
through the directory, sees the collections their groups give, and after a group changes at the
provider or in the directory sees the new ones at the next sign-in."""

from __future__ import annotations

import json
import re
import signal
import sys
import urllib.parse

import pytest

from tests.e2e.processes import (
    REPO,
    Process,
    chromium,
    free_port,
    manage_shell,
    product_env,
    wait_for,
)
from tests.identity.servers import OidcProvider, Slapd

pytestmark = [pytest.mark.slow, pytest.mark.browser]
ARTIFACTS = REPO / "test-artifacts"

SETUP = """
from kb.models import GroupRule, Namespace, Source
from ingest.service import ingest_texts
for slug, title, word in (("team-a", "Team A handbook", "zebrafinch"), ("team-b", "Team B handbook", "quillwort"),
                          ("team-c", "Team C handbook", "marshwren")):
    namespace = Namespace.objects.create(slug=slug, title=title)
    source = Source.objects.create(namespace=namespace, name=title, kind="text", text="x")
    run = ingest_texts(source, [(f"{slug}.md", f"{title}: the {word} ledger",
                                 f"The {word} ledger of {title} counts every {word} on the marsh each spring.")])
    assert run.status == "succeeded", run.error
GroupRule.objects.create(provider="oidc", group="staff", namespace=Namespace.objects.get(slug="team-a"))
GroupRule.objects.create(provider="oidc", group="editors", namespace=Namespace.objects.get(slug="team-b"),
                         role="curator")
GroupRule.objects.create(provider="ldap", group="readers", namespace=Namespace.objects.get(slug="team-c"))
GroupRule.objects.create(provider="ldap", group="staff", namespace=Namespace.objects.get(slug="team-a"))
print("ready")
"""  # noqa: E501


def _collections(browser) -> set[str]:
    from selenium.webdriver.common.by import By

    options = browser.find_elements(By.CSS_SELECTOR, "select#namespace option")
    return {option.get_attribute("value") for option in options} - {""}


def _search(browser, base: str, namespace: str, query: str) -> list[str]:
    from selenium.webdriver.common.by import By

    browser.get(f"{base}/?" + urllib.parse.urlencode({"q": query, "namespace": namespace}))
    return [h.text for h in browser.find_elements(By.CSS_SELECTOR, "ol.results > li.result h3")]


def _sign_out(browser, base: str) -> None:
    from selenium.webdriver.common.by import By

    browser.get(f"{base}/")
    browser.find_element(By.CSS_SELECTOR, "form[action='/accounts/logout/'] button").click()
    wait_for(lambda: browser.find_elements(By.LINK_TEXT, "Sign in"), 30, "signing out")


def _oidc_sign_in(browser, base: str, username: str, password: str) -> None:
    from selenium.webdriver.common.by import By

    browser.get(f"{base}/accounts/login/?next=/")
    browser.find_element(By.ID, "sso-sign-in").click()
    if browser.find_elements(
        By.ID, "op-username"
    ):  # the provider asks unless its own session lives
        browser.find_element(By.ID, "op-username").send_keys(username)
        browser.find_element(By.ID, "op-password").send_keys(password)
        browser.find_element(By.ID, "op-submit").click()
    wait_for(
        lambda: browser.current_url.startswith(base) and "/accounts/" not in browser.current_url,
        60,
        "the way back from the provider",
    )
    assert browser.find_element(By.CSS_SELECTOR, "span.who").text == username


def _ldap_sign_in(browser, base: str, username: str, password: str) -> None:
    from selenium.webdriver.common.by import By

    browser.get(f"{base}/accounts/login/?next=/")
    browser.find_element(By.ID, "id_username").send_keys(username)
    browser.find_element(By.ID, "id_password").send_keys(password)
    browser.find_element(By.CSS_SELECTOR, "form.account-form button[type=submit]").click()
    wait_for(lambda: "/accounts/login/" not in browser.current_url, 30, "the directory sign-in")
    assert browser.find_element(By.CSS_SELECTOR, "span.who").text == username


@pytest.mark.timeout(900)
def test_a_reader_signs_in_through_the_provider_and_the_directory_and_group_changes_count(tmp_path):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    directory = Slapd(tmp_path / "slapd").start()
    provider = OidcProvider(tmp_path / "provider", base).start()
    env = product_env(
        KB_DATA_DIR=str(tmp_path / "kb-data"), **directory.settings(), **provider.settings()
    )
    product = Process(
        [sys.executable, "manage.py", "kb_run", "--no-demo", "--port", str(port)],
        env,
        tmp_path / "kb_run.log",
    )
    browser = None
    try:
        product.start()
        wait_for(
            lambda: "Knowledge base running at" in product.output() or not product.alive(),
            300,
            "kb_run's banner",
        )
        assert product.alive(), product.output()[-4000:]
        assert manage_shell(env, SETUP, timeout=300) == "ready"
        provider.person("alice", "alice-pw-1", "staff")
        bob = directory.person("bob", "bob-pw-1")
        directory.group("readers", bob)

        browser = chromium()
        browser.get(f"{base}/accounts/login/")
        ARTIFACTS.mkdir(exist_ok=True)
        assert browser.save_screenshot(str(ARTIFACTS / "sso-sign-in.png"))
        _oidc_sign_in(browser, base, "alice", "alice-pw-1")
        assert _collections(browser) == {"team-a"}
        assert any(
            "zebrafinch" in title for title in _search(browser, base, "team-a", "zebrafinch ledger")
        )
        assert (
            _search(browser, base, "team-b", "quillwort ledger") == []
        )  # private, or none: nothing shown
        _sign_out(browser, base)

        provider.person(
            "alice", "alice-pw-1", "editors"
        )  # at the provider: out of staff, into editors
        _oidc_sign_in(browser, base, "alice", "alice-pw-1")
        assert _collections(browser) == {"team-b"}
        assert any(
            "quillwort" in title for title in _search(browser, base, "team-b", "quillwort ledger")
        )
        assert _search(browser, base, "team-a", "zebrafinch ledger") == []
        _sign_out(browser, base)

        _ldap_sign_in(browser, base, "bob", "bob-pw-1")
        assert _collections(browser) == {"team-c"}
        _sign_out(browser, base)
        directory.group("staff", bob)  # in the directory: bob joins staff
        _ldap_sign_in(browser, base, "bob", "bob-pw-1")
        assert _collections(browser) == {"team-a", "team-c"}
        assert any(
            "zebrafinch" in title for title in _search(browser, base, "team-a", "zebrafinch ledger")
        )

        log = json.loads(
            manage_shell(
                env,
                "import json; from kb.models import SignIn; print(json.dumps(list("
                "SignIn.objects.order_by('at').values_list('method', 'username', "
                "'succeeded'))))",
            )
        )
        assert log == [
            ["oidc", "alice", True],
            ["oidc", "alice", True],
            ["ldap", "bob", True],
            ["ldap", "bob", True],
        ], log
    finally:
        if browser is not None:
            browser.quit()
        code = product.stop(signal.SIGINT)
        provider.stop()
        directory.stop()
    assert code == 0, product.output()[-4000:]
    output = product.output()
    assert "Traceback" not in output, output[-4000:]
    for secret in (provider.client_secret, directory.password):
        assert not re.search(re.escape(secret), output), "a secret reached the product's log"
