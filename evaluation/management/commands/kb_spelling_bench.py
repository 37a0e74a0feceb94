"""How often the no-results correction helps: each question gets one typo in its longest word,
and the speller's correction is compared with the question as written.

Per question: `offered` (a correction came back), `restored` (it is the question as written),
and by the top document: `typo_ok` (the misspelt query already finds the original's top
document), `repaired` (it does not, the correction does), `harmed` (it did, the correction
does not). Questions: an eval suite (`cases[].question`) or a BEIR queries.jsonl (`text`).
"""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from kb.models import Namespace
from retrieval.service import search
from retrieval.spelling import WORD_RE, correct_query

OPERATIONS = ("delete", "swap", "substitute", "insert")
NEIGHBOURS = "qwertyuiopasdfghjklzxcvbnm"


def with_typo(question: str, index: int) -> str | None:
    """One deterministic typo in the longest word of five letters or more; None without one."""
    words = [m for m in WORD_RE.finditer(question) if len(m.group(0)) >= 5]
    if not words:
        return None
    word = max(words, key=lambda m: (len(m.group(0)), -m.start()))
    text, at = word.group(0), 1 + index % (len(word.group(0)) - 2)  # never the first letter
    operation = OPERATIONS[index % len(OPERATIONS)]
    if operation == "delete":
        typo = text[:at] + text[at + 1:]
    elif operation == "swap":
        typo = text[:at] + text[at + 1] + text[at] + text[at + 2:]
    elif operation == "substitute":
        letter = NEIGHBOURS[(NEIGHBOURS.find(text[at].lower()) + 1) % len(NEIGHBOURS)]
        typo = text[:at] + letter + text[at + 1:]
    else:
        typo = text[:at] + text[at] + text[at:]
    if typo.lower() == text.lower():
        return None
    return question[:word.start()] + typo + question[word.end():]


def _questions(path: Path, limit: int) -> list[str]:
    if path.suffix == ".jsonl":
        lines = path.read_text().splitlines()
        return [json.loads(line)["text"] for line in lines if line.strip()][:limit]
    return [case["question"] for case in json.loads(path.read_text())["cases"]][:limit]


def _top(query: str, namespace: str):
    hits = search(query, namespace, limit=3, log=False).hits
    return hits[0].document_id if hits else None


class Command(BaseCommand):
    help = "Measure how often the search page's spelling correction helps on misspelt real questions."

    def add_arguments(self, parser):
        parser.add_argument("--namespace", required=True)
        parser.add_argument("--questions", required=True, type=Path, help="An eval suite JSON or a BEIR queries.jsonl")
        parser.add_argument("--limit", type=int, default=100)
        parser.add_argument("--show", action="store_true", help="Print each question, typo and correction")

    def handle(self, *args, namespace, questions, limit, show, **options):
        space = Namespace.objects.filter(slug=namespace).first()
        if space is None:
            raise CommandError(f"No namespace {namespace!r}.")
        counts = dict.fromkeys(("questions", "offered", "restored", "typo_ok", "repaired", "harmed"), 0)
        for index, question in enumerate(_questions(questions, limit)):
            typo = with_typo(question, index)
            if typo is None:
                continue
            counts["questions"] += 1
            corrected = correct_query(space.pk, typo)
            original_top, typo_top = _top(question, namespace), _top(typo, namespace)
            counts["typo_ok"] += typo_top == original_top
            if corrected:
                counts["offered"] += 1
                counts["restored"] += corrected.lower() == question.lower()
                fixed_top = _top(corrected, namespace)
                counts["repaired"] += typo_top != original_top and fixed_top == original_top
                counts["harmed"] += typo_top == original_top and fixed_top != original_top
            if show:
                self.stdout.write(f"{typo!r} -> {corrected!r} (was {question!r})")
        self.stdout.write(json.dumps(counts))
