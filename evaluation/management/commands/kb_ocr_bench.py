"""Word recall and time per page of the product's OCR on real text turned into scans.

Renders pages of a real PDF (e.g. Debian's r-doc-pdf manuals) to grey images at each DPI, wraps
each image as an image-only PDF, reads it through the product's parser child
(`extract_isolated` with OCR) and compares the recognised words with the PDF's own text layer.

    .venv/bin/python scripts/ocr_bench.py /usr/share/R/doc/manual/R-intro.pdf --pages 10
"""

from __future__ import annotations

import argparse
import collections
import io
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pypdfium2 as pdfium

from ingest.extract.documents import PDF
from ingest.extract.isolated import ParserBudget, extract_isolated
from ingest.extract.ocr import OcrOptions


def words(text: str) -> collections.Counter:
    return collections.Counter(re.findall(r"[a-z0-9]+", text.lower()))


def recall(truth: str, got: str) -> float:
    want, have = words(truth), words(got)
    return sum(min(n, have[w]) for w, n in want.items()) / max(1, sum(want.values()))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("pdf", type=Path)
    parser.add_argument("--pages", type=int, default=10, help="pages sampled evenly from the document")
    parser.add_argument("--dpi", type=int, nargs="+", default=[200, 300])
    args = parser.parse_args()
    document = pdfium.PdfDocument(args.pdf)
    step = max(1, len(document) // (args.pages + 1))
    indexes = [i for i in range(step, len(document), step)][: args.pages]
    truths = {i: document[i].get_textpage().get_text_range() for i in indexes}
    print(f"{args.pdf.name}: pages {[i + 1 for i in indexes]}")
    print("| dpi | pages | word recall (mean) | worst page | seconds/page (mean) | mean confidence |")
    print("|---|---|---|---|---|---|")
    for dpi in args.dpi:
        recalls, seconds, confidences = [], [], []
        for index in indexes:
            image = document[index].render(scale=dpi / 72, grayscale=True).to_pil()
            scan = io.BytesIO()
            image.save(scan, format="PDF", resolution=dpi)
            started = time.perf_counter()
            extracted = extract_isolated(scan.getvalue(), PDF, ocr=OcrOptions(), budget=ParserBudget())
            seconds.append(time.perf_counter() - started)
            recalls.append(recall(truths[index], extracted.content))
            confidences.extend(c for _, c in extracted.ocr_pages)
        print(f"| {dpi} | {len(indexes)} | {statistics.mean(recalls):.1%} | {min(recalls):.1%} | "
              f"{statistics.mean(seconds):.1f} | {statistics.mean(confidences):.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
