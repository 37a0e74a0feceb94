"""Malformed notebooks and deeply nested reStructuredText or JSON in a folder source: each bad
file is one failed item with a stable code (or, when it can be read, a document), and the run
goes on to the good files."""

from __future__ import annotations

import json

import pytest

from ingest.pipeline import IngestPipeline
from kb.conf import kb_settings
from kb.embedding.embedders import get_embedder
from kb.models import IngestRun, Source

pytestmark = pytest.mark.django_db


@pytest.fixture
def share(settings, tmp_path):
    settings.KB_FOLDER_ROOTS = [str(tmp_path)]
    kb_settings.cache_clear()
    folder = tmp_path / "handbook"
    folder.mkdir()
    yield folder
    kb_settings.cache_clear()


def test_bad_notebooks_and_deep_nesting_fail_alone_and_the_run_goes_on(namespace, share):
    data_list = {
        "cells": [
            {
                "cell_type": "code",
                "source": "print(42)",
                "outputs": [{"output_type": "execute_result", "data": [1]}],
            }
        ]
    }
    (share / "a-data-list.ipynb").write_text(json.dumps(data_list))
    (share / "b-worksheets.ipynb").write_text(json.dumps({"worksheets": ["x"], "metadata": []}))
    (share / "c-deep.ipynb").write_text("[" * 100_000 + "]" * 100_000)
    (share / "d-deep.rst").write_text("Deep\n====\n\n" + "- " * 1500 + "x\n")
    (share / "e-good.md").write_text("# Good\n\nThe one page every reader needs.\n")
    source = Source.objects.create(
        namespace=namespace, name="handbook", kind="folder", location=str(share)
    )
    run = IngestRun.objects.create(source=source)
    IngestPipeline(run, embedder=get_embedder()).execute()
    run.refresh_from_db()
    assert run.status != "failed", run.error
    failed = {item.ref: item.error_code for item in run.items.filter(status="failed")}
    assert failed == {
        "b-worksheets.ipynb": "INGEST_EMPTY_CONTENT",
        "c-deep.ipynb": "INGEST_CORRUPT_FILE",
        "d-deep.rst": "INGEST_CORRUPT_FILE",
    }
    messages = {item.ref: item.error_message for item in run.items.filter(status="failed")}
    assert "nests deeper than 64 levels" in messages["c-deep.ipynb"]
    assert "nests its lists, quotes or directives too deeply" in messages["d-deep.rst"]
    documents = {d.ref: d.content for d in source.documents.all()}
    assert sorted(documents) == ["a-data-list.ipynb", "e-good.md"]
    assert "print(42)" in documents["a-data-list.ipynb"]
