"""Run a document parser in a child process that cannot escape its budget.

PDFium and the zip-based Office readers run native or decompressing code over untrusted bytes:
a crafted file can loop, allocate without bound or crash. The parse therefore runs in a fresh
`python -m ingest.extract.isolated` with `RLIMIT_CPU` (seconds of CPU) and `RLIMIT_AS`
(address space) set before it starts, and a wall-clock deadline the parent enforces with a
kill. Exceeding either is `ParserBudgetExceeded`; a crash is `DocumentCorrupt`; the item fails
and the run goes on. The child imports no Django: bytes in on stdin, JSON out on stdout.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from dataclasses import asdict, dataclass

from ingest import errors
from ingest.errors import DocumentCorrupt, IngestError, ParserBudgetExceeded
from ingest.extract.ocr import OCR_TYPES, OcrOptions
from ingest.extract.result import Extracted

HEADER_END = b"\n"


@dataclass(frozen=True)
class ParserBudget:
    cpu_seconds: int = 60
    memory_bytes: int = 2 * 1024 ** 3

    @property
    def wall_seconds(self) -> float:
        return self.cpu_seconds * 2 + 10


def extract_isolated(body: bytes, media_type: str, *, fallback_title: str = "",
                     budget: ParserBudget = ParserBudget(), ocr: OcrOptions | None = None) -> Extracted:
    """`ocr` lets scans be read, each OCRed page within its own budget (the deadline grows by them)."""
    header = json.dumps({"media_type": media_type, "fallback_title": fallback_title,
                         "ocr": asdict(ocr) if ocr else None}).encode() + HEADER_END
    try:
        completed = subprocess.run(
            [sys.executable, "-m", "ingest.extract.isolated"], input=header + body, capture_output=True,
            timeout=budget.wall_seconds + (ocr.document_seconds if ocr and media_type in OCR_TYPES else 0),
            preexec_fn=lambda: _limit(budget),
            check=False,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        )
    except subprocess.TimeoutExpired as exc:
        raise ParserBudgetExceeded(
            f"Parsing took longer than {budget.wall_seconds:.0f} s (KB_PARSER_CPU_SECONDS={budget.cpu_seconds})."
        ) from exc
    if completed.returncode != 0 or not completed.stdout:
        # SIGKILL, SIGXCPU (RLIMIT_CPU), SIGABRT (a native allocation failed under RLIMIT_AS)
        out_of_memory = b"MemoryError" in completed.stderr or b"failed to map segment" in completed.stderr
        if completed.returncode in (-9, -24, -6) or out_of_memory:
            raise ParserBudgetExceeded(
                f"Parsing exceeded its budget of {budget.cpu_seconds} s CPU and "
                f"{budget.memory_bytes // 1024 ** 2} MB (KB_PARSER_CPU_SECONDS, KB_PARSER_MEMORY_MB)."
            )
        tail = completed.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        raise DocumentCorrupt(f"The parser stopped on this file (exit {completed.returncode}): {tail[0][:300]}")
    answer = json.loads(completed.stdout)
    if "error" in answer:
        raise _error_class(answer["error"]["code"])(answer["error"]["message"])
    data = answer["extracted"]
    data["links"] = tuple(data["links"])
    data["pages"] = tuple(tuple(p) for p in data["pages"])
    data["ocr_pages"] = tuple(tuple(p) for p in data["ocr_pages"])
    return Extracted(**data)


def _limit(budget: ParserBudget) -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (budget.cpu_seconds, budget.cpu_seconds + 1))
    resource.setrlimit(resource.RLIMIT_AS, (budget.memory_bytes, budget.memory_bytes))
    os.setsid()  # a kill on timeout takes the whole child, never the worker


def _error_class(code: str) -> type[IngestError]:
    for value in vars(errors).values():
        if isinstance(value, type) and issubclass(value, IngestError) and value.code == code:
            return value
    return DocumentCorrupt


def main() -> int:
    from ingest.extract.documents import extract_document

    raw = sys.stdin.buffer.read()
    header, _, body = raw.partition(HEADER_END)
    request = json.loads(header)
    try:
        ocr = request.get("ocr")
        options = OcrOptions(**{**ocr, "languages": tuple(ocr["languages"])}) if ocr else None
        extracted = extract_document(body, request["media_type"], fallback_title=request["fallback_title"],
                                     ocr_options=options)
        answer = {"extracted": asdict(extracted)}
    except IngestError as exc:
        answer = {"error": {"code": exc.code, "message": exc.message}}
    except MemoryError:
        return 24
    sys.stdout.write(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
