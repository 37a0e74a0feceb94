"""What the processes write to their logs, read from a real process's stderr: each refused
request once, and a request line carrying a huge query cut to one readable line."""

import os
import subprocess
import sys

from tests.pgserver import REPO, current_database_url

SCRIPT = """
import logging, django
django.setup()
from django.test import Client
Client().get("/api/search?query=x&namespace=nobody")
logging.getLogger("django.server").info('"%s" %s %s', "GET /?q=" + "x" * 20000 + " HTTP/1.1", "200", "9",
                                        extra={"status_code": 200})
"""  # noqa: E501


def test_a_refused_request_is_logged_once_and_a_huge_request_line_is_cut(db):
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "KB_DEBUG": "1",
            "DATABASE_URL": current_database_url(),
        },
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert sum(line == "Unauthorized: /api/search" for line in lines) == 1, done.stderr
    [request] = [line for line in lines if "GET /?q=" in line]
    assert len(request) < 1100 and request.endswith(" characters]"), request[-80:]
    assert int(request.rsplit("[", 1)[1].split()[0]) > 20000  # the whole line's length is said
