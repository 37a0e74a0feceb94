"""The research commands of evaluation/ run end to end on a small real corpus: each prints its
table, with figures that can be checked by hand where the corpus makes them certain."""

import json
import re
import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command, get_commands
from django.core.management.base import CommandError

from kb.conf import _not_a_cosine
from kb.embedding.embedders import get_embedder, strong_floor
from tests.corpus import CORPUS
from tests.pgserver import current_database_url

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "documents"
FIGURE = r"(0\.\d{4}|1\.0000)"  # a mean nDCG@10


def command(*args, **options) -> list[str]:
    out = StringIO()
    call_command(*args, stdout=out, **options)
    return out.getvalue().splitlines()


def beir(folder: Path, queries: dict[str, tuple[str, str]]) -> Path:
    """A BEIR folder over CORPUS: query id -> (text, the one relevant document's ref)."""
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "".join(
            json.dumps({"_id": ref, "title": title, "text": text}) + "\n"
            for ref, (title, text) in CORPUS.items()
        )
    )
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": qid, "text": text}) + "\n" for qid, (text, _) in queries.items())
    )
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n"
        + "".join(f"{qid}\t{ref}\t1\n" for qid, (_, ref) in queries.items())
    )
    return folder


def test_the_strong_cosine_advice_names_a_command_that_exists():
    message = _not_a_cosine(2).message
    named = re.search(r"manage\.py (\w+)", message).group(1)
    assert named == "kb_strong_cosine" and get_commands()[named] == "evaluation"


def test_strong_cosine_reads_the_best_cosine_of_own_and_off_topic_questions(corpus, tmp_path):
    own = tmp_path / "own.jsonl"
    own.write_text(
        "".join(
            json.dumps({"text": t}) + "\n"
            for t in ("how do I make pumpkin soup", "what is new in Qwen 3.8")
        )
    )
    off = tmp_path / "suite.json"
    off.write_text(
        json.dumps({"cases": [{"question": "the tax rules for a sole trader in Norway"}]})
    )
    lines = command(
        "kb_strong_cosine", namespace="tenant:a", questions=str(own), off_topic=[str(off)]
    )
    assert (
        lines[0]
        == f"tenant:a, {get_embedder().model_id}, strong from cosine 0.35 (the model's own, "
        "measured)"
    )
    assert strong_floor() == (0.35, "the model's own, measured")
    rows = {line.split(" (")[0]: line.split(" | ") for line in lines[2:]}
    assert (
        set(rows) == {"own", "off-topic"} and rows["own"][1] == "2" and rows["off-topic"][1] == "1"
    )
    own_median = float(rows["own"][2].split(" / ")[1])
    off_median = float(rows["off-topic"][2].split(" / ")[1])
    assert own_median > off_median  # the corpus answers its own questions
    assert rows["own"][3] == "100%" and rows["off-topic"][3] == "0%"

    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(CommandError, match="holds no questions"):
        command(
            "kb_strong_cosine",
            namespace="tenant:a",
            questions=str(tmp_path / "empty.jsonl"),
            off_topic=[str(off)],
        )


def test_bm25_per_config_grades_both_ways_per_query_language(corpus, tmp_path):
    folder = beir(
        tmp_path / "mini",
        {"en:1": ("pumpkin soup nutmeg", "pumpkin"), "en:2": ("ERR_CONNECTION_REFUSED", "errors")},
    )
    lines = command("kb_bm25_per_config", namespace="tenant:a", beir=str(folder))
    assert lines[0].startswith("tenant:a: passages per configuration {'english': 6")
    graded = {
        match.group(1, 2): (match.group(3), match.group(4))
        for match in (
            re.fullmatch(
                r"  BM25 nDCG@10, statistics (namespace|per configuration) +(\S+) +(\S+) \((\d+) "
                r"queries\)",
                line,
            )
            for line in lines[1:]
        )
    }
    # one configuration here, so both ways weigh alike; each query's one document is ranked first
    assert graded == {
        (way, language): ("1.0000", "2")
        for way in ("namespace", "per configuration")
        for language in ("all", "en")
    }


def test_fusion_rules_prints_a_figure_per_rule(corpus, tmp_path, capsys):
    suite = tmp_path / "suite.json"
    suite.write_text(
        json.dumps(
            {
                "version": 1,
                "cases": [
                    {
                        "id": "soup",
                        "question": "how do I cook pumpkin soup",
                        "expect": {"sourceIncludes": "pumpkin"},
                    },
                    {
                        "id": "refused",
                        "question": "ERR_CONNECTION_REFUSED",
                        "expect": {"sourceIncludes": "errors"},
                    },
                ],
            }
        )
    )
    call_command("kb_fusion_rules", namespace="tenant:a", suite=str(suite))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("tenant:a: word pieces per word ")
    assert lines[1] == "tenant:a: 2 judged queries; nDCG@10 per rule"
    figures = {
        line[:42].strip(): line[42:].strip() for line in lines[2:] if "corroboration" not in line
    }
    assert {
        "w = 0.0",
        "w = 0.5",
        "w = 1.0",
        "0 for a question, else 0.5",
        "min-max fusion (TM2C2), w = 0.5",
        "two-Gaussian posteriors, w = 0.5",
        "embedding feedback (3, 0.3), w = 0.5",
    } <= set(figures)
    assert all(re.fullmatch(FIGURE, value) for value in figures.values()), figures
    assert (
        figures["w = 0.5"] == "1.0000"
    )  # both answers are found first by the product's own weight


@pytest.mark.skipif(
    shutil.which("tesseract") is None,
    reason="Tesseract is installed by scripts/test (scripts/ocr.sh)",
)
@pytest.mark.child_process
def test_ocr_bench_reads_a_scan_of_a_real_page_back():
    lines = command("kb_ocr_bench", str(REAL / "asymptote-CAD.pdf"), pages=1, dpi=[300])
    assert re.fullmatch(r"asymptote-CAD\.pdf: pages \[\d+\]", lines[0])
    assert lines[1].startswith("| dpi | pages | word recall (mean) |") and len(lines) == 4
    dpi, pages, recall, worst, seconds, confidence = lines[3].strip("| ").split(" | ")
    assert (dpi, pages) == ("300", "1") and recall == worst
    assert float(recall.rstrip("%")) >= 90 and float(seconds) > 0 and 50 <= int(confidence) <= 100


@pytest.mark.django_db(transaction=True)
def test_profile_requests_times_each_surface_in_a_child(corpus, tmp_path, monkeypatch, capsys):
    """The child is a separate Python reading the test database, as it reads another tree's."""
    folder = beir(
        tmp_path / "mini", {"1": ("pumpkin soup", "pumpkin"), "2": ("qwen release", "qwen38")}
    )
    monkeypatch.setenv("DATABASE_URL", current_database_url())
    call_command(
        "kb_profile_requests",
        namespace="tenant:a",
        beir=str(folder),
        queries=2,
        rounds=1,
        json=True,
    )
    out = capsys.readouterr().out
    report = json.loads(out.splitlines()[-1])["this tree"]
    assert set(report) == {"search", "api", "page"}
    for surface, parts in report.items():
        whole = parts["end to end"]
        assert 0 < whole["p50"] <= whole["p95"], (surface, whole)
        assert parts["search service, all of it"]["mean"] <= whole["mean"]
    assert "| fusion (ranker) |" in out and "| API serialisation (ninja) |" in out
