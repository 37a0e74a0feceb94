"""Measure how often the no-results correction helps, on questions given one typo each.

The typo goes in the longest word (`--every-word`: in each word of five letters or more). `repaired`
and `harmed` compare the top document with the original question's; `strong` and `shown` say what
the search page does (a cited document offers no correction). The `no_word_*` counts are for
misspelt queries none of whose words occurs in the namespace. Questions come from an eval suite
(`cases[].question`) or a BEIR queries.jsonl (`text`).
"""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from kb.models import Namespace
from retrieval.lookups import spelling_correction
from retrieval.ranker import NO_SHARED_TERM
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
    typo = misspelt(word.group(0), index)
    return None if typo is None else question[: word.start()] + typo + question[word.end() :]


def with_typos(question: str, index: int) -> str | None:
    """A deterministic typo in every word of five letters or more; None without one."""
    typos = [0]

    def respell(match) -> str:
        typo = misspelt(match.group(0), index + typos[0]) if len(match.group(0)) >= 5 else None
        typos[0] += typo is not None
        return typo or match.group(0)

    typed = WORD_RE.sub(respell, question)
    return typed if typos[0] else None


def misspelt(text: str, index: int) -> str | None:
    """`text` with one letter deleted, swapped, substituted or doubled (never the first), by
    `index`; None when that leaves it as it was."""
    at = 1 + index % (len(text) - 2)
    operation = OPERATIONS[index % len(OPERATIONS)]
    if operation == "delete":
        typo = text[:at] + text[at + 1 :]
    elif operation == "swap":
        typo = text[:at] + text[at + 1] + text[at] + text[at + 2 :]
    elif operation == "substitute":
        letter = NEIGHBOURS[(NEIGHBOURS.find(text[at].lower()) + 1) % len(NEIGHBOURS)]
        typo = text[:at] + letter + text[at + 1 :]
    else:
        typo = text[:at] + text[at] + text[at:]
    return None if typo.lower() == text.lower() else typo


def _questions(path: Path, limit: int) -> list[str]:
    if path.suffix == ".jsonl":
        lines = path.read_text().splitlines()
        return [json.loads(line)["text"] for line in lines if line.strip()][:limit]
    return [case["question"] for case in json.loads(path.read_text())["cases"]][:limit]


def _top(query: str, namespace: str):
    hits = search(query, namespace, limit=3, log=False).hits
    return hits[0].document_id if hits else None


def _as_the_page_sees(query: str, namespace: str) -> tuple[bool, bool, float | None]:
    """Whether the search page cites a document for `query`, whether none of its words occurs in
    the namespace, and its best cosine."""
    result = search(query, namespace, limit=10, group="document", log=False)
    cosine = max(
        (d.best_cosine for d in result.documents if d.best_cosine is not None), default=None
    )
    return bool(result.cited), NO_SHARED_TERM in result.summary.channel_notes, cosine


class Command(BaseCommand):
    help = (
        "Measure how often the search page's spelling correction helps on misspelt real questions."
    )

    def add_arguments(self, parser):
        parser.add_argument("--namespace", required=True)
        parser.add_argument(
            "--questions",
            required=True,
            type=Path,
            help="An eval suite JSON or a BEIR queries.jsonl",
        )
        parser.add_argument("--limit", type=int, default=100)
        parser.add_argument(
            "--every-word", action="store_true", help="A typo in every word of five letters or more"
        )
        parser.add_argument(
            "--show", action="store_true", help="Print each question, typo and correction"
        )

    def handle(self, *args, namespace, questions, limit, every_word, show, **options):
        space = Namespace.objects.filter(slug=namespace).first()
        if space is None:
            raise CommandError(f"No namespace {namespace!r}.")
        counts = dict.fromkeys(
            (
                "questions",
                "offered",
                "restored",
                "typo_ok",
                "repaired",
                "harmed",
                "strong",
                "shown",
                "no_word",
                "no_word_strong",
                "no_word_shown",
                "no_word_typo_ok",
            ),
            0,
        )
        for index, question in enumerate(_questions(questions, limit)):
            typo = (with_typos if every_word else with_typo)(question, index)
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
            strong, no_word, cosine = _as_the_page_sees(typo, namespace)
            shown = not strong and bool(spelling_correction(typo, namespace))
            counts["strong"] += strong
            counts["shown"] += shown
            if no_word:
                counts["no_word"] += 1
                counts["no_word_strong"] += strong
                counts["no_word_shown"] += shown
                counts["no_word_typo_ok"] += typo_top == original_top
            if show:
                cosine_shown = "-" if cosine is None else f"{cosine:.3f}"
                self.stdout.write(
                    f"{typo!r} -> {corrected!r} (was {question!r}; best cosine {cosine_shown}, "
                    f"{'no word known, ' if no_word else ''}{'strong' if strong else 'weak'}, "
                    f"{'correction shown' if shown else 'none shown'}, "
                    f"top {'right' if typo_top == original_top else 'wrong'})"
                )
        self.stdout.write(json.dumps(counts))
