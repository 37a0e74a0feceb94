"""Run a parser over untrusted bytes in a child process that cannot escape its budget.

The child (`python -m ingest.extract.isolated`) has RLIMIT_CPU (seconds) and RLIMIT_AS (bytes of
address space), a wall-clock deadline the parent enforces by killing its process group, and capped
output (`max_chars` of text kept, `output_bytes` read), so a small file that expands to gigabytes
never reaches the worker. Over budget is `ParserBudgetExceeded` (`INGEST_PARSER_BUDGET`), a crash
`DocumentCorrupt`: the item fails, the run goes on.

The child imports no Django, inherits only the `INHERITED` environment (no secret, database address
or data folder), enters the sandbox (`sandbox.py`) before it parses, and dies with its parent
(`PR_SET_PDEATHSIG`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace

from ingest import errors
from ingest.errors import DocumentCorrupt, IngestError, ParserBudgetExceeded
from ingest.extract import sandbox
from ingest.extract.asciidoc import ASCIIDOC, asciidoc_to_extracted
from ingest.extract.ocr import OCR_TYPES, OcrOptions
from ingest.extract.result import Extracted

HEADER_END = b"\n"
OUT_OF_MEMORY_EXIT = 24  # the child's exit status when Python raised MemoryError
BUDGET_SIGNALS = (-signal.SIGKILL, -signal.SIGXCPU, -signal.SIGABRT, -signal.SIGSEGV)
OUT_OF_MEMORY_MARKS = (
    b"MemoryError",
    b"failed to map segment",
    b"bad_alloc",
    b"Cannot allocate memory",
)
TRUNCATED = (
    "\n\n[… truncated: the first {kept:,} of {total:,} characters were kept "
    "(KB_EXTRACT_MAX_CHARS) …]\n"
)
LIBXML2_LIMITS = ("Memory allocation failed", "Resource limit exceeded")
READ_SIZE = 1 << 16
SCRATCH_PREFIX, HELD = (
    "kb-parser-",
    ".held",
)  # the child's own folder, and the lock its worker holds there
SCRATCH_GRACE_SECONDS = 60
CHILD = ("-m", "ingest.extract.isolated")  # the child's arguments to the Python interpreter
# All the child inherits of the worker's environment: how to find programs and libraries, the
# locale, and what tunes the parsers and Tesseract. Never a secret, a database's address or a
# data folder: those stay with the worker.
INHERITED = (
    "PATH",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "PYTHONPATH",
    "PYTHONHASHSEED",
    "TESSDATA_PREFIX",
    "OMP_THREAD_LIMIT",
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ParserBudget:
    cpu_seconds: int = 60
    memory_bytes: int = 2 * 1024**3
    max_chars: int = 2_000_000  # characters of text kept from one document
    extra_wall_seconds: float = 0.0  # OCR: each page has its own budget on top

    @property
    def wall_seconds(self) -> float:
        return self.cpu_seconds * 2 + 10 + self.extra_wall_seconds

    @property
    def output_bytes(self) -> int:
        """What the child may write: its text as JSON (at most 6 bytes a character, for escapes)
        and room for the title, links and page marks."""
        return self.max_chars * 6 + 4 * 1024**2


def extract_isolated(
    body: bytes,
    media_type: str,
    *,
    fallback_title: str = "",
    charset: str | None = None,
    url: str = "",
    budget: ParserBudget = ParserBudget(),
    ocr: OcrOptions | None = None,
) -> Extracted:
    """`ocr` lets scans be read, each OCRed page within its own budget (the deadline grows by
    them)."""
    if ocr and media_type in OCR_TYPES:
        budget = replace(budget, extra_wall_seconds=ocr.document_seconds)
    with (
        tempfile.TemporaryDirectory(prefix=SCRATCH_PREFIX) as writable,
        _held(writable),
        tempfile.TemporaryFile() as stdin,
        tempfile.TemporaryFile() as stderr,
    ):
        header = (
            json.dumps(
                {
                    "media_type": media_type,
                    "fallback_title": fallback_title,
                    "charset": charset,
                    "url": url,
                    "max_chars": budget.max_chars,
                    "memory_bytes": budget.memory_bytes,
                    "writable": writable,
                    "parent": os.getpid(),
                    "ocr": asdict(ocr) if ocr else None,
                }
            ).encode()
            + HEADER_END
        )
        stdin.write(header)
        stdin.write(body)
        stdin.seek(0)
        child = subprocess.Popen(
            [sys.executable, *CHILD],
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=stderr,
            preexec_fn=lambda: _limit(budget),
            env=child_environment(writable),
        )
        try:
            output = _read_capped(child, budget)
        finally:
            _kill(child)
        stderr.seek(0)
        errors_tail = stderr.read()[-8192:]
    return _answer(child.returncode, output, errors_tail, budget)


def child_environment(writable: str) -> dict[str, str]:
    """The child's whole environment: `INHERITED` where the worker has it, and its own
    temporary directory as `TMPDIR` and `HOME`."""
    inherited = {name: os.environ[name] for name in INHERITED if name in os.environ}
    return {**inherited, "PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": writable, "HOME": writable}


@contextlib.contextmanager
def _held(folder: str):
    """A lock on `folder` for as long as this process parses in it: the kernel drops it when the
    process dies, which is how `sweep_scratch` tells a killed worker's folder from a live one."""
    with open(os.path.join(folder, HELD), "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        yield


def sweep_scratch() -> int:
    """Remove the parser folders in the system temporary folder that no live process holds (their
    worker was killed mid-parse, so their child died with it); how many. Safe beside live parses.
    A child wrote in its folder, so nothing in it is followed: neither the folder nor its lock
    may be a symbolic link, the lock is never created, and the folder must be this user's."""
    removed = 0
    root = tempfile.gettempdir()
    try:
        entries = [
            entry
            for entry in os.scandir(root)
            if entry.name.startswith(SCRATCH_PREFIX) and entry.is_dir(follow_symlinks=False)
        ]
    except OSError:
        return 0
    for entry in entries:
        if _unheld(entry.path):
            shutil.rmtree(entry.path, ignore_errors=True)  # removes links, never what they point at
            removed += 1
    if removed:
        logger.info("removed %d parser folder(s) left by a worker killed mid-parse", removed)
    return removed


def _unheld(path: str) -> bool:
    """Whether `path` is this user's parser folder, old enough, that no live worker holds."""
    try:
        folder = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return False  # gone meanwhile, or a link
    try:
        status = os.fstat(folder)
        if status.st_uid != os.geteuid() or time.time() - status.st_mtime < SCRATCH_GRACE_SECONDS:
            return False  # another user's, or just made: its worker may not hold it yet
        try:
            held = os.open(HELD, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=folder)
        except FileNotFoundError:
            return True  # made by a worker that held nothing
        except OSError:
            return True  # a link planted by the child: no worker's lock
        try:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False  # a live parse
        finally:
            os.close(held)
    finally:
        os.close(folder)


def _read_capped(child: subprocess.Popen, budget: ParserBudget) -> bytes:
    """The child's stdout, read as it comes, until it closes; a deadline or an output over the
    cap stops (and kills) the child."""
    deadline = time.monotonic() + budget.wall_seconds
    pieces, size = [], 0
    with selectors.DefaultSelector() as selector:
        selector.register(child.stdout, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ParserBudgetExceeded(
                    f"Parsing took longer than {budget.wall_seconds:.0f} s "
                    f"(KB_PARSER_CPU_SECONDS={budget.cpu_seconds})."
                )
            if not selector.select(timeout=min(remaining, 1.0)):
                continue
            piece = os.read(child.stdout.fileno(), READ_SIZE)
            if not piece:
                break
            size += len(piece)
            if size > budget.output_bytes:
                raise ParserBudgetExceeded(
                    f"The parser's output exceeded {budget.output_bytes // 1024**2} MB "
                    f"(KB_EXTRACT_MAX_CHARS={budget.max_chars})."
                )
            pieces.append(piece)
    child.wait(timeout=max(1.0, deadline - time.monotonic()))
    return b"".join(pieces)


def _kill(child: subprocess.Popen) -> None:
    if child.poll() is None:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        child.wait()
    child.stdout.close()


def _answer(returncode: int, output: bytes, stderr: bytes, budget: ParserBudget) -> Extracted:
    if returncode != 0 or not output:
        out_of_memory = any(mark in stderr for mark in OUT_OF_MEMORY_MARKS)
        if returncode == OUT_OF_MEMORY_EXIT or returncode in BUDGET_SIGNALS or out_of_memory:
            raise ParserBudgetExceeded(
                f"Parsing exceeded its budget of {budget.cpu_seconds} s CPU and "
                f"{budget.memory_bytes // 1024**2} MB (KB_PARSER_CPU_SECONDS, KB_PARSER_MEMORY_MB)."
            )
        tail = stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        raise DocumentCorrupt(
            f"The parser stopped on this file (exit {returncode}): {tail[0][:300]}"
        )
    answer = json.loads(output)
    weaker = sandbox.refused(answer.get("sandbox", {}))
    if weaker:
        logger.warning("The parser child ran without these sandbox layers: %s", weaker)
    if "error" in answer:
        raise _error_class(answer["error"]["code"])(answer["error"]["message"])
    data = answer["extracted"]
    data["links"] = tuple(data["links"])
    data["pages"] = tuple(tuple(p) for p in data["pages"])
    data["ocr_pages"] = tuple(tuple(p) for p in data["ocr_pages"])
    data["cut"] = tuple(data["cut"]) if data.get("cut") else None
    data["heading_lines"] = tuple(tuple(h) for h in data.get("heading_lines", ()))
    return Extracted(**data)


def _limit(budget: ParserBudget) -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (budget.cpu_seconds, budget.cpu_seconds + 1))
    resource.setrlimit(resource.RLIMIT_AS, (budget.memory_bytes, budget.memory_bytes))
    os.setsid()  # a kill takes the whole child, never the worker


def _error_class(code: str) -> type[IngestError]:
    for value in vars(errors).values():
        if isinstance(value, type) and issubclass(value, IngestError) and value.code == code:
            return value
    return DocumentCorrupt


def capped(extracted: Extracted, max_chars: int) -> Extracted:
    """`extracted` with at most `max_chars` characters of text, cut at a line end when there is
    one near, an explicit marker saying what was dropped, only the page marks that remain, and
    `cut` saying how much was kept of how much."""
    total = len(extracted.content)
    if total <= max_chars:
        return extracted
    cut = extracted.content.rfind("\n", max(0, max_chars - 10_000), max_chars)
    cut = cut if cut > 0 else max_chars
    return replace(
        extracted,
        content=extracted.content[:cut] + TRUNCATED.format(kept=cut, total=total),
        pages=tuple(p for p in extracted.pages if p[0] < cut),
        cut=(cut, total),
    )


def without_nul(extracted: Extracted) -> Extracted:
    """`extracted` without NUL characters, which a PostgreSQL text column refuses: a stray NUL
    anywhere in a file must cost nothing but itself."""
    if "\x00" not in extracted.content and "\x00" not in extracted.title:
        return extracted
    return replace(
        extracted,
        title=extracted.title.replace("\x00", ""),
        content=extracted.content.replace("\x00", ""),
    )


def _out_of_memory(exc: Exception, memory_bytes: int) -> bool:
    """Whether a parser's error means it ran out of its memory: libxml2 (under lxml) reports a
    failed allocation as "unknown error" or "Memory allocation failed" rather than a MemoryError,
    and refuses a text node over its size limit; the child then holds most of its budget."""
    text = str(exc)
    if any(mark in text for mark in LIBXML2_LIMITS):
        return True
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux
    return "unknown error" in text and peak >= memory_bytes // 8


def main() -> int:
    from ingest.extract import extract

    raw = sys.stdin.buffer.read()
    header, _, body = raw.partition(HEADER_END)
    del raw
    request = json.loads(header)
    state = sandbox.enter(request["writable"])  # before a byte of the document is parsed
    sandbox.die_with_parent(
        request["parent"]
    )  # after the sandbox: a change of credentials clears it
    try:
        ocr = request.get("ocr")
        options = OcrOptions(**{**ocr, "languages": tuple(ocr["languages"])}) if ocr else None
        if request["media_type"] == ASCIIDOC:  # an external program, run only here, in the sandbox
            extracted = asciidoc_to_extracted(body, fallback_title=request["fallback_title"])
        else:
            extracted = extract(
                body,
                request["media_type"],
                charset=request["charset"],
                url=request["url"],
                fallback_title=request["fallback_title"],
                ocr_options=options,
            )
        answer = {"extracted": asdict(capped(extracted, request["max_chars"]))}
    except IngestError as exc:
        answer = {"error": {"code": exc.code, "message": exc.message}}
    except MemoryError:
        return OUT_OF_MEMORY_EXIT
    except Exception as exc:  # a parser's own error: out of memory, or the file's fault
        if not _out_of_memory(exc, request["memory_bytes"]):
            raise
        return OUT_OF_MEMORY_EXIT
    sys.stdout.write(json.dumps({**answer, "sandbox": state}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
