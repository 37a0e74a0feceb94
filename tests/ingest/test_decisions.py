"""The pipeline's decision per document: skip, re-embed, extract or write, and the reason shown."""

from ingest.decisions import (
    PIPELINE_VERSION,
    Action,
    Decision,
    StoredDocument,
    decide,
    document_byte_key,
    stored_extraction,
    text_hash,
)

MODEL = "all-MiniLM-L6-v2"
BODY = b"<h1>Install</h1><p>Run the installer.</p>"


def stored(**changes) -> StoredDocument:
    fields = dict(
        doc_id=1,
        content_hash=text_hash("# Install\n\nRun the installer."),
        embedding_model=MODEL,
        title="Install",
        content="# Install\n\nRun the installer.",
        media_type="text/markdown",
        metadata={"pipeline": PIPELINE_VERSION, "byte_key": document_byte_key(BODY)},
    )
    return StoredDocument(**{**fields, **changes})


def test_before_extraction_the_same_bytes_are_skipped_unless_the_chunks_are_out_of_date():
    key = document_byte_key(BODY)
    assert decide(stored(), MODEL, byte_key=key) == Decision(Action.SKIP, "same bytes")
    assert decide(stored(), MODEL, byte_key=document_byte_key(BODY + b" ")) == Decision(
        Action.EXTRACT, ""
    )
    assert decide(None, MODEL, byte_key=key) == Decision(Action.EXTRACT, "")
    # same bytes, but another model or an older pipeline made the chunks: read them again
    assert decide(stored(), "other-model", byte_key=key).action == Action.EXTRACT
    old = stored(metadata={"pipeline": "1", "byte_key": key})
    assert decide(old, MODEL, byte_key=key).action == Action.EXTRACT


def test_not_modified_costs_nothing_unless_the_stored_text_must_be_embedded_again():
    assert decide(stored(), MODEL, not_modified=True) == Decision(Action.SKIP, "not modified")
    assert decide(stored(), "other-model", not_modified=True) == Decision(
        Action.REEMBED, "model changed"
    )
    old = stored(metadata={"pipeline": "1"})
    assert decide(old, MODEL, not_modified=True) == Decision(Action.REEMBED, "pipeline upgraded")


def test_after_extraction_the_text_hash_decides():
    same = stored().content_hash
    assert decide(stored(), MODEL, content_hash=same) == Decision(Action.SKIP, "same content hash")
    assert decide(stored(), MODEL, content_hash=text_hash("new text")) == Decision(
        Action.WRITE, "content changed"
    )
    assert decide(None, MODEL, content_hash=same) == Decision(Action.WRITE, "new")
    assert decide(stored(), "other-model", content_hash=same) == Decision(
        Action.WRITE, "model changed"
    )


def test_the_byte_key_changes_with_the_pipeline_version_and_stored_pages_survive():
    assert document_byte_key(BODY) != document_byte_key(BODY + b"!")
    assert len(document_byte_key(b"")) == 64
    pdf = stored(
        media_type="text/markdown", metadata={"pages": [[0, 1], [120, 2]], "page_unit": "page"}
    )
    extracted = stored_extraction(pdf)
    assert extracted.pages == ((0, 1), (120, 2)) and extracted.page_unit == "page"
    assert extracted.content == pdf.content and not extracted.site_anchors
