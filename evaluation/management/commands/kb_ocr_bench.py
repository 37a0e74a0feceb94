"""Word recall and time per page of the product's OCR on real text turned into scans.

    .venv/bin/python manage.py kb_ocr_bench /usr/share/R/doc/manual/R-intro.pdf --pages 10

Pages are rendered to image-only PDFs at each DPI, read through the parser child and compared with
the PDF's own text layer.
"""

from __future__ import annotations

import collections
import io
import re
import statistics
import time
from pathlib import Path

import pypdfium2 as pdfium
from django.core.management.base import BaseCommand

from ingest.extract.documents import PDF
from ingest.extract.isolated import ParserBudget, extract_isolated
from ingest.extract.ocr import OcrOptions


def words(text: str) -> collections.Counter:
    return collections.Counter(re.findall(r"[a-z0-9]+", text.lower()))


def recall(truth: str, got: str) -> float:
    want, have = words(truth), words(got)
    return sum(min(n, have[w]) for w, n in want.items()) / max(1, sum(want.values()))


class Command(BaseCommand):
    help = " ".join(__doc__.split("\n\n")[0].split())  # the first paragraph, on one line

    def add_arguments(self, parser):
        parser.add_argument("pdf", type=Path)
        parser.add_argument(
            "--pages", type=int, default=10, help="pages sampled evenly from the document"
        )
        parser.add_argument("--dpi", type=int, nargs="+", default=[200, 300])

    def handle(self, *, pdf: Path, pages: int, dpi: list[int], **_):
        for line in table(pdf, pages, dpi):
            self.stdout.write(line)
            self.stdout.flush()


def table(pdf: Path, pages: int, resolutions: list[int]):
    """The pages read, then a table row per resolution."""
    document = pdfium.PdfDocument(pdf)
    step = max(1, len(document) // (pages + 1))
    indexes = [i for i in range(step, len(document), step)][:pages]
    truths = {i: document[i].get_textpage().get_text_range() for i in indexes}
    yield f"{pdf.name}: pages {[i + 1 for i in indexes]}"
    yield (
        "| dpi | pages | word recall (mean) | worst page | seconds/page (mean) | mean confidence |"
    )
    yield "|---|---|---|---|---|---|"
    for dpi in resolutions:
        recalls, seconds, confidences = [], [], []
        for index in indexes:
            image = document[index].render(scale=dpi / 72, grayscale=True).to_pil()
            scan = io.BytesIO()
            image.save(scan, format="PDF", resolution=dpi)
            started = time.perf_counter()
            extracted = extract_isolated(
                scan.getvalue(), PDF, ocr=OcrOptions(), budget=ParserBudget()
            )
            seconds.append(time.perf_counter() - started)
            recalls.append(recall(truths[index], extracted.content))
            confidences.extend(c for _, c in extracted.ocr_pages)
        yield (
            f"| {dpi} | {len(indexes)} | {statistics.mean(recalls):.1%} | {min(recalls):.1%} | "
            f"{statistics.mean(seconds):.1f} | {statistics.mean(confidences):.0f} |"
        )
