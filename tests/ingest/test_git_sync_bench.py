"""`kb_sync_bench` on the real docutils tree: the resync without a commit costs one fetch and no
chunk, and the commit of three changes yields exactly those three."""

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from kb.conf import kb_settings

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.child_process]  # starts git
DOCS = Path(__file__).resolve().parent.parent / "fixtures" / "real" / "docutils-docs"


def test_the_sync_bench_times_a_noop_and_exactly_three_changes(settings, tmp_path, allow_loopback):
    settings.KB_GIT_CACHE_DIR = str(tmp_path / "git-cache")
    kb_settings.cache_clear()
    out = StringIO()
    call_command(
        "kb_sync_bench", str(DOCS), "--include", "docs/*", "--defer-embedding", "--json", stdout=out
    )
    kb_settings.cache_clear()
    result = json.loads(out.getvalue().splitlines()[-1])
    assert (result["files"], result["documents"]) == (8, 8)
    noop = result["noop"]
    assert (noop["changed"], noop["unchanged"], noop["removed"], noop["chunks_embedded"]) == (
        0,
        8,
        0,
        0,
    )
    # one `git fetch`: the ref advertisement, then (protocol v2) ls-refs and the shallow fetch's
    # negotiation
    assert noop["git_requests"] == 3 == result["three_changes"]["git_requests"]
    changes = result["three_changes"]
    renamed_from, renamed_to = result["renamed"]
    assert changes["outcomes"] == dict(
        sorted(
            {
                result["edited"]: "changed: content changed",
                renamed_to: f"changed: renamed from {renamed_from}",
                result["deleted"]: "removed: gone from the source",
            }.items()
        )
    )
    assert (changes["changed"], changes["removed"], changes["unchanged"]) == (2, 1, 5)
    assert "| no new commit |" in out.getvalue()
