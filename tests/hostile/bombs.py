"""Small files that cost a parser far more than their size: built here, never stored in the tree."""

from __future__ import annotations

import io
import zipfile

ODS_MIME = "application/vnd.oasis.opendocument.spreadsheet"


def encoded_word_email(size: int = 1024 * 1024) -> bytes:
    """An e-mail whose Subject is `size` bytes of RFC 2047 encoded words: the stdlib's header
    parser takes seconds and gigabytes per hundred kilobytes of it."""
    word = b"=?utf-8?q?a?= "
    return b"From: a@example.com\r\nSubject: " + word * (size // len(word)) + b"\r\n\r\nbody\r\n"


def ods_bomb() -> bytes:
    """An OpenDocument spreadsheet of a few hundred bytes whose one cell, repeated across columns
    and rows, expands to hundreds of millions of characters."""
    text = "a" * 320
    content = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
        'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:spreadsheet>'
        '<table:table table:name="s"><table:table-row table:number-rows-repeated="1000000">'
        "<table:table-cell "
        f'table:number-columns-repeated="1000000"><text:p>{text}</text:p></table:table-cell>'
        "</table:table-row></table:table></office:spreadsheet></office:body></office:document-content>"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr(zipfile.ZipInfo("mimetype"), ODS_MIME)
        archive.writestr("content.xml", content)
    return buffer.getvalue()


def headings_html(size: int = 10 * 1024 * 1024) -> bytes:
    """`size` bytes of `<h2>a</h2>`: a heading per ten bytes."""
    return b"<h2>a</h2>" * (size // 10)


DOCX_MIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def docx_bomb(size: int = 200 * 1024**2) -> bytes:
    """A Word file of about a megabyte whose document part inflates to `size` bytes of tiny
    paragraphs: libxml2 runs out of the child's memory and says only "unknown error"."""
    content_types = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" '
        'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/word/document.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
    )
    relationships = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" Target="word/document.xml" '
        'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument"/></Relationships>'
    )
    paragraph = b"</w:t></w:r></w:p><w:p><w:r><w:t>a"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("[Content_Types].xml", content_types)
        archive.writestr("_rels/.rels", relationships)
        with archive.open("word/document.xml", "w", force_zip64=True) as part:
            part.write(
                b'<?xml version="1.0" encoding="UTF-8"?><w:document '
                b'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>'
            )
            block = paragraph * ((1 << 20) // len(paragraph))
            for _ in range(size // len(block)):
                part.write(block)
            part.write(b"</w:t></w:r></w:p></w:body></w:document>")
    return buffer.getvalue()
