"""An e-mail's parts that are not read are counted in its line of the run report: one body part is
read and attachments are named, and nothing else of a message may vanish without a word."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from ingest.extract import extract
from ingest.service import start_ingest
from ingest.uploads import add_files
from kb.models import Document, Source

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real" / "documents"
EML = "message/rfc822"


def many_parts(count: int) -> bytes:
    """A multipart/mixed e-mail of `count` inline plain-text parts, each saying its number."""
    head = (
        b"From: a@example.com\r\nSubject: Many parts\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: multipart/mixed; boundary=b\r\n\r\n"
    )
    part = b"--b\r\nContent-Type: text/plain\r\n\r\nPart number %d of the message.\r\n"
    return head + b"".join(part % n for n in range(count)) + b"--b--\r\n"


def alternative_with_attachment() -> bytes:
    return (
        b"From: a@example.com\r\nSubject: Plain\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: multipart/mixed; boundary=m\r\n\r\n"
        b"--m\r\nContent-Type: multipart/alternative; boundary=a\r\n\r\n"
        b"--a\r\nContent-Type: text/plain\r\n\r\nHello in plain text.\r\n"
        b"--a\r\nContent-Type: text/html\r\n\r\n<p>Hello in HTML.</p>\r\n--a--\r\n"
        b"--m\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; "
        b'filename="report.pdf"\r\n'
        b"Content-Transfer-Encoding: base64\r\n\r\nJVBERi0=\r\n--m--\r\n"
    )


@pytest.mark.parametrize(
    "body, left_out",
    [
        pytest.param(alternative_with_attachment(), "", id="alternative-and-named-attachment"),
        pytest.param(many_parts(3), "2 of 3 e-mail parts not read", id="three-inline-parts"),
        pytest.param(
            (REAL / "msg_02.eml").read_bytes(), "7 of 8 e-mail parts not read", id="real-digest"
        ),
    ],
)
def test_the_extractor_counts_the_parts_it_does_not_read(body, left_out):
    """Another version of the body (multipart/alternative) and an attachment named in the text
    are not lost; inline parts after the body and a digest's messages are."""
    extracted = extract(body, EML)
    assert extracted.left_out == left_out


def test_an_attachment_is_still_named_in_the_text():
    assert "Attachments: report.pdf" in extract(alternative_with_attachment(), EML).content


@pytest.mark.django_db
@pytest.mark.child_process
def test_an_email_of_thousands_of_parts_says_in_its_report_line_how_many_were_dropped(
    namespace, settings, tmp_path
):
    """Through the real pipeline and its parser child: the item is stored with its first part, and
    its line in the run report says the other 4,999 were not read."""
    from kb.conf import kb_settings

    settings.MEDIA_ROOT = str(tmp_path)
    kb_settings.cache_clear()
    source = Source.objects.create(namespace=namespace, name="mail", kind="file")
    add_files(
        source,
        [("many.eml", io.BytesIO(many_parts(5_000))), ("one.eml", io.BytesIO(many_parts(1)))],
    )
    run = start_ingest(source, sync=True)
    items = {item.ref: item for item in run.items.all()}
    assert run.status == "succeeded", [
        (i.ref, i.error_code, i.error_message) for i in items.values()
    ]
    assert items["many.eml"].status == "changed"
    assert "4,999 of 5,000 e-mail parts not read" in items["many.eml"].reason, items[
        "many.eml"
    ].reason
    assert "not read" not in items["one.eml"].reason
    assert (
        "Part number 0 of the message."
        in Document.objects.get(source=source, ref="many.eml").content
    )
    kb_settings.cache_clear()
