"""Which files are read, as what, and how large they may be: stated once, used by the loaders,
the upload service and the fetcher."""

from __future__ import annotations

from pathlib import PurePosixPath

from ingest.extract import documents as doc
from ingest.extract import ocr

TEXT_FILE_TYPES = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".mdx": "text/markdown",
    ".txt": "text/plain",
    ".text": "text/plain",
    ".rst": "text/plain",
    ".html": "text/html",
    ".htm": "text/html",
    ".xhtml": "application/xhtml+xml",
}
DOCUMENT_FILE_TYPES = {
    ".pdf": doc.PDF,
    ".docx": doc.DOCX,
    ".pptx": doc.PPTX,
    ".xlsx": doc.XLSX,
    ".csv": doc.CSV,
    ".epub": doc.EPUB,
    ".eml": doc.EML,
    ".odt": doc.ODT,
    ".ods": doc.ODS,
    ".odp": doc.ODP,
    ".odg": doc.ODG,
    ".ott": doc.OTT,
    ".ots": doc.OTS,
    ".otp": doc.OTP,
    ".otg": doc.OTG,
    ".png": ocr.PNG,
    ".jpg": ocr.JPEG,
    ".jpeg": ocr.JPEG,
    ".tif": ocr.TIFF,
    ".tiff": ocr.TIFF,
    ".webp": ocr.WEBP,
    ".docm": doc.MACRO_TYPES[0],
    ".xlsm": doc.MACRO_TYPES[1],
    ".pptm": doc.MACRO_TYPES[2],
}
FILE_TYPES = {**TEXT_FILE_TYPES, **DOCUMENT_FILE_TYPES}
ARCHIVE_SUFFIXES = (".zip",)
# what a refusal names as read: every suffix above but the macro-enabled ones, which are refused
READ_SUFFIXES = tuple(
    sorted(suffix for suffix, media_type in FILE_TYPES.items() if media_type not in doc.MACRO_TYPES)
)


def types_read() -> str:
    """The file types that are read, for a refusal's message: ".csv, .docx, ... or a .zip of
    them"."""
    return f"{', '.join(READ_SUFFIXES)}, or a {' or '.join(ARCHIVE_SUFFIXES)} of them"


def media_type_for(name: str) -> str:
    """The media type a file name says it has ("" for a name whose type is not read)."""
    return FILE_TYPES.get(PurePosixPath(name).suffix.lower(), "")


def is_document_type(media_type: str) -> bool:
    return media_type in doc.DOCUMENT_TYPES


def max_bytes_for(media_type: str, *, text_limit: int, document_limit: int) -> int:
    """Documents (PDF, Office, EPUB) are routinely larger than web pages and text."""
    return document_limit if is_document_type(media_type) else text_limit
