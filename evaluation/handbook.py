"""Build one BEIR folder per language from The Debian Administrator's Handbook (`debian-handbook`).

Translations are partial, and a page left in English sits in the translated tree, so a page is kept
for a language only when its text is detected in it; a language's queries are the questions of its
translated pages. `build_mix` prefixes ids with their language, as a two-language manual;
`build_unaccented` types the questions without accents, as many people do.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from ingest.evaluate import extract
from kb.language_detection import detect
from kb.lookalikes import unaccented

QUESTIONS = Path(__file__).with_name("corpora") / "debian-handbook-questions.json"
# the book's folder of each language the questions are written in
FOLDERS = {
    "en": "en-US",
    "de": "de-DE",
    "fr": "fr-FR",
    "es": "es-ES",
    "pt": "pt-BR",
    "it": "it-IT",
    "ja": "ja-JP",
    "zh": "zh-CN",
    "ar": "ar-MA",
    "fa": "fa-IR",
    "ru": "ru-RU",
    "id": "id-ID",
    "sv": "sv-SE",
    "ca": "ca-ES",
}
MIN_CHARS = 300  # shorter pages are tables of contents and title pages


@dataclass(frozen=True)
class Built:
    language: str
    pages: int  # pages in the book's folder
    translated: int  # of them, in the language: the corpus
    queries: int


def build(html: Path, out: Path, languages: list[str]) -> list[Built]:
    """Write `out/<language>/` for each language from the book's `html` folder (the package's
    /usr/share/doc/debian-handbook/html)."""
    questions = json.loads(QUESTIONS.read_text(encoding="utf-8"))["questions"]
    built = []
    for language in languages:
        pages = sorted((html / FOLDERS[language]).glob("*.html"))
        corpus = []
        for page in pages:
            extracted = extract(page.read_bytes(), "text/html", charset="utf-8")
            if len(extracted.content) >= MIN_CHARS and detect(extracted.content) == language:
                corpus.append(
                    {"_id": page.stem, "title": extracted.title, "text": extracted.content}
                )
        kept = {row["_id"] for row in corpus}
        queries = [q for q in questions if q["page"] in kept]
        folder = out / language
        (folder / "qrels").mkdir(parents=True, exist_ok=True)
        _jsonl(folder / "corpus.jsonl", corpus)
        _jsonl(
            folder / "queries.jsonl",
            [{"_id": q["id"], "text": q["text"][language]} for q in queries],
        )
        (folder / "qrels" / "test.tsv").write_text(
            "query-id\tcorpus-id\tscore\n"
            + "".join(f"{q['id']}\t{q['page']}\t1\n" for q in queries),
            encoding="utf-8",
        )
        built.append(Built(language, len(pages), len(corpus), len(queries)))
    return built


def build_mix(out: Path, languages: list[str]) -> Path:
    """Write `out/mix-<languages>/` from the languages' folders under `out` (built first)."""
    folder = out / "mix-{}".format("-".join(languages))
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    corpus, queries, qrels = [], [], ["query-id\tcorpus-id\tscore\n"]
    for language in languages:
        source = out / language
        corpus += [
            {**row, "_id": f"{language}:{row['_id']}"} for row in _rows(source / "corpus.jsonl")
        ]
        queries += [
            {**row, "_id": f"{language}:{row['_id']}"} for row in _rows(source / "queries.jsonl")
        ]
        for line in (source / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]:
            query, page, score = line.split("\t")
            qrels.append(f"{language}:{query}\t{language}:{page}\t{score}\n")
    _jsonl(folder / "corpus.jsonl", corpus)
    _jsonl(folder / "queries.jsonl", queries)
    (folder / "qrels" / "test.tsv").write_text("".join(qrels), encoding="utf-8")
    return folder


def build_unaccented(out: Path, language: str) -> Path:
    """Write `out/<language>-unaccented/` from `out/<language>/` (built first): the same pages and
    judgements, each question without its accents."""
    source, folder = out / language, out / f"{language}-unaccented"
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source / "corpus.jsonl", folder / "corpus.jsonl")
    shutil.copyfile(source / "qrels" / "test.tsv", folder / "qrels" / "test.tsv")
    _jsonl(
        folder / "queries.jsonl",
        [{**row, "text": unaccented(row["text"])} for row in _rows(source / "queries.jsonl")],
    )
    return folder


def _rows(path: Path) -> list[dict]:
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def _jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text(
        "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8"
    )
