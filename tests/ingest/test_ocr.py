"""Scans read by Tesseract (ingest/extract/ocr.py), through the budgeted parser child and the
real pipeline. The scans are made here from a real PDF's pages (asymptote-CAD.pdf, see
tests/fixtures/real/README.md) rendered to images, so the PDF's own text layer is the truth."""

from __future__ import annotations

import collections
import io
import re
import shutil
import struct
import time
import zlib
from pathlib import Path

import pytest

from ingest.errors import NoTextLayer, ParserBudgetExceeded
from ingest.extract import documents as doc
from ingest.extract import ocr
from ingest.extract.isolated import ParserBudget, extract_isolated
from ingest.extract.ocr import OcrOptions, page_ranges

pdfium = pytest.importorskip("pypdfium2")
REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "documents"
CAD = REAL / "asymptote-CAD.pdf"
needs_tesseract = pytest.mark.skipif(
    shutil.which("tesseract") is None,
    reason="Tesseract is installed by scripts/test (scripts/ocr.sh)",
)


def _page_image(index: int, dpi: int = 300, crop: float = 1.0):
    image = pdfium.PdfDocument(CAD)[index].render(scale=dpi / 72, grayscale=True).to_pil()
    return image.crop((0, 0, image.width, int(image.height * crop))) if crop < 1 else image


def _text_layer(index: int) -> str:
    return pdfium.PdfDocument(CAD)[index].get_textpage().get_text_range()


def _words(text: str) -> collections.Counter:
    return collections.Counter(re.findall(r"[a-z0-9]+", text.lower()))


def _recall(truth: str, got: str) -> float:
    want, have = _words(truth), _words(got)
    return sum(min(n, have[w]) for w, n in want.items()) / sum(want.values())


def _scanned_pdf(images) -> bytes:
    out = io.BytesIO()
    images[0].save(out, format="PDF", resolution=300, save_all=True, append_images=images[1:])
    return out.getvalue()


def _mixed_pdf(text_pages=(0,), scan_page=1) -> bytes:
    """The original's `text_pages` with their text layer, then a scan of its `scan_page`."""
    pypdf = pytest.importorskip("pypdf")
    writer = pypdf.PdfWriter()
    for index in text_pages:
        writer.add_page(pypdf.PdfReader(CAD).pages[index])
    writer.add_page(pypdf.PdfReader(io.BytesIO(_scanned_pdf([_page_image(scan_page)]))).pages[0])
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _page_text(extracted, number: int) -> str:
    starts = dict((n, o) for o, n in extracted.pages)
    ends = sorted(o for o, _ in extracted.pages if o > starts[number]) + [len(extracted.content)]
    return extracted.content[starts[number] : ends[0]]


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG that claims `width` x `height` pixels: a few hundred bytes, gigabytes decoded."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b"\x00" * 4096))
        + chunk(b"IEND", b"")
    )


# --- pure
# ------------------------------------------------------------------------------------------
def test_page_ranges_and_the_report_reason():
    assert page_ranges([1, 2, 3, 5, 7, 8]) == "1-3, 5, 7-8"
    extracted = doc.Extracted(
        title="t", content="x", media_type="text/markdown", ocr_pages=((2, 90.0), (3, 80.0))
    )
    assert ocr.ocr_reason("new", extracted) == "new; OCR: pages 2-3, mean confidence 85%"
    assert (
        ocr.ocr_reason("new", doc.Extracted(title="t", content="x", media_type="text/plain"))
        == "new"
    )


def test_words_are_joined_in_tesseract_reading_order():
    data = {
        "text": ["", "Two", "columns", "left", "right"],
        "block_num": [1, 1, 1, 1, 2],
        "par_num": [1, 1, 1, 1, 1],
        "line_num": [1, 1, 1, 2, 1],
        "conf": [-1, 90, 80, 70, 60],
    }
    page = ocr.page_from_words(data)
    assert page.text == "Two columns\nleft\n\nright" and page.confidence == 75.0


# --- through the parser child
# ----------------------------------------------------------------------
@needs_tesseract
@pytest.mark.child_process
def test_scanned_pdf_is_read_with_its_pages_kept():
    extracted = extract_isolated(
        _scanned_pdf([_page_image(0), _page_image(1)]), doc.PDF, ocr=OcrOptions()
    )
    assert extracted.page_unit == "page" and [n for _, n in extracted.pages] == [1, 2]
    assert [n for n, _ in extracted.ocr_pages] == [1, 2] and all(
        c > 80 for _, c in extracted.ocr_pages
    )
    assert _recall(_text_layer(1), _page_text(extracted, 2)) > 0.95
    assert "To use the capabilities of the package" in _page_text(extracted, 2)


@needs_tesseract
@pytest.mark.child_process
def test_mixed_pdf_ocrs_only_the_page_without_a_text_layer():
    extracted = extract_isolated(_mixed_pdf(), doc.PDF, ocr=OcrOptions())
    assert [n for n, _ in extracted.ocr_pages] == [2]
    assert "Mark Henning" in _page_text(extracted, 1)  # from the text layer
    assert _recall(_text_layer(1), _page_text(extracted, 2)) > 0.95


@needs_tesseract
@pytest.mark.child_process
def test_multipage_tiff_frames_are_pages():
    frames = [_page_image(1, crop=0.3), _page_image(0, crop=0.3)]
    out = io.BytesIO()
    frames[0].save(
        out, format="TIFF", save_all=True, append_images=frames[1:], compression="tiff_lzw"
    )
    extracted = extract_isolated(
        out.getvalue(), ocr.TIFF, fallback_title="scan.tiff", ocr=OcrOptions()
    )
    assert [n for _, n in extracted.pages] == [1, 2] and [n for n, _ in extracted.ocr_pages] == [
        1,
        2,
    ]
    assert "capabilities" in _page_text(extracted, 1) and "Henning" in _page_text(extracted, 2)
    assert extracted.title == "scan.tiff"


@needs_tesseract
@pytest.mark.child_process
def test_png_is_read():
    out = io.BytesIO()
    _page_image(1, crop=0.4).save(out, format="PNG")
    extracted = extract_isolated(out.getvalue(), ocr.PNG, ocr=OcrOptions())
    assert "To use the capabilities of the package" in extracted.content
    assert extracted.ocr_pages[0][0] == 1


@needs_tesseract
@pytest.mark.child_process
def test_a_page_with_no_text_stays_an_item_error():
    from PIL import Image

    blank = Image.new("L", (1240, 1754), 255)
    out = io.BytesIO()
    blank.save(out, format="PNG")
    with pytest.raises(NoTextLayer, match="OCR found no text"):
        extract_isolated(out.getvalue(), ocr.PNG, ocr=OcrOptions())
    with pytest.raises(NoTextLayer, match="OCR found no text") as caught:
        extract_isolated(_scanned_pdf([blank]), doc.PDF, ocr=OcrOptions())
    assert caught.value.code == "INGEST_NO_TEXT_LAYER"


@pytest.mark.child_process
def test_a_decompression_bomb_is_refused_within_its_budget():
    bomb = _png_header_only(100_000, 100_000)  # 10 G pixels in 200 bytes
    started = time.monotonic()
    with pytest.raises(ParserBudgetExceeded, match="pixels"):
        extract_isolated(
            bomb,
            ocr.PNG,
            ocr=OcrOptions(),
            budget=ParserBudget(cpu_seconds=5, memory_bytes=512 * 1024**2),
        )
    assert time.monotonic() - started < 10


@pytest.mark.child_process
def test_without_tesseract_a_scan_is_no_text_layer_with_advice(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")  # the child runs sys.executable by its full path
    scan = _scanned_pdf([_page_image(1, dpi=72)])
    with pytest.raises(NoTextLayer, match="tesseract-ocr") as caught:
        extract_isolated(scan, doc.PDF, ocr=OcrOptions())
    assert caught.value.code == "INGEST_NO_TEXT_LAYER"
    with pytest.raises(NoTextLayer, match="tesseract-ocr"):
        extract_isolated(b"\x89PNG\r\n\x1a\n", ocr.PNG, ocr=OcrOptions())


@needs_tesseract
@pytest.mark.child_process
def test_a_missing_language_is_named_with_its_package():
    with pytest.raises(NoTextLayer, match="tesseract-ocr-klingon"):
        extract_isolated(
            _scanned_pdf([_page_image(1, dpi=72)]), doc.PDF, ocr=OcrOptions(languages=("klingon",))
        )


# --- through the real pipeline and search ---------------------------------------------------------
@pytest.fixture
def media(settings, tmp_path):
    from kb.conf import kb_settings

    settings.MEDIA_ROOT = str(tmp_path)
    kb_settings.cache_clear()
    yield tmp_path
    kb_settings.cache_clear()


@needs_tesseract
@pytest.mark.django_db
@pytest.mark.child_process
def test_a_sentence_from_a_scanned_page_is_found_at_its_page(client, namespace, media):
    from ingest.service import start_ingest
    from ingest.uploads import add_files
    from kb.models import Document, Namespace, Source
    from retrieval.service import search

    Namespace.objects.filter(pk=namespace.pk).update(is_public=True)
    source = Source.objects.create(namespace=namespace, name="scans", kind="file")
    add_files(source, [("mixed.pdf", io.BytesIO(_mixed_pdf(text_pages=(3, 4), scan_page=1)))])
    run = start_ingest(source, sync=True)
    assert run.status == "succeeded"
    item = run.items.get(ref="mixed.pdf")
    assert "OCR: page 3, mean confidence" in item.reason  # the run report says which pages
    pdf = Document.objects.get(source=source)
    assert pdf.metadata["ocr_pages"] == [3]

    sentence = "All functions are encapsulated in the structure sCAD"
    hits = search(sentence, namespace.slug, limit=5, log=False).hits
    assert hits[0].document_id == pdf.pk and hits[0].page_start == 3 and hits[0].scanned
    assert hits[0].citation_url == f"/documents/{pdf.pk}/original#page=3"
    every = search("pen group measurement package", namespace.slug, limit=50, log=False).hits
    assert all(
        h.scanned == (h.page_start <= 3 <= h.page_end) for h in every
    )  # a passage touching page 3
    assert any(not h.scanned for h in every)

    api = client.get("/api/search", {"query": sentence, "namespace": namespace.slug}).json()[
        "results"
    ]
    assert api[0]["scanned"] is True and api[0]["citation_url"].endswith("#page=3")
    page = client.get("/", {"q": sentence, "namespace": namespace.slug}).content.decode()
    assert "text recognised from a scan" in page


@needs_tesseract
@pytest.mark.child_process
def test_a_page_over_its_own_budget_is_stopped_at_that_budget():
    started = time.monotonic()
    with pytest.raises(ParserBudgetExceeded, match="KB_OCR_PAGE_SECONDS"):
        extract_isolated(_scanned_pdf([_page_image(3)]), doc.PDF, ocr=OcrOptions(page_seconds=1))
    assert time.monotonic() - started < 15  # the page's 1 s, not the document's minutes
