"""The product's own processes, started as a user starts them, and ways to drive them from
outside: HTTP, a signed-in admin session, and a shell process reading the same database."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest

from tests.pgserver import REPO, free_port

TIMINGS = REPO / "test-artifacts" / "process-timings.json"


def product_env(**extra: str) -> dict[str, str]:
    """The environment scripts/run gives the product (scripts/venv.sh), plus `extra`."""
    env = {
        key: value for key, value in os.environ.items() if not key.startswith(("KB_", "DJANGO_"))
    }
    env.pop("DATABASE_URL", None)
    env.update(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        PYTHONUNBUFFERED="1",
        KB_MODEL_CACHE_DIR=str(REPO / ".kb" / "models"),
    )
    env.update(extra)
    return env


def record_timing(name: str, seconds: float) -> None:
    """Keep a measured bound where the closing note and the docs can read it."""
    TIMINGS.parent.mkdir(exist_ok=True)
    timings = json.loads(TIMINGS.read_text()) if TIMINGS.exists() else {}
    timings[name] = round(seconds, 1)
    TIMINGS.write_text(json.dumps(timings, indent=2, sort_keys=True))


def wait_for(condition, seconds: float, what: str, every: float = 0.5):
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds:.0f} s waiting for {what}")
        time.sleep(every)


@dataclass
class Process:
    """A started command in its own process group, with its output in a log file."""

    args: list[str]
    env: dict[str, str]
    log: Path
    popen: subprocess.Popen | None = None

    def start(self) -> Process:
        out = open(self.log, "wb")
        self.popen = subprocess.Popen(
            self.args,
            cwd=REPO,
            env=self.env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return self

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        """Signal the whole group (what Ctrl-C or a service manager does), then make sure."""
        if self.popen is None:
            return 0
        family = _descendants(self.popen.pid)
        if self.popen.poll() is None:
            try:
                os.killpg(self.popen.pid, sig)
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait(timeout=30)
            except ProcessLookupError:
                pass
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)  # anything the group left behind
        except ProcessLookupError:
            pass
        for leftover in family:  # children that started sessions of their own (kb_run's)
            try:
                leftover.kill()
            except psutil.NoSuchProcess:
                pass
        return self.popen.returncode


def _descendants(pid: int) -> list:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


@dataclass
class Http:
    """A client of the running product: JSON calls, and an admin session once signed in."""

    base: str
    opener: urllib.request.OpenerDirector = field(
        default_factory=lambda: urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
    )

    def get(self, path: str, headers: dict | None = None, timeout: float = 60) -> tuple[int, bytes]:
        request = urllib.request.Request(self.base + path, headers=headers or {})
        try:
            with self.opener.open(request, timeout=timeout) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def json(self, path: str, headers: dict | None = None) -> tuple[int, dict]:
        status, body = self.get(path, headers)
        return status, json.loads(body or b"null")

    def post(self, path: str, body: bytes, headers: dict, timeout: float = 60) -> tuple[int, bytes]:
        request = urllib.request.Request(
            self.base + path, data=body, headers=headers, method="POST"
        )
        try:
            with self.opener.open(request, timeout=timeout) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def sign_in(self, username: str, password: str) -> None:
        """Sign in to the admin as a person does: the login form with its CSRF token."""
        _, page = self.get("/admin/login/")
        token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1).decode()
        form = urllib.parse.urlencode(
            {
                "csrfmiddlewaretoken": token,
                "username": username,
                "password": password,
                "next": "/admin/",
            }
        ).encode()
        status, body = self.post(
            "/admin/login/",
            form,
            {
                "Content-Type": "application/x-www-form-urlencoded",
                "Referer": self.base + "/admin/login/",
            },
        )
        assert status == 200 and b"Log out" in body, body[:2000]

    def healthy(self) -> bool:
        try:
            return self.get("/healthz", timeout=5)[0] in (200, 503)
        except OSError:
            return False


def multipart(field_name: str, filename: str, content: bytes, media_type: str) -> tuple[bytes, str]:
    boundary = "kb-e2e-boundary-7d1f"
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="{field_name}"; '
            f'filename="{filename}"\r\n'
            f"Content-Type: {media_type}\r\n\r\n"
        ).encode()
        + content
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return body, f"multipart/form-data; boundary={boundary}"


def manage_shell(env: dict[str, str], code: str, timeout: float = 120) -> str:
    """Run Python in a `manage.py shell` of its own: another process on the same database."""
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.strip().splitlines()
    return lines[-1] if lines else ""


def chromium(window_size: str = "1200,1400"):
    """Headless Debian Chromium through Debian's chromedriver (scripts/browser.sh installs both);
    Selenium is told where they are, so nothing is downloaded."""
    chromium_path, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium_path or not driver_path:
        pytest.fail(
            "chromium and chromedriver are missing: scripts/test installs them (scripts/browser.sh)"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium_path
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--window-size={window_size}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.implicitly_wait(5)
    return driver


__all__ = [
    "REPO",
    "Http",
    "Process",
    "chromium",
    "free_port",
    "manage_shell",
    "multipart",
    "product_env",
    "record_timing",
    "wait_for",
]
