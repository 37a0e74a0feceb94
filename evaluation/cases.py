"""Judged eval cases made from what readers searched: the curator's report turns a logged
search (and its votes) into a case of the namespace's curated suite."""

from __future__ import annotations

import re

from django.db import transaction

from evaluation.suites import parse_suite
from kb.errors import NotFound
from kb.models import Document, EvalSuite, Namespace, QueryLog
from retrieval.curation import judged_from_feedback, query_results
from retrieval.errors import FeedbackNotAResult

MAX_QUESTION_CHARS = 4000


def curated_suite_name(namespace: str) -> str:
    return f"{namespace} · reader queries"


def make_eval_case(namespace: Namespace, question: str, relevant: list[str],
                   irrelevant: list[str]) -> tuple[EvalSuite, str]:
    """Add a judged case to the namespace's curated suite (made on first use): the documents
    named relevant must come back (`sourceIncludes`, `relevant`, which also feeds the fusion
    fit), the ones named irrelevant must not. The same question again replaces its case."""
    refs = [ref for ref in dict.fromkeys(relevant) if ref]
    if not refs:
        raise FeedbackNotAResult("Pick at least one document that answers the query.")
    known = set(Document.objects.filter(namespace=namespace, ref__in=refs + irrelevant).values_list("ref", flat=True))
    if not set(refs) <= known:
        raise NotFound("A chosen document is not in this namespace.")
    case_id = "reader-" + (re.sub(r"[^a-z0-9]+", "-", question.lower()).strip("-")[:60] or "query")
    expect: dict = {"sourceIncludes": refs, "relevant": refs}
    wrong = [ref for ref in dict.fromkeys(irrelevant) if ref in known and ref not in refs]
    if wrong:
        expect["notSourceIncludes"] = wrong
    case = {"id": case_id, "question": question, "expect": expect}
    with transaction.atomic():
        suite, _ = EvalSuite.objects.select_for_update().get_or_create(
            namespace=namespace, name=curated_suite_name(namespace.slug),
            defaults={"definition": {"version": 1, "defaults": {"topK": 5, "namespace": namespace.slug}, "cases": []}})
        definition = dict(suite.definition)
        cases = [c for c in definition.get("cases", []) if c.get("id") != case_id] + [case]
        definition["cases"] = cases
        parse_suite(definition, namespace=namespace.slug)  # the suite stays runnable
        suite.definition = definition
        suite.save(update_fields=["definition"])
    return suite, case_id


def case_from_logged_search(namespace: Namespace, log_id: int) -> tuple[EvalSuite, str] | None:
    """One click from a row of the curator's report: the logged search becomes a case judged by
    its votes (`judged_from_feedback`). None when nothing came back to judge by: the curator then
    names the answer on the review page."""
    log = QueryLog.objects.filter(pk=log_id, namespace=namespace).first()
    if log is None:
        raise NotFound(f"No logged search {log_id} in {namespace.slug!r}.")
    relevant, irrelevant = judged_from_feedback(query_results(log))
    if not relevant:
        return None
    return make_eval_case(namespace, log.query[:MAX_QUESTION_CHARS], relevant, irrelevant)
