"""A real PDF manual through the real pipeline (extraction in the parser child, chunking,
embedding, storage) and search: no stored passage carries a running head, and the function the
page names is found by its name (issue #57 point 5, #63 item 4)."""

import re
from pathlib import Path

import pytest

from ingest.extract import documents as doc
from ingest.loaders import LoadedItem
from ingest.pipeline import IngestPipeline
from kb.models import Chunk, IngestRun, Namespace, Source
from retrieval.service import search

pytestmark = [pytest.mark.django_db, pytest.mark.child_process]  # starts git or the parser child

MANUAL = Path(__file__).resolve().parent.parent / "fixtures" / "real" / "documents" / "libtasn1.pdf"
RUNNING_HEAD = re.compile(r"^(?:Chapter \d+|Appendix [A-Z]): .{3,60} \d+$", re.MULTILINE)


def test_real_manual_passages_carry_no_running_head_and_name_functions_whole():
    namespace = Namespace.objects.create(slug="libtasn1")
    source = Source.objects.create(namespace=namespace, name="manuals", kind="text", text="x")
    run = IngestPipeline(IngestRun.objects.create(source=source)).execute(
        [
            LoadedItem(
                ref="libtasn1.pdf",
                body=MANUAL.read_bytes(),
                media_type=doc.PDF,
                path="libtasn1.pdf",
            )
        ]
    )
    assert run.status == "succeeded", run.error
    chunks = list(Chunk.objects.filter(document__namespace=namespace))
    assert len(chunks) > 20
    assert [c.text[:80] for c in chunks if RUNNING_HEAD.search(c.text)] == []
    assert not any("asn1 decode simple der" in c.text for c in chunks)
    hits = search("asn1_decode_simple_der", "libtasn1", limit=3, log=False).hits
    described = [h for h in hits if "Decodes a simple DER encoded type" in h.text]
    assert described and described[0].page_start <= 25 <= described[0].page_end, [
        h.text[:120] for h in hits
    ]
