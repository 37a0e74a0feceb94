"""The held-out benchmark collections (evaluation/collections.py): built from real Debian pages
by the product's extractor, their corpus, queries and judgements agree, and a document keeps its
id from one build to the next."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from evaluation.collections import COLLECTIONS, CollectionError, build

PACKAGES = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "collections"


def _questions(name: str) -> list[dict]:
    return json.loads(COLLECTIONS[name].questions.read_text(encoding="utf-8"))["questions"]


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _built(folder: Path) -> tuple[list[dict], list[dict], list[tuple[str, str]]]:
    qrels = (folder / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()
    assert qrels[0] == "query-id\tcorpus-id\tscore"
    pairs = [tuple(line.split("\t")[:2]) for line in qrels[1:]]
    return _rows(folder / "corpus.jsonl"), _rows(folder / "queries.jsonl"), pairs


@pytest.mark.parametrize("name", list(COLLECTIONS))
def test_a_questions_file_names_its_collection_and_where_each_judged_page_is(name):
    collection = COLLECTIONS[name]
    about = json.loads(collection.questions.read_text(encoding="utf-8"))
    assert (about["package"], about["version"], about["language"]) == (
        collection.package,
        collection.version,
        collection.language,
    )
    questions = about["questions"]
    assert len(questions) >= 30
    assert len({q["id"] for q in questions}) == len(questions)
    assert len({q["text"] for q in questions}) == len(questions)
    for question in questions:
        assert question["judged"] and len(question["files"]) == len(question["judged"])
        assert all(file.startswith("usr/share/") for file in question["files"])


def _subset(name: str, documents: set[str]) -> list[dict]:
    return [q for q in _questions(name) if set(q["judged"]) <= documents]


@pytest.mark.slow  # groff renders each page
def test_man_pages_become_one_document_each_judged_by_the_questions_written_for_them(tmp_path):
    questions = _subset("manpages-de", {"delpart.8", "fsfreeze.8", "wdctl.8"})
    assert [q["id"] for q in questions] == ["q08", "q13", "q19"]
    built = build(COLLECTIONS["manpages-de"], PACKAGES / "manpages-de", tmp_path, questions)
    assert (built.documents, built.queries, built.language) == (3, 3, "de")
    corpus, queries, qrels = _built(tmp_path / "manpages-de")
    assert [(row["_id"], row["title"]) for row in corpus] == [
        ("delpart.8", "delpart(8)"),
        ("fsfreeze.8", "fsfreeze(8)"),
        ("wdctl.8", "wdctl(8)"),
    ]
    delpart = corpus[0]["text"]
    assert "den Kernel anweisen, eine angegebene Partition zu entfernen" in delpart
    assert (
        "\b" not in delpart and ".TH" not in delpart
    )  # rendered, not roff source, and no overstrike
    assert (
        "Der Befehl ist ein einfacher Wrapper" in delpart
    )  # justification's extra spaces are gone
    assert queries == [{"_id": q["id"], "text": q["text"]} for q in questions]
    assert qrels == [("q08", "fsfreeze.8"), ("q13", "delpart.8"), ("q19", "wdctl.8")]
    # built again, the same bytes: ids and text are stable
    first = (tmp_path / "manpages-de" / "corpus.jsonl").read_bytes()
    build(COLLECTIONS["manpages-de"], PACKAGES / "manpages-de", tmp_path / "again", questions)
    assert (tmp_path / "again" / "manpages-de" / "corpus.jsonl").read_bytes() == first


@pytest.mark.slow  # groff renders each page
def test_japanese_man_pages_are_rendered_in_their_script(tmp_path):
    questions = _subset("manpages-ja", {"findfs.8"})
    build(COLLECTIONS["manpages-ja"], PACKAGES / "manpages-ja", tmp_path, questions)
    corpus, queries, qrels = _built(tmp_path / "manpages-ja")
    assert [row["_id"] for row in corpus] == ["findfs.8"]
    assert "ラベルや UUID からファイルシステムを見つける" in corpus[0]["text"]
    assert queries == [{"_id": "q14", "text": "UUID やラベルからデバイス名を探す"}]
    assert qrels == [("q14", "findfs.8")]


@pytest.mark.slow  # groff renders each page
def test_an_alias_page_is_left_out(tmp_path):
    # stpecpy.3 is a one-line `.so man7/string_copying.7`: its text is another page's
    questions = _subset("manpages-en", {"securetty.5"})
    build(COLLECTIONS["manpages-en"], PACKAGES / "manpages", tmp_path, questions)
    corpus, queries, qrels = _built(tmp_path / "manpages-en")
    assert [row["_id"] for row in corpus] == ["securetty.5"]
    assert "list of terminals on which root is allowed to login" in corpus[0]["text"]
    assert qrels == [("q34", "securetty.5")] and [row["_id"] for row in queries] == ["q34"]


def test_debian_reference_is_cut_at_its_numbered_sections_in_french_only(tmp_path):
    collection = COLLECTIONS["debian-reference-fr"]
    questions = _subset(
        "debian-reference-fr",
        {
            "_iproute2_commands",
            "_the_network_address_range_for_the_lan",
            "_finding_optimal_mtu",
            "_the_modern_network_configuration_for_desktop",
        },
    )
    assert [q["id"] for q in questions] == ["q10", "q13", "q27", "q35"]
    build(collection, PACKAGES / "debian-reference-fr", tmp_path, questions)
    corpus, queries, qrels = _built(tmp_path / "debian-reference-fr")
    ids = [row["_id"] for row in corpus]
    assert ids == EXPECTED_REFERENCE_SECTIONS
    sections = dict(zip(ids, corpus, strict=True))
    assert sections["_iproute2_commands"]["title"] == "Commandes Iproute2"
    assert "`ip route`" in sections["_iproute2_commands"]["text"]
    # a section holds its own text up to the next numbered heading, not the next one's
    assert "Iproute2" not in sections["_the_network_address_range_for_the_lan"]["text"]
    assert {doc for _, doc in qrels} <= set(ids)
    assert [row["_id"] for row in queries] == [query for query, _ in qrels]


# chapter 5's 15 numbered sections less "_the_modern_network_configuration_without_gui" (left in
# English) and two of a heading and a line or two ("_the_network_interface_name",
# "_the_low_level_network_configuration")
EXPECTED_REFERENCE_SECTIONS = [
    "_the_basic_network_infrastructure",
    "_the_hostname_resolution",
    "_the_network_address_range_for_the_lan",
    "_the_network_device_support",
    "_the_modern_network_configuration_for_desktop",
    "_gui_network_configuration_tools",
    "_iproute2_commands",
    "_safe_low_level_network_operations",
    "_network_optimization",
    "_finding_optimal_mtu",
    "_wan_tcp_optimization",
    "_netfilter_infrastructure",
]


@pytest.mark.slow  # groff renders each page
def test_a_package_without_a_judged_page_is_refused_by_name(tmp_path):
    with pytest.raises(
        CollectionError,
        match=r"judged documents \['btrfs.8', 'coredump.conf.5'.*manpages-de 4.18.1-1",
    ):
        build(COLLECTIONS["manpages-de"], PACKAGES / "manpages-de", tmp_path)
    with pytest.raises(CommandError, match="are not in the corpus"):
        call_command(
            "kb_collections",
            "build",
            "--out",
            str(tmp_path / "out"),
            "--packages",
            str(PACKAGES),
            "--only",
            "manpages-ja",
        )


def test_another_version_of_the_package_is_refused(tmp_path):
    root = tmp_path / "manpages-de"
    shutil.copytree(PACKAGES / "manpages-de", root)
    (root / "usr/share/doc/manpages-de/changelog.Debian.gz").write_bytes(
        gzip.compress(b"manpages-de (4.21.0-2) unstable; urgency=medium\n")
    )
    with pytest.raises(
        CollectionError, match=r"holds manpages-de 4.21.0-2.*written against 4.18.1-1"
    ):
        build(COLLECTIONS["manpages-de"], root, tmp_path / "out")


def test_the_command_lists_every_collection(capsys):
    call_command("kb_collections", "list")
    listed = capsys.readouterr().out
    for name in [*COLLECTIONS, "debian-handbook"]:
        assert f"{name}: " in listed


@pytest.mark.parametrize("name", ["foldoc", "jargon", "wordnet"])
def test_a_dictionary_collection_lists_every_entry_its_questions_are_judged_to(name):
    about = json.loads(COLLECTIONS[name].questions.read_text(encoding="utf-8"))
    listed = [entry[0] for entry in about["documents"]]
    assert len(set(listed)) == len(listed)
    assert all(len(entry) == 4 for entry in about["documents"])
    judged = {doc for q in about["questions"] for doc in q["judged"]}
    assert judged <= set(listed)
