"""Git sources' security rules against a real `git http-backend` server on loopback: an operator's
token goes only over https to the hosts the operator named, and never on git's command line; the
address curl connects to is the one the SSRF guard vetted, however the host is spelled."""

from __future__ import annotations

import base64
import shutil
import subprocess
from pathlib import Path

import pytest

from ingest.connectors.git_cli import Git, check_remote
from ingest.fetch import FetchPolicy
from ingest.pipeline import IngestPipeline
from kb.conf import kb_settings
from kb.embedding.embedders import get_embedder
from kb.models import Document, IngestRun, Source
from tests.gitserver import GitHttpServer, WorkRepo

pytestmark = pytest.mark.django_db
REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real"
INTRO = "docs/ref/rst/introduction.rst"


@pytest.fixture
def served(tmp_path):
    repo = WorkRepo(tmp_path / "served" / "docutils")
    shutil.copytree(REAL / "docutils-docs", repo.path, dirs_exist_ok=True)
    repo.commit("docutils docs")
    with GitHttpServer(tmp_path / "served") as server:
        yield server


def _sync(source) -> IngestRun:
    run = IngestRun.objects.create(source=source)
    IngestPipeline(run, embedder=get_embedder()).execute()
    run.refresh_from_db()
    return run


def _source(namespace, location, **options) -> Source:
    return Source.objects.create(
        namespace=namespace,
        name="docutils",
        kind="git",
        location=location,
        options={"include": [INTRO], **options},
    )


@pytest.mark.parametrize(
    ("value", "says"),
    [
        pytest.param("s3cret-token", "names no host", id="no-host-named"),
        pytest.param(
            "127.0.0.1=s3cret-token",
            "goes only over https to the host(s)",
            id="right-host-plain-http",
        ),
        pytest.param(
            "git.example.com=s3cret-token", "goes only over https to the host(s)", id="other-host"
        ),
    ],
)
@pytest.mark.child_process
def test_a_token_is_not_sent_where_the_operator_did_not_name(
    namespace, git_settings, allow_loopback, served, value, says
):
    git_settings.KB_GIT_TOKENS = {"CORP": value}
    kb_settings.cache_clear()
    run = _sync(_source(namespace, served.url("docutils/.git"), token="CORP"))
    assert run.status == "failed" and run.error.startswith("INGEST_GIT_TOKEN_REFUSED: "), run.error
    assert says in run.error and "KB_GIT_TOKEN_CORP" in run.error and "s3cret" not in run.error
    assert served.requests == []  # not even an anonymous request: the run stops before git starts
    assert Document.objects.count() == 0


@pytest.mark.child_process
def test_a_token_for_another_https_host_is_refused_before_any_request(
    namespace, git_settings, allow_loopback, served
):
    git_settings.KB_GIT_TOKENS = {"CORP": "git.corp.example,docs.corp.example=s3cret-token"}
    kb_settings.cache_clear()
    location = f"https://localhost:{served.port}/docutils/.git"
    run = _sync(_source(namespace, location, token="CORP"))
    assert run.error.startswith("INGEST_GIT_TOKEN_REFUSED: ")
    assert "not sent to 'https://localhost:" in run.error and "corp.example" not in run.error
    assert served.requests == []


@pytest.mark.child_process
def test_a_token_written_without_its_host_is_not_shown_in_the_error(
    namespace, git_settings, allow_loopback, served
):
    git_settings.KB_GIT_TOKENS = {
        "CORP": "c2VjcmV0LXRva2Vu=="
    }  # base64 with padding: '=' but no host
    kb_settings.cache_clear()
    run = _sync(_source(namespace, f"https://localhost:{served.port}/docutils/.git", token="CORP"))
    assert run.error.startswith("INGEST_GIT_TOKEN_REFUSED: ") and "c2VjcmV0" not in run.error


def test_a_token_reaches_git_through_its_environment_not_its_command_line(
    git_settings, allow_loopback, served, tmp_path, monkeypatch
):
    """The token's header is in the fetch's environment (readable by its user only), not in argv
    (readable by every user of the machine through ps and /proc), and the server receives it."""
    launched = []
    real_popen = subprocess.Popen

    def recording_popen(command, **kwargs):
        launched.append((command, kwargs.get("env") or {}))
        return real_popen(command, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", recording_popen)
    git = Git(
        served.url("docutils/.git"),
        tmp_path / "cache",
        timeout=60,
        max_bytes=10**8,
        token="s3cret-token",
    )
    git.fetch("", allowed=FetchPolicy.from_settings().allowed, allow_local=False)
    basic = base64.b64encode(b"x-access-token:s3cret-token").decode()
    assert served.requests and all(
        h.get("authorization") == f"Basic {basic}" for _, h in served.requests
    )
    fetches = [(command, env) for command, env in launched if "fetch" in command]
    assert fetches and all(
        basic not in " ".join(command) and "s3cret" not in " ".join(command)
        for command, _ in launched
    )
    assert fetches[0][1]["GIT_CONFIG_VALUE_0"] == f"Authorization: Basic {basic}"
    assert all(
        "GIT_CONFIG_VALUE_0" not in env for command, env in launched if "fetch" not in command
    )


def test_a_host_with_a_trailing_dot_is_pinned_as_curl_reads_it(allow_loopback):
    _, pins = check_remote(
        "https://localhost.:8443/docs.git",
        allowed=FetchPolicy.from_settings().allowed,
        resolve=True,
        resolver=lambda host, port: ["127.0.0.1"],
    )
    assert pins == ("localhost.:8443:127.0.0.1", "localhost:8443:127.0.0.1")


@pytest.mark.child_process
def test_curl_connects_to_the_vetted_address_of_a_name_written_with_a_trailing_dot(
    git_settings, allow_loopback, served, tmp_path
):
    """A name DNS does not know (`.invalid`), vetted as 127.0.0.1: the fetch succeeds only if curl
    takes the pinned address, and fails if it asks DNS itself (where a rebinding answer would
    win)."""
    location = f"http://kb-pin-test.invalid.:{served.port}/docutils/.git"
    git = Git(location, tmp_path / "cache", timeout=60, max_bytes=10**8)
    head = git.fetch(
        "",
        allowed=FetchPolicy.from_settings().allowed,
        allow_local=False,
        resolver=lambda host, port: ["127.0.0.1"],
    )
    assert len(head) == 40 and served.requests


@pytest.mark.parametrize(
    "pattern",
    [
        pytest.param("javascript:alert(document.cookie)//{path}", id="javascript"),
        pytest.param("data:text/html,<script>x</script>{path}", id="data"),
        pytest.param("//forge.example/{path}", id="no-scheme"),
    ],
)
@pytest.mark.child_process
def test_a_web_url_that_is_not_http_is_refused_before_anything_is_fetched(
    namespace, git_settings, allow_loopback, served, pattern
):
    run = _sync(_source(namespace, served.url("docutils/.git"), web_url=pattern))
    assert run.status == "failed" and run.error.startswith("INGEST_LOCATION_REFUSED: ")
    assert "web_url" in run.error and served.requests == [] and Document.objects.count() == 0
