"""Judged eval cases made from what readers searched: the curator's report turns a logged
search (and its votes) into a case of the namespace's curated suite, and the answer log turns a
bad answer into an answer case (must abstain, or must cite a document) of a suite the curator
picks."""

from __future__ import annotations

import re

from django.db import transaction

from evaluation.suites import check_own_namespace, parse_suite
from kb.auth import Principal
from kb.errors import KBError, NotFound, ValidationFailed
from kb.models import AnswerLog, Document, EvalSuite, Namespace, QueryLog
from retrieval.curation import judged_from_feedback, query_results
from retrieval.errors import FeedbackNotAResult

MAX_QUESTION_CHARS = 4000


def curated_suite_name(namespace: str) -> str:
    return f"{namespace} · reader queries"


def make_eval_case(
    namespace: Namespace, question: str, relevant: list[str], irrelevant: list[str]
) -> tuple[EvalSuite, str]:
    """Add a judged case to the namespace's curated suite (made on first use): the documents
    named relevant must come back (`sourceIncludes`, `relevant`, which also feeds the fusion
    fit), the ones named irrelevant must not. The same question again replaces its case."""
    refs = [ref for ref in dict.fromkeys(relevant) if ref]
    if not refs:
        raise FeedbackNotAResult("Pick at least one document that answers the query.")
    known = set(
        Document.objects.filter(namespace=namespace, ref__in=refs + irrelevant).values_list(
            "ref", flat=True
        )
    )
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
            namespace=namespace,
            name=curated_suite_name(namespace.slug),
            defaults={
                "definition": {
                    "version": 1,
                    "defaults": {"topK": 5, "namespace": namespace.slug},
                    "cases": [],
                }
            },
        )
        definition = dict(suite.definition)
        cases = [c for c in definition.get("cases", []) if c.get("id") != case_id] + [case]
        definition["cases"] = cases
        parse_suite(definition, namespace=namespace.slug)  # the suite stays runnable
        suite.definition = definition
        suite.save(update_fields=["definition"])
    return suite, case_id


def case_from_logged_search(
    namespace: Namespace, log_id: int, reach: frozenset[int] | None = frozenset()
) -> tuple[EvalSuite, str] | None:
    """One click from a row of the curator's report: the logged search becomes a case judged by
    its votes (`judged_from_feedback`). None when nothing came back to judge by: the curator then
    names the answer on the review page."""
    log = QueryLog.objects.filter(pk=log_id, namespace=namespace).first()
    if log is None:
        raise NotFound(f"No logged search {log_id} in {namespace.slug!r}.")
    relevant, irrelevant = judged_from_feedback(query_results(log, reach))
    if not relevant:
        return None
    return make_eval_case(namespace, log.query[:MAX_QUESTION_CHARS], relevant, irrelevant)


def answer_suite_name(namespace: str) -> str:
    return f"{namespace} · answer cases"


def answer_case_targets(principal: Principal, answer: AnswerLog) -> list[tuple[str, str]]:
    """Where `principal` may put a case made from `answer`, as (value, label): every suite of the
    answer's namespaces it may write (`suite:<id>`), and a new answer-cases suite for each such
    namespace that has none yet (`new:<slug>`). Empty: the curator may write none of them."""
    slugs = [slug for slug in answer.namespaces if _may_write(principal, slug)]
    suites = list(
        EvalSuite.objects.filter(namespace__slug__in=slugs)
        .select_related("namespace")
        .order_by("namespace__slug", "name")
    )
    targets = [(f"suite:{suite.pk}", f"{suite.name} ({suite.namespace.slug})") for suite in suites]
    named = {(suite.namespace.slug, suite.name) for suite in suites}
    return targets + [
        (f"new:{slug}", f"{answer_suite_name(slug)} ({slug}, new)")
        for slug in slugs
        if (slug, answer_suite_name(slug)) not in named
    ]


def _may_write(principal: Principal, slug: str) -> bool:
    try:
        principal.check(slug, write=True)
    except KBError:
        return False
    return True


def make_answer_case(
    principal: Principal, answer: AnswerLog, target: str, *, must_abstain: bool, cite: str = ""
) -> tuple[EvalSuite, str]:
    """Add an answer case made from a logged answer to the suite `target` names (a value of
    `answer_case_targets`): its question must abstain, or must cite the document whose ref is
    `cite`, which must be in the suite's namespace. Writing needs the right to change that
    namespace; the same question again replaces its case."""
    kind, _, value = target.partition(":")
    if kind not in ("suite", "new") or not value:
        raise ValidationFailed(
            f"Choose a suite; {target!r} is not one.", details={"field": "suite"}
        )
    slug = (
        value
        if kind == "new"
        else EvalSuite.objects.filter(pk=int(value) if value.isdigit() else 0)
        .values_list("namespace__slug", flat=True)
        .first()
    )
    if slug is None or slug not in answer.namespaces:
        raise NotFound(
            "No such suite among those of the answer's namespaces.", details={"field": "suite"}
        )
    principal.check(slug, write=True)
    namespace = Namespace.objects.get(slug=slug)
    if must_abstain:
        expect: dict = {"mustAbstain": True}
    else:
        ref = cite.strip()
        if not ref:
            raise ValidationFailed(
                "Pick the document the answer must cite, or ask it to abstain.",
                details={"field": "document"},
            )
        if not Document.objects.filter(namespace=namespace, ref=ref).exists():
            raise NotFound(
                f"No document {ref!r} in {slug!r}: an answer case cites a document of its suite's "
                "namespace.",
                details={"field": "document"},
            )
        expect = {"mustCite": ref}
    question = answer.question[:MAX_QUESTION_CHARS]
    case_id = "answer-" + (
        re.sub(r"[^a-z0-9]+", "-", question.lower()).strip("-")[:60] or "question"
    )
    case = {"id": case_id, "question": question, "expect": expect}
    with transaction.atomic():
        if kind == "new":
            suite, _ = EvalSuite.objects.select_for_update().get_or_create(
                namespace=namespace,
                name=answer_suite_name(slug),
                defaults={
                    "definition": {"version": 1, "defaults": {"namespace": slug}, "cases": []}
                },
            )
        else:
            suite = EvalSuite.objects.select_for_update().get(pk=int(value))
        definition = dict(suite.definition)
        definition["cases"] = [c for c in definition.get("cases", []) if c.get("id") != case_id] + [
            case
        ]
        parse_suite(definition, namespace=slug)  # the suite stays runnable
        check_own_namespace(definition, slug)
        suite.definition = definition
        suite.save(update_fields=["definition"])
    return suite, case_id
