"""docs/benchmarks.md's search-quality tables say what the committed `kb_bench --json` run says:
a figure edited by hand, or a run committed without its tables, fails here."""

import json
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
RUN = DOCS / "results" / "kb_bench-scifact-dbpedia.json"
ROWS = {  # the start of a table row -> where its figures are in a corpus's result
    "**default": "default_weights",
    "fitted": "fitted",
    "vector channel alone": "vector",
    "lexical channel alone": "lexical",
    "plain RRF": "rrf",
}
TABLES = {"scifact": "| SciFact | nDCG@10", "dbpedia": "| DBpedia-entity subset | nDCG@10"}


def corpus_results() -> dict[str, dict]:
    return {corpus["corpus"]: corpus for corpus in json.loads(RUN.read_text())["corpora"]}


def table_rows(page: str, header: str) -> dict[str, list[float]]:
    """Each row of the table under `header`: its label -> its three figures."""
    lines = page[page.index(header) :].splitlines()[2:]
    rows = {}
    for line in lines:
        if not line.startswith("|"):
            break
        cells = [cell.strip().strip("*") for cell in line.strip("|").split("|")]
        figures = [float(cell) for cell in cells[1:4] if re.fullmatch(r"\d\.\d{4}", cell)]
        if len(figures) == 3:
            rows[cells[0]] = figures
    return rows


def figures_of(result: dict, where: str) -> list[float]:
    found = result[where] if where in result else result["channels"][where]
    return [found["ndcg@10"], found["recall@100"], found["mrr@10"]]


@pytest.mark.parametrize("corpus", TABLES)
def test_the_quality_tables_are_the_committed_run(corpus):
    page = (DOCS / "benchmarks.md").read_text(encoding="utf-8")
    rows = table_rows(page, TABLES[corpus])
    result = corpus_results()[corpus]
    checked = 0
    for start, where in ROWS.items():
        (label,) = [label for label in rows if label.startswith(start.strip("*"))]
        assert rows[label] == figures_of(result, where), (corpus, label)
        checked += 1
    assert checked == len(ROWS)


def test_the_grid_row_is_the_committed_run():
    page = (DOCS / "benchmarks.md").read_text(encoding="utf-8")
    for corpus, name in (("scifact", "SciFact"), ("dbpedia", "DBpedia")):
        row = next(line for line in page.splitlines() if re.match(rf"\| {name} \| \**0\.", line))
        shown = [float(cell.strip().strip("*")) for cell in row.strip("|").split("|")[1:]]
        grid = corpus_results()[corpus]["fusion"]["grid"]
        assert shown == [grid[w] for w in ("0.0", "0.25", "0.5", "0.75", "1.0")], corpus


def test_a_figure_edited_by_hand_is_caught():
    page = (DOCS / "benchmarks.md").read_text(encoding="utf-8")
    vector = corpus_results()["scifact"]["channels"]["vector"]["ndcg@10"]
    row = "| vector channel alone (HNSW) | "
    edited = page.replace(f"{row}{vector:.4f}", f"{row}{vector + 0.0001:.4f}")
    assert edited != page
    rows = table_rows(edited, TABLES["scifact"])
    (label,) = [label for label in rows if label.startswith("vector channel alone")]
    assert rows[label] != figures_of(corpus_results()["scifact"], "vector")
