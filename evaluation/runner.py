"""Run an eval suite against the real search service (and an answer case through the real answer
path), and write JUnit XML for CI systems."""

from __future__ import annotations

import time
from xml.etree import ElementTree

from answers.service import answer_events, final_state
from evaluation.search_parts import search_variant
from evaluation.suites import (
    AnswerView,
    CaseResult,
    CheckResult,
    EvalCase,
    EvalSuite,
    ResultView,
    SuiteResult,
    check_answer,
    check_case,
    parse_suite,
)
from kb.auth import Principal
from kb.errors import KBError
from kb.models import Document, EvalRun, QueryLog
from retrieval.fusion import DEFAULT_LEXICAL_WEIGHT
from retrieval.ranker import RankerParams
from retrieval.service import Filters

# What `kb_eval --method` and `kb_bench` compare the full ranker with. The ranker runs as served;
# a comparison runs the channels it names whatever a served search would leave out (meaning, where
# the model does not read the language), so it measures that channel, not the decision to drop it.
_COMPARED = {"params": RankerParams(lexical_weight=DEFAULT_LEXICAL_WEIGHT)}
METHODS = {
    "ranker": {},
    "vector": {"channels": ("vector",), **_COMPARED},
    "lexical": {"channels": ("lexical",), **_COMPARED},
    "rrf": {"fusion": "rrf", **_COMPARED},
}


def run_suite(
    suite: EvalSuite, *, principal: Principal | None = None, method: str = "ranker"
) -> SuiteResult:
    """Every case in input order; a search error (or an answer's) is recorded on its case and the
    suite goes on. `method` searches with one channel alone or plain RRF instead of the full ranker;
    an answer case's answer is the product's whatever the method. Without `principal` (kb_eval,
    an operator's command) every namespace is read."""
    started = time.perf_counter()
    results = []
    for case in suite.cases:
        case_started = time.perf_counter()
        outcome = CaseResult(id=case.id, question=case.question, passed=False)
        try:
            if principal is not None:
                principal.check(case.namespace)
            if case.expect.searches or not case.expect.answers:
                found = search_variant(
                    case.question,
                    case.namespace,
                    limit=case.top_k,
                    filters=Filters(case.source_ids, case.document_ids),
                    reach=principal.audiences if principal is not None else None,
                    **METHODS[method],
                )
                views = [
                    ResultView(
                        h.citation_url, h.source_name, h.anchor, h.details.base, h.document_ref
                    )
                    for h in found.hits
                ]
                outcome.checks, outcome.recall, outcome.mrr = check_case(case, views)
                outcome.top = [v.citation_url for v in views[:3]]
            if case.expect.answers:
                outcome.checks += answer_checks(case, principal or OPERATOR, outcome)
            outcome.passed = not outcome.error and all(check.passed for check in outcome.checks)
        except KBError as exc:
            outcome.error = f"{exc.code}: {exc.message}"
        outcome.duration_ms = (time.perf_counter() - case_started) * 1000
        results.append(outcome)
    return SuiteResult(cases=results, duration_ms=(time.perf_counter() - started) * 1000)


OPERATOR = Principal(
    "staff", can_write=True
)  # kb_eval's caller: the operator, who reads every namespace


def answer_checks(case: EvalCase, principal: Principal, outcome: CaseResult) -> list[CheckResult]:
    """Ask the case's question through the real answer path (the gate, the model, the citation
    checker) in the case's namespace with the caller's rights, and check what came back. An answer
    that failed (answers off, the model dead or too slow) is the case's error, with the answer's
    code."""
    state = final_state(
        answer_events(
            principal,
            [case.namespace],
            case.question,
            stream=False,
            caller=QueryLog.Caller.INTERNAL,
        )
    )
    outcome.answer = {
        "answer_id": state["answer_id"],
        "rule": (state["gate"] or {}).get("rule", ""),
        "abstained": state["abstained"],
        "counts": state["counts"],
        "text": state["text"][:500],
    }
    if state["error"]:
        outcome.error = f"{state['error']['code']}: {state['error']['message']}"
        return []
    if not outcome.top:
        outcome.top = [source["url"] for source in state["sources"][:3]]
    return check_answer(case, answer_view(state))


def answer_view(state: dict) -> AnswerView:
    """An answer's final state (`final_state`) as the answer checks read it: each cited source
    named as a search result is (its URL, its source's name, its document's ref)."""
    documents = {
        pk: (ref, source)
        for pk, ref, source in Document.objects.filter(
            pk__in=[s["document_id"] for s in state["sources"]]
        ).values_list("pk", "ref", "source__name")
    }
    views = {}
    for source in state["sources"]:
        ref, source_name = documents.get(source["document_id"], ("", ""))
        views[source["n"]] = ResultView(source["url"], source_name, "", 0.0, ref)
    shown = [s for s in state["sentences"] if s["verdict"] != "dropped"]
    abstained = (
        state["abstained"] or bool(shown) and all(s["verdict"] == "abstention" for s in shown)
    )
    cited = [
        (views[n], s["verdict"]) for s in state["sentences"] for n in s["citations"] if n in views
    ]
    supported = [
        views[c["source"]]
        for s in state["sentences"]
        if s["verdict"] == "supported"
        for c in s["checks"]
        if c["holds"] and c["source"] in views
    ]
    counts = state["counts"]
    summary = (
        "abstained"
        if abstained
        else f"{counts.get('sentences', 0)} sentence(s), {counts.get('supported', 0)} supported, "
        f"{counts.get('unsupported', 0)} unsupported, {counts.get('dropped', 0)} dropped"
    )
    return AnswerView(
        abstained=abstained, supported_sources=tuple(supported), cited=tuple(cited), summary=summary
    )


def junit_xml(result: SuiteResult, suite_name: str = "kb-eval") -> str:
    suite = ElementTree.Element(
        "testsuite",
        name=suite_name,
        tests=str(result.total),
        failures=str(sum(1 for c in result.cases if not c.passed and not c.error)),
        errors=str(sum(1 for c in result.cases if c.error)),
        time=f"{result.duration_ms / 1000:.3f}",
    )
    for case in result.cases:
        element = ElementTree.SubElement(
            suite,
            "testcase",
            classname=suite_name,
            name=case.id,
            time=f"{case.duration_ms / 1000:.3f}",
        )
        if case.error:
            ElementTree.SubElement(element, "error", message=case.error).text = case.question
        elif not case.passed:
            failed = [c for c in case.checks if not c.passed]
            ElementTree.SubElement(
                element, "failure", message="; ".join(c.detail for c in failed)
            ).text = "\n".join(f"{c.name}: {c.detail}" for c in case.checks)
    return ElementTree.tostring(
        ElementTree.ElementTree(suite).getroot(), encoding="unicode", xml_declaration=True
    )


def run_recorded(suite_record, *, principal: Principal, max_cases: int | None = None):
    """Run a stored suite in its namespace with the rights of `principal` (the curator who asked)
    and keep the result in its history (the admin's regression view); returns the new EvalRun.
    Each case is charged to the principal's rate limit as a search (an answer case's answer is
    charged more as it runs); a suite of more than `max_cases` is refused before any runs."""
    namespace = suite_record.namespace
    suite = parse_suite(
        suite_record.definition,
        namespace=namespace.slug if namespace else None,
        max_cases=max_cases,
    )
    principal.charge(len(suite.cases))
    result = run_suite(suite, principal=principal)
    return EvalRun.objects.create(
        suite=suite_record,
        namespace=namespace,
        passed=result.passed,
        failed=result.failed,
        total=result.total,
        duration_ms=result.duration_ms,
        results=result.as_dict(),
    )
