"""PDF to markdown with pypdfium2 (PDFium): the text per page, the outline as headings. Pure.

Running headers and footers go (a line at a page's edge that recurs, page numbers aside, on
`RUNNING_SHARE` of the pages; chapter headers carrying the printed page number), and so do contents
and index pages (`CONTENTS_LINES` leader entries), which match every query word and say nothing. A
leader line elsewhere stays: spec sheets print values so ("Voltage . . . . 230 V"). A PDF with no
body text left is reported as having no text layer, never ingested as headings alone.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from dataclasses import replace

from ingest.errors import DocumentCorrupt, DocumentEncrypted, NoTextLayer
from ingest.extract import ocr
from ingest.extract.blocks import MarkdownBuilder, escape_markdown_line
from ingest.extract.pdf_words import join_split_words
from ingest.extract.result import Extracted
from kb.lookalikes import fold_lookalikes, join_hyphenation

logger = logging.getLogger(__name__)

MIN_TEXT_CHARS_PER_PAGE = 8  # below this on every page, a PDF is a scan without a text layer
EDGE_LINES = 3  # lines at the top and at the bottom of a page that may be a running header/footer
RUNNING_SHARE = 0.5
MIN_RUNNING_PAGES = 3
NUMBERED_SHARE = 0.3  # a third of pages may open a chapter, be blank, or carry no number
DIGITS = re.compile(r"\d+")
ROMAN = re.compile(
    r"m{0,3}(cm|cd|d?c{0,3})(xc|xl|l?x{0,3})(ix|iv|v?i{0,3})"
)  # front matter: i, ii, xiv
PAGES = re.compile(r"\d{1,6}(?:[-\u2013]\d{1,6})?")  # a page or a range of pages
LEADER_DOTS = 5
CONTENTS_LINES = 5


def read_pdf(body: bytes, fallback_title: str, options: ocr.OcrOptions | None = None) -> Extracted:
    import pypdfium2 as pdfium

    try:
        document = pdfium.PdfDocument(body)
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():
            raise DocumentEncrypted("The PDF needs a password to open.") from exc
        raise DocumentCorrupt(f"The PDF cannot be read: {exc}") from exc
    try:
        page_count = len(document)
        outline = _pdf_outline(document, page_count)
        texts = []
        for index in range(page_count):
            page = document[index]
            textpage = page.get_textpage()
            raw = textpage.get_text_range().replace("\r\n", "\n").replace("\r", "\n")
            texts.append(fold_lookalikes(join_hyphenation(raw)))
            textpage.close()
            page.close()
        title = (document.get_metadata_value("Title") or "").strip()
        scanned = [i for i, text in enumerate(texts) if len(text.strip()) < MIN_TEXT_CHARS_PER_PAGE]
        recognised = ocr.recognise_pdf_pages(document, scanned, options) if options else {}
    finally:
        document.close()
    for index, page in recognised.items():
        texts[index] = page.text
    if page_count and all(len(t.strip()) < MIN_TEXT_CHARS_PER_PAGE for t in texts):
        advice = (
            (ocr.unavailable(options) or "OCR found no text on them.")
            if options
            else "it needs OCR first."
        )
        raise NoTextLayer(f"The PDF's {page_count} pages have no text layer (a scan?); {advice}")
    texts = join_split_words(drop_contents_lines(drop_running_lines(texts)))
    if page_count and all(
        len(_body_text(t, outline.get(n, []))) < MIN_TEXT_CHARS_PER_PAGE
        for n, t in enumerate(texts, start=1)
    ):
        raise NoTextLayer(
            f"The PDF's {page_count} pages hold no body text beyond headings, running headers "
            "and footers (an outline over scanned pages?); it needs OCR first."
        )
    title = title or _first_page_title(texts, outline)
    builder = MarkdownBuilder()
    for number, text in enumerate(texts, start=1):
        builder.page(number)
        for block in _pdf_page_blocks(text, outline.get(number, [])):
            builder.add(block)
    ocr_pages = tuple(
        (i + 1, p.confidence) for i, p in sorted(recognised.items()) if p.text.strip()
    )
    return replace(builder.result(title or fallback_title, "page"), ocr_pages=ocr_pages)


def _shape(line: str) -> str:
    """A line as it recurs from page to page: without its numbers, arabic or roman (a first or
    last word of roman digits) and what joins them ("Manual 73 / 248" and "Manual xix" are one
    shape); a line of numbers alone is `#`."""
    words = DIGITS.sub("#", line.lower()).split()
    for end in (0, -1):
        if words and _roman(words[end]):
            words[end] = "#"
    kept = [word for word in words if word.strip("#/|.:-\u2013")]
    return " ".join(kept) if kept or not words else "#"


def _roman(word: str) -> bool:
    return bool(word) and len(word) <= 9 and ROMAN.fullmatch(word.lower()) is not None


def page_reference(text: str) -> bool:
    """Page numbers as contents and indexes print them: one roman numeral, or arabic pages and
    ranges separated by commas ("48, 49, 140"); not a value with its unit ("230 V", "2,50")."""
    words = text.split()
    if len(words) == 1 and _roman(words[0]):
        return True
    return bool(words) and all(
        PAGES.fullmatch(word.removesuffix(",") if i < len(words) - 1 else word)
        and (i == len(words) - 1 or word.endswith(","))
        for i, word in enumerate(words)
    )


def leader_line(line: str) -> bool:
    """A contents or index entry (module docstring): text, a dot leader, page numbers. Scans
    the line once from its end."""
    end = len(line.rstrip())
    start = end
    while start and line[start - 1] != ".":
        start -= 1
    if not page_reference(line[start:end]):
        return False
    dots = 0
    while start and line[start - 1] in ". ":
        start -= 1
        dots += line[start] == "."
    return dots >= LEADER_DOTS


def drop_contents_lines(texts: list[str]) -> list[str]:
    """Pages without the contents and index pages among them (module docstring)."""
    out = []
    for text in texts:
        lines = text.split("\n")
        leaders = sum(1 for line in lines if leader_line(line))
        filled = sum(1 for line in lines if line.strip())
        out.append("" if leaders >= CONTENTS_LINES and 2 * leaders >= filled else text)
    return out


def _edges(lines: list[str]) -> list[int]:
    filled = [i for i, line in enumerate(lines) if line.strip()]
    edge = min(EDGE_LINES, max(1, len(filled) // 3))  # a short page is mostly body, not edges
    return sorted(set(filled[:edge] + filled[-edge:]))


def drop_running_lines(texts: list[str]) -> list[str]:
    """Pages without the running headers and footers they repeat (module docstring); a line of
    digits alone at an edge (a page number) goes too when pages carry them."""
    pages = [text.split("\n") for text in texts]
    counts: Counter[str] = Counter()
    for lines in pages:
        counts.update({_shape(lines[i]) for i in _edges(lines)})
    threshold = max(MIN_RUNNING_PAGES, RUNNING_SHARE * len(pages))
    running = {shape for shape, count in counts.items() if count >= threshold and shape.strip()}
    drop = [{i for i in _edges(lines) if _shape(lines[i]) in running} for lines in pages]
    for index, numbered in enumerate(_page_numbered_lines(pages)):
        drop[index] |= numbered
    if not any(drop):
        return texts
    return [
        "\n".join("" if i in dropped else line for i, line in enumerate(lines))
        for lines, dropped in zip(pages, drop, strict=True)
    ]


def _outer_lines(lines: list[str]) -> list[int]:
    """The indexes of a page's first and last non-blank lines."""
    filled = [i for i, line in enumerate(lines) if line.strip()]
    return sorted({filled[0], filled[-1]}) if filled else []


def _printed_number(line: str) -> int | None:
    """The page number a header or footer line starts or ends with ("Chapter 4: Reference 22", "22
    Index")."""
    words = line.split()
    if len(words) > 16:  # a running head is short; a long line is body text that ends in a number
        return None
    for word in (words[-1], words[0]) if words else ():
        if word.isdigit() and len(word) <= 5:
            return int(word)
    return None


def _page_numbered_lines(pages: list[list[str]]) -> list[set[int]]:
    """Per page, the outer lines that are running heads numbered with the page (module
    docstring)."""
    offsets: Counter[int] = Counter()
    for index, lines in enumerate(pages):
        offsets.update(
            {
                number - index
                for i in _outer_lines(lines)
                if (number := _printed_number(lines[i])) is not None
            }
        )
    if not offsets:
        return [set() for _ in pages]
    offset, count = offsets.most_common(1)[0]
    if count < max(MIN_RUNNING_PAGES, NUMBERED_SHARE * len(pages)):
        return [set() for _ in pages]
    found = [
        {i for i in _outer_lines(lines) if _printed_number(lines[i]) == index + offset}
        for index, lines in enumerate(pages)
    ]
    outer = [_outer_lines(lines) for lines in pages]
    for index, lines in enumerate(pages):  # an unnumbered head repeated on a neighbouring page
        for edge in (0, -1):
            if not outer[index]:
                continue
            at = outer[index][edge]
            shape = _shape(lines[at])
            neighbours = [
                pages[n][outer[n][edge]]
                for n in (index - 1, index + 1)
                if 0 <= n < len(pages) and outer[n]
            ]
            if any(c.isalpha() for c in shape) and any(
                _shape(line) == shape for line in neighbours
            ):
                found[index].add(at)
    return found


def _body_text(text: str, headings: list[tuple[int, str]]) -> str:
    titles = {" ".join(t.split()).lower() for _, t in headings}
    return "".join(
        line
        for line in text.split("\n")
        if line.strip() and " ".join(line.split()).lower() not in titles
    ).strip()


def _first_page_title(texts: list[str], outline: dict[int, list[tuple[int, str]]]) -> str:
    if outline.get(1):
        return outline[1][0][1]
    for line in texts[0].split("\n") if texts else []:
        line = " ".join(line.split())
        if line:
            return line if len(line) <= 120 and any(c.isalpha() for c in line) else ""
    return ""


def _pdf_outline(document, page_count: int) -> dict[int, list[tuple[int, str]]]:
    """Outline (bookmarks) by 1-based page: [(level, title)], in order."""
    headings: dict[int, list[tuple[int, str]]] = {}
    try:
        for item in document.get_toc(max_depth=6):
            destination = item.get_dest()
            index = destination.get_index() if destination is not None else None
            if index is None or not 0 <= index < page_count:
                continue
            title = " ".join((item.get_title() or "").split())
            if title:
                headings.setdefault(index + 1, []).append((min(6, item.level + 1), title))
    except pdfium_errors() as exc:  # a broken outline loses the headings, never the text
        logger.warning("PDF outline unreadable: %s", exc)
        return {}
    return headings


def pdfium_errors() -> tuple[type[BaseException], ...]:
    import pypdfium2 as pdfium

    return (pdfium.PdfiumError, ValueError, KeyError)


def _pdf_page_blocks(text: str, headings: list[tuple[int, str]]) -> list[str]:
    """The page's text with each outline heading placed at the line where its title starts
    (at the top of the page when the title is not found on it)."""
    lines = text.split("\n")
    inserts: dict[int, list[str]] = {}
    cursor = 0
    for level, title in headings:
        at = _find_line(lines, title, cursor)
        if at is None:
            inserts.setdefault(cursor, []).append("#" * level + " " + title)
        else:
            inserts.setdefault(at, []).append("#" * level + " " + title)
            lines[at] = ""  # the heading replaces the line that printed it
            cursor = at
    blocks, paragraph = [], []
    for index, line in enumerate(lines):
        if index in inserts:
            if paragraph:
                blocks.append("\n".join(paragraph))
                paragraph = []
            blocks.extend(inserts[index])
        if line.strip():
            paragraph.append(escape_markdown_line(line.rstrip()))
        elif paragraph:
            blocks.append("\n".join(paragraph))
            paragraph = []
    if paragraph:
        blocks.append("\n".join(paragraph))
    return blocks


def _find_line(lines: list[str], title: str, start: int) -> int | None:
    """The first line from `start` that prints the title (alone, or after a section number)."""
    wanted = " ".join(title.split()).lower()
    for index in range(start, len(lines)):
        line = " ".join(lines[index].split()).lower()
        if line and wanted in line and len(line) <= len(wanted) + 8:
            return index
    return None
