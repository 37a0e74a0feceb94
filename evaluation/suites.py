"""Parse and check retrieval eval suites: JSON (or YAML) regression cases. Pure.

Format, version 1:

    {"version": 1,
     "defaults": {"topK": 5, "minScore": 0.2, "filter": {"sourceIds": [3]}, "namespace": "docs"},
     "cases": [{"id": "install-pnpm", "question": "How do I install with pnpm?", "topK": 8,
                "expect": {"sourceIncludes": "docs.example.com/install", "anchor": "pnpm",
                           "minScore": 0.4, "notSourceIncludes": ["legacy"],
                           "relevant": ["doc-ref-1"]}}]}

`sourceIncludes` / `notSourceIncludes` (a string, or a list meaning any of) match the citation URL
and source name case-insensitively; `minScore` is the top result's base score, in cosine units
(retrieval/ranker.py); `relevant` turns on recall@k and MRR. Answer cases go through the real answer
path: `{"mustCite": "pumpkin"}` needs a supported sentence citing a matching source,
`{"mustAbstain": true}` a "not covered" answer; an answer that fails is the case's error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evaluation.errors import EvalFileError, EvalUnknownVersion
from kb import jsonbody
from kb.datafiles import read_data
from kb.errors import BadRequest

SUPPORTED_VERSIONS = (1,)
CASE_KEYS = {"id", "question", "topK", "minScore", "filter", "namespace", "expect"}
EXPECT_KEYS = {
    "sourceIncludes",
    "notSourceIncludes",
    "anchor",
    "minScore",
    "relevant",
    "mustCite",
    "mustAbstain",
}
ANSWER_KEYS = {"mustCite", "mustAbstain"}
FILTER_KEYS = {"sourceIds", "documentIds"}


@dataclass(frozen=True)
class Expect:
    source_includes: tuple[str, ...] = ()
    not_source_includes: tuple[str, ...] = ()
    anchor: str | None = None
    min_score: float | None = None
    relevant: tuple[str, ...] = ()
    must_cite: tuple[str, ...] = ()
    must_abstain: bool = False

    @property
    def answers(self) -> bool:
        """Whether the case asks for an answer (and so runs through the answer path)."""
        return bool(self.must_cite) or self.must_abstain

    @property
    def searches(self) -> bool:
        """Whether the case checks the search's own results."""
        return bool(
            self.source_includes
            or self.not_source_includes
            or self.anchor is not None
            or self.min_score is not None
            or self.relevant
        )


@dataclass(frozen=True)
class EvalCase:
    id: str
    question: str
    top_k: int
    namespace: str
    source_ids: tuple[int, ...]
    document_ids: tuple[int, ...]
    expect: Expect


@dataclass(frozen=True)
class EvalSuite:
    version: int
    cases: tuple[EvalCase, ...]


@dataclass(frozen=True)
class ResultView:
    """What a check needs to know about one search result."""

    citation_url: str
    source: str
    anchor: str
    score: float
    document_ref: str


@dataclass(frozen=True)
class AnswerView:
    """What an answer check needs to know about one answer: whether it abstained, and which
    sources its supported sentences cite (each source as a ResultView, to match as results are)."""

    abstained: bool
    supported_sources: tuple[ResultView, ...]
    cited: tuple[
        tuple[ResultView, str], ...
    ]  # every citation: the source and the sentence's verdict
    summary: str  # the answer in a line, for a failed check's detail


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool
    detail: str


@dataclass
class CaseResult:
    id: str
    question: str
    passed: bool
    checks: list[CheckResult] = field(default_factory=list)
    error: str = ""
    recall: float | None = None
    mrr: float | None = None
    duration_ms: float = 0.0
    top: list[str] = field(default_factory=list)
    answer: dict | None = None  # an answer case's answer: id, gate rule, abstained, counts


@dataclass
class SuiteResult:
    cases: list[CaseResult]
    duration_ms: float

    @property
    def total(self) -> int:
        return len(self.cases)

    @property
    def passed(self) -> int:
        return sum(1 for c in self.cases if c.passed)

    @property
    def failed(self) -> int:
        return self.total - self.passed

    def as_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "failed": self.failed,
            "total": self.total,
            "duration_ms": round(self.duration_ms, 1),
            "cases": [
                {
                    "id": c.id,
                    "question": c.question,
                    "passed": c.passed,
                    "error": c.error,
                    "checks": [
                        {"name": k.name, "passed": k.passed, "detail": k.detail} for k in c.checks
                    ],
                    "recall": c.recall,
                    "mrr": c.mrr,
                    "duration_ms": round(c.duration_ms, 1),
                    "top": c.top,
                    **({"answer": c.answer} if c.answer is not None else {}),
                }
                for c in self.cases
            ],
        }


def read_suite(text: str, name: str, *, namespace: str | None = None) -> EvalSuite:
    """A suite from a file's text: JSON, or YAML when `name` ends in .yaml or .yml."""
    try:
        data = read_data(text, name)
    except ValueError as exc:
        raise EvalFileError(str(exc)) from exc
    return parse_suite(data, namespace=namespace)


MAX_CASES_PER_REQUEST = (
    200  # a suite run inside one web request (the API's, the console's Run now); kb_eval runs more
)


def parse_suite(
    data: Any, *, namespace: str | None = None, max_cases: int | None = None
) -> EvalSuite:
    """Validate a decoded suite; every error names the case and the field."""
    if not isinstance(data, dict):
        raise EvalFileError("An eval file must be a JSON object with 'version' and 'cases'.")
    try:  # a lone surrogate is no text: it could be neither stored nor searched for
        jsonbody.check(data, what="The eval suite")
    except BadRequest as exc:
        raise EvalFileError(exc.message, details=exc.details) from exc
    version = data.get("version")
    if version not in SUPPORTED_VERSIONS:
        raise EvalUnknownVersion(
            f"Unsupported eval file version {version!r}; this build reads version 1.",
            details={"version": version},
        )
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise EvalFileError("'defaults' must be an object.", details={"field": "defaults"})
    cases = data.get("cases")
    if not isinstance(cases, list) or not cases:
        raise EvalFileError("'cases' must be a non-empty list.", details={"field": "cases"})
    if max_cases is not None and len(cases) > max_cases:
        raise EvalFileError(
            f"The suite has {len(cases)} cases; at most {max_cases} run in one request "
            "(run larger suites with kb_eval).",
            details={"field": "cases", "max": max_cases},
        )
    parsed, seen = [], set()
    for index, case in enumerate(cases):
        item = _case(case, index, defaults, namespace)
        if item.id in seen:
            raise EvalFileError(
                f"case {item.id!r}: the id is used twice.", details={"case": item.id, "field": "id"}
            )
        seen.add(item.id)
        parsed.append(item)
    return EvalSuite(version=version, cases=tuple(parsed))


def check_own_namespace(data: Any, namespace: str) -> None:
    """Refuse a suite file (already parsed) that names any namespace but `namespace`, the stored
    suite's own: its cases would search that one instead, silently. Another tenant's namespace and
    one that does not exist are refused in the same words, so saving one tells nothing about it."""
    named = [("defaults", "namespace", data.get("defaults", {}).get("namespace"))]
    named += [
        (f"case {case['id']!r}", "namespace", case.get("namespace")) for case in data["cases"]
    ]
    for where, field_name, value in named:
        if value is not None and value != namespace:
            raise EvalFileError(
                f"{where}, field {field_name!r}: {value!r} is not this suite's namespace; a "
                "stored suite "
                f"searches its own namespace ({namespace!r}) only. Remove the field or set it "
                f"to {namespace!r}.",
                details={"field": field_name, "namespace": value},
            )


def _fail(case_id: str, field_name: str, problem: str) -> EvalFileError:
    return EvalFileError(
        f"case {case_id!r}, field {field_name!r}: {problem}",
        details={"case": case_id, "field": field_name},
    )


def _case(case: Any, index: int, defaults: dict, namespace_override: str | None) -> EvalCase:
    if not isinstance(case, dict):
        raise EvalFileError(f"case #{index + 1}: must be an object.", details={"case": index + 1})
    case_id = case.get("id")
    if not isinstance(case_id, str) or not case_id.strip():
        raise _fail(f"#{index + 1}", "id", "a non-empty string is required")
    unknown = set(case) - CASE_KEYS
    if unknown:
        raise _fail(
            case_id, sorted(unknown)[0], f"unknown field (known: {', '.join(sorted(CASE_KEYS))})"
        )
    question = case.get("question")
    if not isinstance(question, str) or not question.strip():
        raise _fail(case_id, "question", "a non-empty string is required")
    top_k = case.get("topK", defaults.get("topK", 5))
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= 100:
        raise _fail(case_id, "topK", f"must be a whole number from 1 to 100, got {top_k!r}")
    namespace = namespace_override or case.get("namespace", defaults.get("namespace"))
    if not isinstance(namespace, str) or not namespace:
        raise _fail(
            case_id,
            "namespace",
            "no namespace: set it on the case, in defaults, or on the command line",
        )
    filters = case.get("filter", defaults.get("filter", {})) or {}
    if not isinstance(filters, dict) or set(filters) - FILTER_KEYS:
        raise _fail(case_id, "filter", f"must be an object with {', '.join(sorted(FILTER_KEYS))}")
    ids = {}
    for key in FILTER_KEYS:
        values = filters.get(key, [])
        if not isinstance(values, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in values
        ):
            raise _fail(case_id, f"filter.{key}", "must be a list of ids")
        ids[key] = tuple(values)
    expect = case.get("expect", {})
    if not isinstance(expect, dict):
        raise _fail(case_id, "expect", "must be an object")
    unknown = set(expect) - EXPECT_KEYS
    if unknown:
        raise _fail(
            case_id,
            f"expect.{sorted(unknown)[0]}",
            f"unknown check (known: {', '.join(sorted(EXPECT_KEYS))})",
        )
    min_score = expect.get("minScore", case.get("minScore", defaults.get("minScore")))
    if min_score is not None and (
        isinstance(min_score, bool) or not isinstance(min_score, (int, float))
    ):
        raise _fail(case_id, "minScore", f"must be a number, got {min_score!r}")
    anchor = expect.get("anchor")
    if anchor is not None and not isinstance(anchor, str):
        raise _fail(case_id, "expect.anchor", "must be a string")
    must_abstain = expect.get("mustAbstain", False)
    if must_abstain is not True and must_abstain is not False:
        raise _fail(case_id, "expect.mustAbstain", f"must be true or false, got {must_abstain!r}")
    if must_abstain and "mustCite" in expect:
        raise _fail(
            case_id,
            "expect.mustAbstain",
            "an answer that abstains cites nothing: ask for mustCite or mustAbstain, not both",
        )
    return EvalCase(
        id=case_id,
        question=question,
        top_k=top_k,
        namespace=namespace,
        source_ids=ids["sourceIds"],
        document_ids=ids["documentIds"],
        expect=Expect(
            source_includes=_strings(expect, "sourceIncludes", case_id),
            not_source_includes=_strings(expect, "notSourceIncludes", case_id),
            anchor=anchor,
            min_score=float(min_score) if min_score is not None else None,
            relevant=_strings(expect, "relevant", case_id),
            must_cite=_strings(expect, "mustCite", case_id),
            must_abstain=must_abstain,
        ),
    )


def _strings(expect: dict, key: str, case_id: str) -> tuple[str, ...]:
    value = expect.get(key)
    if value is None:
        return ()
    if isinstance(value, str) and value:
        return (value,)
    if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
        return tuple(value)
    raise _fail(case_id, f"expect.{key}", "must be a non-empty string or a list of them")


def check_case(
    case: EvalCase, results: list[ResultView]
) -> tuple[list[CheckResult], float | None, float | None]:
    """Run every check the case asks for against its top-k results."""
    top = results[: case.top_k]
    checks: list[CheckResult] = []
    expect = case.expect

    if expect.source_includes:
        hit = next(
            ((i, n) for i, r in enumerate(top, 1) for n in expect.source_includes if matches(r, n)),
            None,
        )
        shown = " or ".join(repr(n) for n in expect.source_includes)
        checks.append(
            CheckResult(
                "sourceIncludes",
                hit is not None,
                f"result {hit[0]} matched {hit[1]!r}"
                if hit
                else f"no result's source matched {shown} in the top {case.top_k}",
            )
        )
    if expect.not_source_includes:
        bad = next(
            (
                (i, r, n)
                for i, r in enumerate(top, 1)
                for n in expect.not_source_includes
                if matches(r, n)
            ),
            None,
        )
        shown = " or ".join(repr(n) for n in expect.not_source_includes)
        checks.append(
            CheckResult(
                "notSourceIncludes",
                bad is None,
                f"result {bad[0]} ({bad[1].citation_url}) matched {bad[2]!r}"
                if bad
                else f"no result's source matched {shown}",
            )
        )
    if expect.anchor is not None:
        anchors = [r.anchor for r in top if r.anchor]
        wanted = expect.anchor.lower().lstrip("#")
        position = next((i for i, r in enumerate(top, 1) if r.anchor.lower() == wanted), None)
        if position:
            detail = f"result {position} has anchor {expect.anchor!r}"
        elif not anchors:
            detail = "no chunk has an anchor"
        else:
            detail = (
                f"no chunk has anchor {expect.anchor!r} "
                f"(saw {', '.join(repr(a) for a in anchors[:5])})"
            )
        checks.append(CheckResult("anchor", position is not None, detail))
    if expect.min_score is not None:
        if not top:
            checks.append(CheckResult("minScore", False, "no results"))
        else:
            score = top[0].score
            ok = score >= expect.min_score
            relation = ">=" if ok else "<"
            checks.append(
                CheckResult(
                    "minScore", ok, f"top score {score:.2f} {relation} {expect.min_score:.2f}"
                )
            )
    recall = mrr = None
    if expect.relevant:
        refs = list(dict.fromkeys(r.document_ref for r in top))
        relevant = set(expect.relevant)
        recall = len(relevant & set(refs)) / len(relevant)
        mrr = next((1.0 / i for i, ref in enumerate(refs, 1) if ref in relevant), 0.0)
    return checks, recall, mrr


def matches(result: ResultView, needle: str) -> bool:
    """sourceIncludes / notSourceIncludes / mustCite: the citation URL, the source's name or the
    document's own ref (file key, page URL, benchmark id), so one document can be named."""
    needle = needle.lower()
    return any(
        needle in value.lower()
        for value in (result.citation_url, result.source, result.document_ref)
    )


def check_answer(case: EvalCase, answer: AnswerView) -> list[CheckResult]:
    """The answer checks the case asks for (`mustCite`, `mustAbstain`) against its answer."""
    expect = case.expect
    checks: list[CheckResult] = []
    if expect.must_abstain:
        checks.append(
            CheckResult(
                "mustAbstain",
                answer.abstained,
                "the answer abstained" if answer.abstained else f"it answered: {answer.summary}",
            )
        )
    if expect.must_cite:
        shown = " or ".join(repr(n) for n in expect.must_cite)
        hit = next(
            ((r, n) for r in answer.supported_sources for n in expect.must_cite if matches(r, n)),
            None,
        )
        if hit:
            detail = f"a supported sentence cites {hit[0].document_ref!r}, matching {hit[1]!r}"
        elif answer.abstained:
            detail = f"the answer abstained; nothing cites {shown}"
        else:
            unchecked = [
                f"{r.document_ref!r} ({verdict})"
                for r, verdict in answer.cited
                if any(matches(r, n) for n in expect.must_cite)
            ]
            detail = (
                f"no supported sentence cites {shown}"
                + (f"; cited without support: {', '.join(unchecked)}" if unchecked else "")
                + f"; {answer.summary}"
            )
        checks.append(CheckResult("mustCite", hit is not None, detail))
    return checks
