"""What every extractor returns."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Extracted:
    title: str
    content: str
    media_type: str  # text/markdown or text/plain
    links: tuple[str, ...] = ()  # outgoing links (HTML), absolute, without fragments
    # where each page, slide or sheet starts: (character offset into `content`, its number)
    pages: tuple[tuple[int, int], ...] = ()
    page_unit: str = ""  # "page", "slide" or "sheet" when `pages` is set
    # HTML: the page's own section ids are the anchors; a heading without one gets none (the
    # citation opens the page), never a slug the page does not have
    site_anchors: bool = False
    # pages whose text Tesseract recognised from a scan: (page number, mean word confidence 0-100)
    ocr_pages: tuple[tuple[int, float], ...] = ()
    # (characters kept, characters extracted) when KB_EXTRACT_MAX_CHARS cut the text
    # (`isolated.capped`)
    cut: tuple[int, int] | None = None
    # what the file holds that `content` does not, in words for the run report ("3 of 40 e-mail
    # parts not read"): a document that lost parts says so where a curator looks
    left_out: str = ""
    # (section anchor, its heading's line in the source file) where the reader knows it (AsciiDoc)
    heading_lines: tuple[tuple[str, int], ...] = ()
