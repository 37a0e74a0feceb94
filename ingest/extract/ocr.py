"""Text recognised from scans by Tesseract: image files and PDF pages without a text layer.

Runs in the parser child (`isolated.py`), whose RLIMIT_AS and RLIMIT_CPU each `tesseract` process
inherits; each page also has its own timeout (`OcrOptions.page_seconds`), so one hostile page is
killed without spending the document's budget. Image dimensions are read from the header before any
pixel is decoded, so a decompression bomb is refused before it allocates.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from dataclasses import dataclass, replace

from ingest.errors import DocumentCorrupt, NoTextLayer, ParserBudgetExceeded
from ingest.extract.blocks import MarkdownBuilder, escape_markdown_line
from ingest.extract.result import Extracted

PNG, JPEG, TIFF, WEBP = "image/png", "image/jpeg", "image/tiff", "image/webp"
IMAGE_TYPES = (PNG, JPEG, TIFF, WEBP)
OCR_TYPES = ("application/pdf",) + IMAGE_TYPES  # the types whose parse may OCR pages
PILLOW_FORMATS = {PNG: "PNG", JPEG: "JPEG", TIFF: "TIFF", WEBP: "WEBP"}
MAX_PIXELS = 50_000_000  # per page: an A3 page at 300 dpi is 17 Mpx; more is a bomb, not a scan
RENDER_DPI = 300  # PDF pages are rendered at the resolution Tesseract is trained for
INSTALL_ADVICE = (
    "Tesseract OCR is not installed on the worker: install the Debian packages tesseract-ocr and "
    'tesseract-ocr-<language> (scripts/ocr.sh does), see docs/ingesting.md "Scans (OCR)".'
)


@dataclass(frozen=True)
class OcrOptions:
    languages: tuple[str, ...] = ("eng",)  # Tesseract language codes (KB_OCR_LANGUAGES)
    page_seconds: int = 60  # wall-clock budget of one page (KB_OCR_PAGE_SECONDS)
    max_pages: int = 100  # pages of one document that are OCRed at most (KB_OCR_MAX_PAGES)

    @property
    def document_seconds(self) -> float:
        """The most OCR may add to a document's parse: the child's deadline grows by this."""
        return float(self.page_seconds * self.max_pages)


@dataclass(frozen=True)
class OcrPage:
    text: str  # markdown-safe lines, paragraphs separated by a blank line
    confidence: float  # mean word confidence, 0-100 (0 when no word was found)


def unavailable(options: OcrOptions) -> str:
    """Why OCR cannot run here ("" when it can): Tesseract or a language is missing."""
    if shutil.which("tesseract") is None:
        return INSTALL_ADVICE
    import pytesseract

    try:
        installed = set(pytesseract.get_languages(config=""))
    except (pytesseract.TesseractError, OSError, subprocess.SubprocessError) as exc:
        return f"Tesseract OCR cannot run on the worker ({exc}). {INSTALL_ADVICE}"
    missing = [code for code in options.languages if code not in installed]
    if missing:
        packages = " ".join("tesseract-ocr-" + code.replace("_", "-").lower() for code in missing)
        return (
            f"The OCR language(s) {', '.join(missing)} (KB_OCR_LANGUAGES) are not installed on "
            "the worker: "
            f"install {packages}."
        )
    return ""


def recognise(image, options: OcrOptions) -> OcrPage:
    """One page image to text in Tesseract's reading order, with its mean word confidence."""
    import pytesseract

    os.environ.setdefault(
        "OMP_THREAD_LIMIT", "1"
    )  # measured 4x faster on 2 shared cores (docs/benchmarks.md)
    if image.mode not in ("L", "RGB", "1"):
        image = image.convert("RGB")
    try:
        data = pytesseract.image_to_data(
            image,
            lang="+".join(options.languages),
            timeout=options.page_seconds,
            output_type=pytesseract.Output.DICT,
        )
    except RuntimeError as exc:  # pytesseract's timeout kills the tesseract process
        raise ParserBudgetExceeded(
            f"OCR of one page took longer than {options.page_seconds} s (KB_OCR_PAGE_SECONDS)."
        ) from exc
    except pytesseract.TesseractError as exc:
        raise DocumentCorrupt(f"Tesseract could not read the image: {exc}") from exc
    return page_from_words(data)


def page_from_words(data: dict) -> OcrPage:
    """Tesseract's word table (image_to_data) to lines and paragraphs, in its order. Pure."""
    paragraphs: dict[tuple[int, int], dict[int, list[str]]] = {}
    confidences = []
    for i, word in enumerate(data["text"]):
        word = (word or "").strip()
        if not word:
            continue
        key = (data["block_num"][i], data["par_num"][i])
        paragraphs.setdefault(key, {}).setdefault(data["line_num"][i], []).append(word)
        confidence = float(data["conf"][i])
        if confidence >= 0:
            confidences.append(confidence)
    blocks = [
        "\n".join(escape_markdown_line(" ".join(words)) for words in lines.values())
        for lines in paragraphs.values()
    ]
    mean = sum(confidences) / len(confidences) if confidences else 0.0
    return OcrPage(text="\n\n".join(blocks), confidence=round(mean, 1))


def check_size(width: int, height: int) -> None:
    if width <= 0 or height <= 0 or width * height > MAX_PIXELS:
        raise ParserBudgetExceeded(
            f"The image is {width}x{height} pixels; at most {MAX_PIXELS // 1_000_000} million "
            "pixels a page are read (a decompression bomb is refused before it is decoded)."
        )


def read_image(body: bytes, media_type: str, fallback_title: str, options: OcrOptions) -> Extracted:
    """An image file (each frame of a multi-page TIFF a page) read by OCR."""
    from PIL import Image, ImageSequence, UnidentifiedImageError

    reason = unavailable(options)
    if reason:
        raise NoTextLayer(f"An image has no text layer and OCR is not available. {reason}")
    Image.MAX_IMAGE_PIXELS = (
        MAX_PIXELS  # Pillow's own guard, for formats whose size is only known late
    )
    try:
        image = Image.open(io.BytesIO(body), formats=[PILLOW_FORMATS[media_type]])
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, ValueError) as exc:
        if isinstance(exc, Image.DecompressionBombError):
            raise ParserBudgetExceeded(f"The image is too large to read: {exc}") from exc
        raise DocumentCorrupt(f"The image cannot be read: {exc}") from exc
    builder, ocr_pages = MarkdownBuilder(), []
    try:
        for number, frame in enumerate(ImageSequence.Iterator(image), start=1):
            if number > options.max_pages:
                raise ParserBudgetExceeded(
                    f"The image has more than {options.max_pages} pages (KB_OCR_MAX_PAGES)."
                )
            check_size(*frame.size)
            page = recognise(frame, options)
            builder.page(number)
            builder.add(page.text)
            if page.text.strip():
                ocr_pages.append((number, page.confidence))
    except (OSError, ValueError, EOFError) as exc:
        raise DocumentCorrupt(f"The image cannot be decoded: {exc}") from exc
    if not ocr_pages:
        raise NoTextLayer("OCR found no text in the image.")
    return replace(builder.result(fallback_title, "page"), ocr_pages=tuple(ocr_pages))


def recognise_pdf_pages(document, indexes: list[int], options: OcrOptions) -> dict[int, OcrPage]:
    """The given 0-based pages of an open pypdfium2 document, rendered and OCRed ({} when OCR
    is not available: the caller decides whether that is an error)."""
    if not indexes or unavailable(options):
        return {}
    if len(indexes) > options.max_pages:
        raise ParserBudgetExceeded(
            f"{len(indexes)} pages have no text layer; at most {options.max_pages} are OCRed "
            "(KB_OCR_MAX_PAGES)."
        )
    pages = {}
    for index in indexes:
        page = document[index]
        try:
            width, height = page.get_size()  # points
            scale = RENDER_DPI / 72
            if (
                width * height * scale * scale > MAX_PIXELS
            ):  # an oversized media box renders smaller
                scale = (MAX_PIXELS / max(1.0, width * height)) ** 0.5
            check_size(int(width * scale), int(height * scale))
            image = page.render(scale=scale, grayscale=True).to_pil()
        finally:
            page.close()
        pages[index] = recognise(image, options)
    return pages


def ocr_reason(reason: str, extracted: Extracted) -> str:
    """The run report's reason for an item, saying which pages were OCRed and how surely. Pure."""
    if not extracted.ocr_pages:
        return reason
    numbers = [number for number, _ in extracted.ocr_pages]
    mean = sum(confidence for _, confidence in extracted.ocr_pages) / len(numbers)
    said = (
        f"OCR: page{'s' if len(numbers) > 1 else ''} {page_ranges(numbers)}, mean "
        f"confidence {mean:.0f}%"
    )
    return f"{reason}; {said}" if reason else said


def page_ranges(numbers: list[int]) -> str:
    """[1, 2, 3, 5] -> "1-3, 5". Pure."""
    runs: list[list[int]] = []
    for number in numbers:
        if runs and number == runs[-1][1] + 1:
            runs[-1][1] = number
        else:
            runs.append([number, number])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)
