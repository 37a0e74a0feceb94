"""kb_answer_bench end to end on a tiny corpus of claims: both namespaces ingested through the real
pipeline,
the gate's figures (and that they move with its rule removed), the checker against labels (and a
planted
wrong citation caught), and the latency before a model on loopback (a scripted chat-completions
server:
what is timed is the product's side)."""

import io
import json

import pytest
from django.core.management import CommandError, call_command

from evaluation.answer_bench import LABELS, abstention, choose_share
from kb.conf import kb_settings
from kb.models import AnswerLog, Document
from tests.answers.scripted_model import Reply, ScriptedModel

pytestmark = pytest.mark.django_db(transaction=True)

DOCS = [
    (
        "e1",
        "Pumpkin soup",
        "Roast the pumpkin, then blend it with stock, cream and nutmeg; the soup serves 4.",
    ),
    (
        "e2",
        "Flat tyres",
        "Fix a flat bicycle tyre by patching the inner tube and pumping it to 3 bar.",
    ),
    ("e3", "Sourdough", "A starter of flour and water leavens sourdough bread over 12 hours."),
    (
        "o1",
        "Connection errors",
        "If you see ERR_CONNECTION_REFUSED the server is not listening on the port.",
    ),
    ("o2", "Tide tables", "Tide tables list the times of high and low water for each harbour."),
    (
        "o3",
        "Beekeeping",
        "A hive needs a dry site sheltered from the wind, facing the morning sun.",
    ),
]
CLAIMS = [
    ("c1", "Pumpkin soup is made by roasting pumpkin and blending it with stock and cream.", "e1"),
    ("c2", "A flat bicycle tyre is fixed by patching its inner tube.", "e2"),
    ("c3", "Sourdough bread is leavened by a starter of flour and water.", "e3"),
]


def write_corpus(folder):
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "\n".join(json.dumps({"_id": i, "title": t, "text": x}) for i, t, x in DOCS)
    )
    (folder / "queries.jsonl").write_text(
        "\n".join(json.dumps({"_id": q, "text": t}) for q, t, _ in CLAIMS)
    )
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, _, d in CLAIMS)
    )
    labels = {
        "cases": [
            {
                "sources": {"1": "e1", "2": "e2"},
                "sentences": [
                    {
                        "text": "Roast the pumpkin, then blend it with stock, cream and nutmeg. [1]",  # noqa: E501
                        "label": "supported",
                        "kind": "quote",
                    },
                    {
                        "text": "The pumpkin soup serves 6. [1]",
                        "label": "unsupported",
                        "kind": "partly-wrong",
                    },
                    {
                        "text": "Patch the inner tube to fix a flat bicycle tyre. [1]",
                        "label": "unsupported",
                        "kind": "wrong-source",
                    },
                    {
                        "text": "Patch the inner tube to fix a flat bicycle tyre. [2]",
                        "label": "supported",
                        "kind": "other-source",
                    },
                ],
            }
        ]
    }
    (folder / "labels.json").write_text(json.dumps(labels))


def run(*args) -> tuple[dict, str]:
    out = io.StringIO()
    call_command("kb_answer_bench", *args, "--json", stdout=out, stderr=io.StringIO())
    lines = out.getvalue().strip().splitlines()
    return json.loads(lines[-1]), "\n".join(lines[:-1])


def test_abstention_counts_abstaining_as_the_positive_class():
    figures = abstention(answerable=[True, True, False, True], unanswerable=[False, False, True])
    assert figures["abstention_precision"] == pytest.approx(
        2 / 3, abs=1e-4
    )  # 2 right of 3 abstentions
    assert figures["abstention_recall"] == pytest.approx(2 / 3, abs=1e-4)  # 2 of 3 unanswerable
    assert figures["answered_answerable"] == pytest.approx(3 / 4, abs=1e-4)
    assert (
        abstention([True], [True])["abstention_precision"] is None
    )  # never abstained: no precision


def test_the_bench_on_a_tiny_corpus(tmp_path, settings):
    write_corpus(tmp_path / "tiny")
    with ScriptedModel(
        [Reply(text=["Roast the pumpkin, then blend it with stock and cream [1]."])]
    ) as model:
        settings.KB_ANSWER_URL, settings.KB_ANSWER_MODEL = model.url, model.model
        kb_settings.cache_clear()
        try:
            report, text = run(
                "--beir",
                str(tmp_path / "tiny"),
                "--labels",
                str(tmp_path / "tiny" / "labels.json"),
                "--latency-queries",
                "2",
            )
        finally:
            kb_settings.cache_clear()

    # the unanswerable namespace is the corpus without every claim's evidence
    assert Document.objects.filter(namespace__slug="bench-tiny").count() == 6
    assert set(
        Document.objects.filter(namespace__slug="bench-tiny-no-evidence").values_list(
            "ref", flat=True
        )
    ) == {"o1", "o2", "o3"}

    gate = report["gate"]["variants"]
    assert gate["gate"]["claims"] == {"answerable": 3, "unanswerable": 3}
    assert gate["gate"]["abstained"]["unanswerable"] >= 1, report[
        "gate"
    ]  # nothing on pumpkins is left to cite
    assert gate["no gate"]["abstention_recall"] == 0  # the gate's rule removed: the figures move
    assert gate["no gate"]["abstained"] == {"answerable": 0, "unanswerable": 0}
    assert gate["gate"]["abstention_recall"] > gate["no gate"]["abstention_recall"]

    citations = report["citations"]
    assert citations["sentences"] == 4 and citations["agree"] == 4, citations["disagreements"]
    assert citations["planted_wrong_citations"] == {"planted": 2, "caught": 2}

    latency = report["latency"]
    assert latency["answers"] == 2 and latency["errors"] == {}
    assert (
        0 < latency["before_model"]["p95_ms"]
        and latency["before_model"]["p50_ms"] <= latency["before_model"]["p95_ms"]
    )
    assert len(model.requests) == 2  # only answers the gate let through reached the model
    assert AnswerLog.objects.filter(answered=True).count() == 2

    assert "citation checker vs hand labels: 4 of 4 sentences agree" in text
    assert "held-out labels: 4 of 4 (100.0%)" in text  # a case without a split is held out
    assert (
        "planted wrong citations (a supported sentence cited to the other source): 2 of 2 caught"
        in text
    )
    assert "latency the product adds before the model" in text


@pytest.mark.parametrize(
    "agree, chosen",
    [
        ({0.5: 3, 0.55: 5, 0.6: 4}, 0.55),
        ({0.5: 5, 0.55: 5, 0.6: 5, 0.65: 4}, 0.55),  # a plateau's middle
        ({0.5: 5, 0.55: 5, 0.6: 4, 0.65: 5, 0.7: 5, 0.75: 5}, 0.7),  # the longest plateau's
    ],
    ids=["peak", "plateau", "longest-plateau"],
)
def test_the_threshold_is_chosen_from_the_tuning_agreement_alone(agree, chosen):
    assert choose_share(agree) == chosen


def test_a_folder_without_a_corpus_is_refused(tmp_path):
    with pytest.raises(CommandError, match="holds no corpus.jsonl"):
        call_command("kb_answer_bench", "--beir", str(tmp_path), stdout=io.StringIO())


def test_the_shipped_labels_name_real_scifact_documents_and_hold_100_sentences_or_more():
    labels = json.loads(LABELS.read_text())
    sentences = [s for case in labels["cases"] for s in case["sentences"]]
    assert len(sentences) >= 100
    assert {s["label"] for s in sentences} == {"supported", "unsupported"}
    assert {"partly-wrong", "wrong", "wrong-source"} <= {
        s["kind"] for s in sentences
    }  # wrong on purpose
    for case in labels["cases"]:
        assert set(case["sources"]) == {"1", "2"} and all(
            ref.isdigit() for ref in case["sources"].values()
        )
    halves = {
        split: sum(len(c["sentences"]) for c in labels["cases"] if c["split"] == split)
        for split in ("tuning", "held-out", "fresh")
    }
    assert min(halves.values()) >= 50 and {c["split"] for c in labels["cases"]} == set(halves)
