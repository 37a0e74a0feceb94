"""The multilingual benchmark corpora: built from real translated pages of the Debian
Administrator's Handbook by the product's extractor, keeping a page for a language only when it
is written in it, with the questions whose page was kept, in that language."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

PAGES = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "languages"


def test_each_language_keeps_its_translated_pages_and_their_questions(tmp_path):
    html = tmp_path / "html"
    for folder, fixture in (("de-DE", "user-space.de-DE.html"), ("ar-MA", "user-space.ar-MA.html")):
        (html / folder).mkdir(parents=True)
        # the fixture page stands for the page q01 is judged to; the book's own English page sits
        # in the German folder as an untranslated page does
        shutil.copy(PAGES / fixture, html / folder / "sect.creating-accounts.html")
    shutil.copy(PAGES / "user-space.en-US.html", html / "de-DE" / "sect.hotplug.html")
    call_command(
        "kb_handbook_corpus",
        "--html",
        str(html),
        "--out",
        str(tmp_path / "out"),
        "--languages",
        "de",
        "ar",
        "--mix",
        "de",
        "ar",
        "--unaccented",
        "de",
    )
    german = [
        json.loads(line)
        for line in (tmp_path / "out" / "de" / "corpus.jsonl").read_text().splitlines()
    ]
    assert [row["_id"] for row in german] == [
        "sect.creating-accounts"
    ]  # the English page is left out
    assert "Kindprozess" in german[0]["text"]
    queries = [
        json.loads(line)
        for line in (tmp_path / "out" / "de" / "queries.jsonl").read_text().splitlines()
    ]
    assert queries == [
        {
            "_id": "q01",
            "text": "wie lege ich ein neues Benutzerkonto an und füge es einer Gruppe hinzu",
        }
    ]
    qrels = (tmp_path / "out" / "de" / "qrels" / "test.tsv").read_text().splitlines()
    assert qrels == ["query-id\tcorpus-id\tscore", "q01\tsect.creating-accounts\t1"]
    arabic = (tmp_path / "out" / "ar" / "queries.jsonl").read_text()
    assert "كيف أنشئ حساب مستخدم جديد" in arabic
    # both languages in one corpus, each question judged to its own language's page
    mixed = tmp_path / "out" / "mix-de-ar"
    pages = [json.loads(line)["_id"] for line in (mixed / "corpus.jsonl").read_text().splitlines()]
    assert pages == ["de:sect.creating-accounts", "ar:sect.creating-accounts"]
    assert (mixed / "qrels" / "test.tsv").read_text().splitlines()[1:] == [
        "de:q01\tde:sect.creating-accounts\t1",
        "ar:q01\tar:sect.creating-accounts\t1",
    ]
    questions = [
        json.loads(line)["_id"] for line in (mixed / "queries.jsonl").read_text().splitlines()
    ]
    assert questions == ["de:q01", "ar:q01"]
    # the German questions typed without accents, over the same pages and judgements
    plain = tmp_path / "out" / "de-unaccented"
    assert [json.loads(line) for line in (plain / "queries.jsonl").read_text().splitlines()] == [
        {
            "_id": "q01",
            "text": "wie lege ich ein neues Benutzerkonto an und fuge es einer Gruppe hinzu",
        }
    ]
    assert (plain / "corpus.jsonl").read_text() == (
        tmp_path / "out" / "de" / "corpus.jsonl"
    ).read_text()
    assert (plain / "qrels" / "test.tsv").read_text().splitlines() == qrels


def test_a_mix_needs_two_of_the_languages_built(tmp_path):
    with pytest.raises(CommandError, match="two or more"):
        call_command(
            "kb_handbook_corpus",
            "--html",
            str(tmp_path),
            "--out",
            str(tmp_path / "out"),
            "--languages",
            "de",
            "--mix",
            "de",
            "ar",
        )


def test_unaccented_questions_need_their_language_built(tmp_path):
    with pytest.raises(CommandError, match="among those built"):
        call_command(
            "kb_handbook_corpus",
            "--html",
            str(tmp_path),
            "--out",
            str(tmp_path / "out"),
            "--languages",
            "de",
            "--unaccented",
            "fr",
        )
