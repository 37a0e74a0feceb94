"""The Python agent of docs/mcp.md (examples/mcp_agent.py), run as a program against the live
product."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kb.models import Chunk

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mcp_agent.py"
pytestmark = pytest.mark.slow


def test_the_documented_python_agent_quotes_and_cites_a_stored_passage(world):
    env = {**os.environ, "KB_MCP_URL": world["url"], "KB_TOKEN": world["a"]}
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "how", "do", "I", "roast", "a", "pumpkin"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    chunk = Chunk.objects.get(pk=int(answer["id"][1:]))
    assert answer["quote"] == chunk.text and chunk.document.title == "Pumpkin soup"
    assert (
        answer["cite"] == f"{world['root']}/documents/{chunk.document_id}/#passage-{chunk.pk}"
    )  # the passage


def test_the_documented_agent_with_a_bad_token_prints_the_servers_refusal_not_a_traceback(world):
    env = {**os.environ, "KB_MCP_URL": world["url"], "KB_TOKEN": "kb_not-a-token"}
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "pumpkin"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "Traceback" not in done.stderr, done.stderr
    refusal = json.loads(done.stderr.strip().splitlines()[-1])
    assert refusal["code"] == "KB_TOKEN_INVALID" and "unknown or revoked" in refusal["message"], (
        refusal
    )
