"""The ingest rows of the settings table: fetching, folder and git sources, parsing, OCR,
the watchdog and chunking."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kb.settings_table import at_least, comma_list, resolved_path, setting

MiB = 1024 * 1024


def _ocr_codes(value) -> list[str]:
    """Tesseract languages joined by "+" or ","."""
    return [code for code in str(value).replace(",", "+").split("+") if code.strip()]


@dataclass(frozen=True)
class IngestSettings:
    """The ingest rows: fetching, folder and git sources, parsing, OCR, the watchdog, chunking."""

    fetch_allowed_private: tuple[str, ...] = setting(
        "KB_FETCH_ALLOWED_PRIVATE",
        "",
        "comma-separated hosts or networks that ingest may fetch although they are private, "
        "each optionally with a port or `*` (`wiki.corp`, `wiki.corp:8443`, `10.20.0.0/16:*`, "
        "`127.0.0.1:*`, `[fd00::/8]:443`); without a port only 80 and 443",
        read=comma_list,
        convert=tuple,
    )
    fetch_max_bytes: int = setting(
        "KB_FETCH_MAX_BYTES",
        10 * MiB,
        "largest web page, text or markdown file ingested (after decompression)",
    )
    fetch_timeout: float = setting(
        "KB_FETCH_TIMEOUT",
        20.0,
        "seconds per network operation; a whole fetch gets three times that",
    )
    media_root: Path = setting(
        "MEDIA_ROOT",
        lambda known: known["KB_DATA_DIR"] / "media",
        "where uploaded source files are stored",
        env="KB_MEDIA_DIR",
        read=resolved_path,
        convert=Path,
        shown="`$KB_DATA_DIR/media`",
    )
    folder_roots: tuple[Path, ...] = setting(
        "KB_FOLDER_ROOTS",
        "",
        "comma-separated absolute directories folder sources may read under "
        "(`/srv/shares,/mnt/docs`); empty: folder sources are off. Symbolic links are never "
        "followed ([folders](ingesting.md#folders))",
        read=comma_list,
        convert=lambda roots: tuple(Path(root) for root in roots),
    )
    git_allow_local: bool = setting(
        "KB_GIT_ALLOW_LOCAL",
        False,
        "whether git sources may name `ssh://` (or `git@host:`) repositories and local paths; "
        "https is always allowed, through the SSRF guard ([git](ingesting.md#git-repositories))",
        convert=bool,
    )
    git_tokens: dict[str, str] = setting(  # by <NAME>
        "KB_GIT_TOKENS",
        {},
        "a token for private git repositories, written `<host>=<token>` (several hosts "
        "comma-separated: `git.example.com,git2.example.com=<token>`) and named by a source's "
        "`token` option as `<NAME>`; sent as HTTP Basic (`x-access-token`) only over https to "
        "exactly those hosts (any other URL: `INGEST_GIT_TOKEN_REFUSED`, nothing is fetched), "
        "through git's environment (never its command line), never stored in the database",
        env="KB_GIT_TOKEN_<NAME>",
        convert=dict,
        shown="none",
        secret=True,
    )
    git_max_bytes: int = setting(
        "KB_GIT_MAX_BYTES",
        500 * MiB,
        "the most one git source's mirror may hold after a fetch; past it the run fails "
        "(`INGEST_SYNC_BUDGET`) and nothing is removed",
    )
    git_timeout: float = setting(
        "KB_GIT_TIMEOUT",
        300.0,
        "the seconds one git command may take; past them the run fails (`INGEST_SYNC_BUDGET`) "
        "and nothing is removed",
    )
    git_cache_dir: Path = setting(
        "KB_GIT_CACHE_DIR",
        lambda known: known["KB_DATA_DIR"] / "git",
        "where each git source's bare mirror is kept between runs (deleting it costs one full "
        "fetch)",
        read=resolved_path,
        convert=Path,
        shown="`$KB_DATA_DIR/git`",
    )
    document_max_bytes: int = setting(
        "KB_DOCUMENT_MAX_BYTES",
        50 * MiB,
        "largest PDF, Office, OpenDocument, CSV, EPUB or e-mail file, fetched or uploaded",
    )
    archive_max_bytes: int = setting(
        "KB_ARCHIVE_MAX_BYTES", 200 * MiB, "a .zip upload: largest archive and unpacked total"
    )
    archive_max_files: int = setting("KB_ARCHIVE_MAX_FILES", 5000, "a .zip upload: most members")
    parser_cpu_seconds: int = setting(
        "KB_PARSER_CPU_SECONDS", 60, "the CPU budget of one document parse in its child process"
    )
    parser_memory_mb: int = setting(
        "KB_PARSER_MEMORY_MB", 2048, "the memory budget of one document parse in its child process"
    )
    ocr_languages: tuple[str, ...] = setting(  # Tesseract language codes
        "KB_OCR_LANGUAGES",
        "eng",
        "Tesseract languages of scans (PDF pages without a text layer, images), joined by `+` or "
        "`,` (`eng+deu`); `scripts/run` and `scripts/test` install `tesseract-ocr-<code>` for "
        "each ([Scans](ingesting.md#scans-ocr))",
        read=_ocr_codes,
        convert=lambda codes: tuple(code.strip() for code in codes),
    )
    ocr_page_seconds: int = setting(
        "KB_OCR_PAGE_SECONDS", 60, "the wall-clock budget of OCR on one page"
    )
    ocr_max_pages: int = setting(
        "KB_OCR_MAX_PAGES", 100, "the most pages of one document that are OCRed"
    )
    run_stall_seconds: int = setting(
        "KB_RUN_STALL_SECONDS",
        120,
        "a running ingest without a heartbeat this long is stalled (`/healthz` degraded, the run "
        "page says so); at twice this the watchdog fails it and stops its worker "
        "([deployment](deployment.md#the-watchdog))",
        check=at_least(5),
    )
    watchdog_seconds: int = setting(
        "KB_WATCHDOG_SECONDS",
        30,
        "how often each qcluster's main process runs the watchdog",
        check=at_least(1),
    )
    extract_max_chars: int = setting(
        "KB_EXTRACT_MAX_CHARS",
        2000000,
        "characters of text one document keeps; the rest is cut at a line end and replaced by a "
        "marker saying how much was dropped",
        check=at_least(1000),
    )
    max_chunks_per_document: int = setting(
        "KB_MAX_CHUNKS_PER_DOCUMENT",
        2000,
        "chunks one document keeps (in document order); the rest are not stored",
        check=at_least(1),
    )
    parser_inline_max_bytes: int = setting(
        "KB_PARSER_INLINE_MAX_BYTES",
        256 * 1024,
        "HTML, markdown and text bodies up to this size are extracted in the worker; larger ones "
        "in the budgeted child, like documents",
        check=at_least(0),
    )
    chunk_tokens: int = setting(
        "KB_CHUNK_TOKENS",
        400,
        "chunk budget in estimated tokens (words, punctuation, CJK characters). The lexical "
        "channel indexes every token of a chunk; the default model embeds its first 256 "
        "WordPieces (about 200 estimated tokens)",
        check=at_least(32),
    )
    demo_docs_dir: Path = setting(
        "KB_DEMO_DOCS_DIR",
        lambda known: known["BASE_DIR"] / "docs",
        "the pages the demo namespace is made from",
        env=None,
        convert=Path,
        shown="`docs/`",
    )
