"""Build benchmark collections from Debian's documentation packages into BEIR folders.

Each collection's questions were written in its language before any search ran. Documents are read
by the product's own extractors (man pages rendered by groff as `man` renders them), and a
translated section is kept only when the detector reads it in the collection's language, since
translations are partial. A question file (`corpora/<name>-questions.json`) holds enough to rebuild
its collection: package, version, language, judged document ids and their files.
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from evaluation import handbook
from ingest.evaluate import extract
from kb.language_detection import detect

CORPORA = Path(__file__).with_name("corpora")
MIN_CHARS = 200  # a shorter section is a heading over a table or a pointer elsewhere


@dataclass(frozen=True)
class Document:
    id: str
    title: str
    text: str
    file: str  # path inside the unpacked package


@dataclass(frozen=True)
class Collection:
    name: str
    package: str
    version: str
    language: str
    what: str
    documents: Callable[[Path], Iterator[Document]]  # from the package's unpacked root

    @property
    def questions(self) -> Path:
        return CORPORA / f"{self.name}-questions.json"


@dataclass(frozen=True)
class Built:
    name: str
    language: str
    documents: int
    queries: int
    folder: Path


class CollectionError(Exception):
    """A package or its questions do not make the collection the questions were written for."""


def man_pages(folder: str, sections: tuple[str, ...]) -> Callable[[Path], Iterator[Document]]:
    """Every man page of `sections` under `folder` (usr/share/man/<language>), aliases left out (a
    symlink or a `.so` line names another page), id `name.section` as `man` names it."""

    def documents(root: Path) -> Iterator[Document]:
        for section in sections:
            for path in sorted((root / folder / f"man{section}").glob("*.gz")):
                source = b"" if path.is_symlink() else gzip.decompress(path.read_bytes())
                if not source or source.lstrip().startswith(b".so "):
                    continue
                page = path.name.removesuffix(".gz")
                rendered = _render(source)
                text = _JUSTIFIED.sub(" ", extract(rendered, "text/plain", charset="utf-8").content)
                name, _, number = page.rpartition(".")
                yield Document(page, f"{name}({number})", text, str(path.relative_to(root)))

    return documents


def _render(source: bytes) -> bytes:
    """The page as `man` prints it, without bold, underline, hyphenation or page breaks, in
    lines wide enough that few sentences are cut."""
    return subprocess.run(
        ["groff", "-k", "-man", "-Tutf8", "-rLL=200n", "-rHY=0", "-rcR=1", "-P-cbou"],
        input=source,
        capture_output=True,
        check=True,
    ).stdout


_JUSTIFIED = re.compile(
    r"(?<=\S) {2,}(?=\S)"
)  # spaces groff adds to justify a line, or to align a header


_NUMBERED = re.compile(
    r"^#{2,4} (?:[A-Z]|\d+)(?:\.\d+)+\. (?P<title>.+?)(?: \{#(?P<anchor>[^}]+)\})?$"
)


def reference_sections(language: str) -> Callable[[Path], Iterator[Document]]:
    """Debian Reference's numbered sections in `language`, id the section's anchor (the same in
    every translation), each holding its text up to the next numbered heading."""

    def documents(root: Path) -> Iterator[Document]:
        folder = root / "usr/share/debian-reference"
        for path in sorted(folder.glob(f"ch*.{language}.html")) + sorted(
            folder.glob(f"ap*.{language}.html")
        ):
            content = extract(path.read_bytes(), "text/html", charset="utf-8").content
            for anchor, title, text in _sections(content):
                if len(text) >= MIN_CHARS and detect(text) == language:
                    yield Document(anchor, title, text, str(path.relative_to(root)))

    return documents


def _sections(markdown: str) -> Iterator[tuple[str, str, str]]:
    """(anchor, title, text) of each numbered section; a `#` line inside a code block is code."""
    current: tuple[str, str] | None = None
    lines: list[str] = []
    fenced = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        match = None if fenced else _NUMBERED.match(line)
        if match and match["anchor"]:
            if current:
                yield current[0], current[1], "\n".join(lines).strip()
            current, lines = (match["anchor"], match["title"]), [match["title"]]
        elif current:
            lines.append(line)
    if current:
        yield current[0], current[1], "\n".join(lines).strip()


def dictionary_definitions(name: str, collection: str) -> Callable[[Path], Iterator[Document]]:
    """The definitions of the dictd dictionary `name` (usr/share/dictd/<name>.index and .dict.dz)
    that `collection`'s question file lists under `documents` as [id, headword, offset, length]
    (dictd's base64 numbers), the headword's line left out of the text."""

    def documents(root: Path) -> Iterator[Document]:
        data = gzip.decompress((root / f"usr/share/dictd/{name}.dict.dz").read_bytes())
        listed = json.loads((CORPORA / f"{collection}-questions.json").read_text("utf-8"))
        for id_, headword, offset, length in listed["documents"]:
            start = _dictd_number(offset)
            body = data[start : start + _dictd_number(length)].decode("utf-8", "replace")
            text = "\n".join(line.strip() for line in body.split("\n")[1:]).strip()
            yield Document(
                id_, headword, re.sub(r"\n{3,}", "\n\n", text), f"usr/share/dictd/{name}.dict.dz"
            )

    return documents


_DICTD_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def _dictd_number(digits: str) -> int:
    value = 0
    for digit in digits:
        value = value * 64 + _DICTD_DIGITS.index(digit)
    return value


COLLECTIONS = {
    c.name: c
    for c in (
        Collection(
            "debian-reference-fr",
            "debian-reference-fr",
            "2.100",
            "fr",
            "Debian Reference (Osamu Aoki), French translation: one numbered section a document",
            reference_sections("fr"),
        ),
        Collection(
            "manpages-de",
            "manpages-de",
            "4.18.1-1",
            "de",
            "German man pages of sections 5 (files) and 8 (administration), manpages-l10n",
            man_pages("usr/share/man/de", ("5", "8")),
        ),
        Collection(
            "manpages-es",
            "manpages-es",
            "4.18.1-1",
            "es",
            "Spanish man pages of every section, manpages-l10n",
            man_pages("usr/share/man/es", ("1", "3", "4", "5", "6", "7", "8")),
        ),
        Collection(
            "manpages-ja",
            "manpages-ja",
            "0.5.0.0.20221215+dfsg-1",
            "ja",
            "Japanese man pages of sections 5 and 8, JM Project",
            man_pages("usr/share/man/ja", ("5", "8")),
        ),
        Collection(
            "manpages-en",
            "manpages",
            "6.03-2",
            "en",
            "English man pages of the Linux man-pages project as Debian ships them (every section)",
            man_pages("usr/share/man", ("1", "2", "3", "4", "5", "6", "7", "8")),
        ),
        Collection(
            "foldoc",
            "dict-foldoc",
            "20230119-1",
            "en",
            "Free On-line Dictionary of Computing: one definition a document, 1,800 drawn at random",  # noqa: E501
            dictionary_definitions("foldoc", "foldoc"),
        ),
        Collection(
            "jargon",
            "dict-jargon",
            "4.4.7-3.1",
            "en",
            "The Jargon File 4.4.7: one entry a document, every entry of 300 characters or more",
            dictionary_definitions("jargon", "jargon"),
        ),
        Collection(
            "wordnet",
            "dict-wn",
            "1:3.0-37",
            "en",
            "WordNet 3.0, an English dictionary: one entry a document, 1,800 drawn at random",
            dictionary_definitions("wn", "wordnet"),
        ),
    )
}


def package_version(root: Path, package: str) -> str:
    """The version of an unpacked package, from the first line of its Debian changelog."""
    doc = root / "usr/share/doc" / package
    for name in ("changelog.Debian.gz", "changelog.gz"):
        if (doc / name).is_file():
            first = gzip.decompress((doc / name).read_bytes()).split(b"\n", 1)[0].decode()
            if match := re.match(r"\S+ \(([^)]+)\)", first):
                return match[1]
    return ""


def build(
    collection: Collection, root: Path, out: Path, questions: list[dict] | None = None
) -> Built:
    """Write `out/<name>/` from the package unpacked at `root` (`dpkg -x`) with `questions`
    (default:
    the collection's). A question whose judged document is not in the corpus is an error: the
    package is not the one it was written against."""
    found = package_version(root, collection.package)
    if found and found != collection.version:
        raise CollectionError(
            f"{collection.name}: {root} holds {collection.package} {found}, but the questions were "
            f"written against {collection.version}; unpack that version (apt-get download "
            f"{collection.package}={collection.version})."
        )
    if questions is None:
        questions = json.loads(collection.questions.read_text(encoding="utf-8"))["questions"]
    corpus = list(collection.documents(root))
    ids = [row.id for row in corpus]
    if len(set(ids)) != len(ids):
        raise CollectionError(f"{collection.name}: two documents share an id in {root}.")
    kept = set(ids)
    missing = sorted({doc for q in questions for doc in q["judged"]} - kept)
    if missing:
        raise CollectionError(
            f"{collection.name}: judged documents {missing[:5]!r} are not in the corpus read from "
            f"{root}; the questions were written against {collection.package} {collection.version}."
        )
    folder = out / collection.name
    write_beir(
        folder,
        [{"_id": d.id, "title": d.title, "text": d.text} for d in corpus],
        [{"_id": q["id"], "text": q["text"]} for q in questions],
        [(q["id"], doc) for q in questions for doc in q["judged"]],
    )
    return Built(collection.name, collection.language, len(corpus), len(questions), folder)


HANDBOOK = "debian-handbook"


def build_handbook(root: Path, out: Path, languages: list[str]) -> list[Built]:
    """Write `out/debian-handbook/<language>/` from the unpacked `debian-handbook` package."""
    folder = out / HANDBOOK
    return [
        Built(f"{HANDBOOK}/{b.language}", b.language, b.translated, b.queries, folder / b.language)
        for b in handbook.build(root / "usr/share/doc/debian-handbook/html", folder, languages)
    ]


def write_beir(
    folder: Path, corpus: list[dict], queries: list[dict], qrels: list[tuple[str, str]]
) -> None:
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    _jsonl(folder / "corpus.jsonl", corpus)
    _jsonl(folder / "queries.jsonl", queries)
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{query}\t{doc}\t1\n" for query, doc in qrels),
        encoding="utf-8",
    )


def unpack(package: str, into: Path) -> Path:
    """`into/<package>/`, the package unpacked there by `apt-get download` and `dpkg -x` unless it
    already is (a folder of that name is taken as the package's root)."""
    root = into / package
    if root.is_dir():
        return root
    into.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run(["apt-get", "download", package], cwd=into, check=True, capture_output=True)
        [deb] = into.glob(f"{package}_*.deb")
        subprocess.run(["dpkg", "-x", str(deb), str(root)], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError, ValueError) as error:
        raise CollectionError(
            f"Could not fetch and unpack the Debian package {package!r} ({error}); "
            f"unpack it yourself with dpkg -x into {root}."
        ) from error
    return root


def _jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text(
        "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8"
    )
