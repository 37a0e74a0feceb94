"""Text decoding and normalisation shared by every extractor. Pure, linear-time string work."""

from __future__ import annotations

from charset_normalizer import from_bytes

from ingest.errors import BinaryContent
from ingest.markdown_blocks import read_blocks


def looks_binary(body: bytes) -> bool:
    sample = body[:8192]
    return b"\x00" in sample and not (sample.startswith((b"\xff\xfe", b"\xfe\xff")))


def sniff_html(body: bytes) -> bool:
    head = body[:1024].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html")) or b"<body" in head


def decode_text(body: bytes, charset: str | None = None) -> str:
    """Decode with the declared charset when it works, else UTF-8, else detect."""
    for encoding in filter(None, (charset, "utf-8")):
        try:
            return body.decode(encoding).lstrip("\ufeff")
        except (UnicodeDecodeError, LookupError):
            continue
    best = from_bytes(body).best()
    if best is None:
        raise BinaryContent("Could not detect the text encoding.")
    return str(best).lstrip("\ufeff")


def normalise_text(text: str) -> str:
    """Unix newlines, no trailing blanks on a line, at most one empty line in a row."""
    lines: list[str] = []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        line = line.rstrip(" \t")
        if line or (lines and lines[-1]):
            lines.append(line)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n" if lines else ""


def markdown_title(text: str) -> str:
    """The front matter's `title:`, else the first level-1 ATX heading outside code fences (a
    shell prompt or a comment inside a fence is not a heading), else ""."""
    if text.startswith("---\n"):
        end = text.find("\n---\n", 3)
        if end > 0:
            for line in text[4:end].split("\n"):
                if line.startswith("title:"):
                    value = line[len("title:") :].strip().strip("'\"").strip()
                    if value:
                        return value
    return next(
        (
            block.heading
            for block in read_blocks(text)
            if block.kind == "heading" and block.level == 1 and block.heading
        ),
        "",
    )
