"""The server-rendered pages of search: the reader's search page, its thumbs up/down, and the
curator's report of what readers look for (staff only), which turns a query into an eval case."""

from urllib.parse import urlencode

from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from kb.auth import principal_for, staff_principal
from kb.conf import kb_settings
from kb.errors import AuthenticationRequired, KBError, NotFound, error_status
from kb.http import page_error
from kb.models import Namespace, QueryLog, Source
from kb.replicas import on_replica
from retrieval import curation
from retrieval.curation import PERIODS, query_report, query_results, record_feedback
from retrieval.page import PAGE_SIZE, results_page
from retrieval.service import Filters, search
from retrieval.spelling import correct_query

MAX_PAGES = 5


@require_GET
def search_page(request):
    try:
        principal = principal_for(request, None)
    except KBError as exc:
        return page_error(exc)
    return on_replica(lambda: _page(request, principal))  # the page's reads, its search included


def default_namespace(namespaces: list[Namespace]) -> str:
    """KB_DEFAULT_NAMESPACE when the reader may read it, else the first readable namespace."""
    wanted = kb_settings().default_namespace
    slugs = [ns.slug for ns in namespaces]
    if wanted in slugs:
        return wanted
    return slugs[0] if slugs else ""


def _page(request, principal):
    namespaces = list(principal.readable_namespaces().order_by("slug"))
    query = request.GET.get("q", "").strip()
    namespace = request.GET.get("namespace") or default_namespace(namespaces)
    sources = list(Source.objects.filter(namespace__slug=namespace, namespace__in=namespaces).order_by("name"))
    source_id = request.GET.get("source", "")
    if source_id and source_id not in {str(s.pk) for s in sources}:
        source_id = ""  # a source of another namespace: the filter follows the namespace
    page = _int(request.GET.get("page"), 1, 1, MAX_PAGES)
    group = "chunk" if request.GET.get("group") == "chunk" else "document"  # documents by default
    context = {"query": query, "namespaces": namespaces, "namespace": namespace, "source_id": source_id,
               "group": group, "sources": sources, "error": None, "results": None, "correction": None,
               "sign_in": False, "voted": request.GET.get("voted", "")}
    status = 200
    if query:
        try:
            principal.check(namespace)
            filters = Filters(source_ids=(int(source_id),)) if source_id else Filters()
            # back from a vote: the same search again, not logged twice; its votes name the first
            voted_on = _int(request.GET.get("query_id"), 0, 0, 2**62) if context["voted"] else 0
            result = search(query, namespace, limit=PAGE_SIZE * MAX_PAGES, filters=filters, group=group,
                            log=not voted_on, caller="page")
            context["results"] = results_page(result, page)
            if voted_on:
                context["results"]["query_id"] = voted_on
            if not result.cited:
                context["correction"] = _correction(query, namespace, filters, group)
        except AuthenticationRequired as exc:
            context["error"], context["sign_in"] = exc, True
            status = error_status(exc)
        except KBError as exc:
            context["error"] = exc
            status = error_status(exc) if error_status(exc) < 500 else 400  # the form stays usable
    return render(request, "kb/search.html", context, status=status)


def _correction(query: str, namespace: str, filters: Filters, group: str) -> str | None:
    """A respelt query from the namespace's vocabulary, offered only when it finds results its
    words match (a strong result, or one the keyword channel finds): a correction that helps."""
    namespace_id = Namespace.objects.filter(slug=namespace).values_list("pk", flat=True).first()
    corrected = correct_query(namespace_id, query) if namespace_id else None
    if not corrected or corrected.lower() == query.lower():
        return None
    found = search(corrected, namespace, limit=3, filters=filters, group=group, log=False)
    helps = found.cited or any("lexical" in h.details.channels for h in found.hits)
    return corrected if helps else None


@require_POST
def page_feedback(request):
    """The search page's thumbs up/down (a plain form, so it works without script): record it
    and go back to the same results."""
    try:
        principal = principal_for(request, None)
        helpful = request.POST.get("helpful") == "1"
        record_feedback(principal, _int(request.POST.get("query_id"), 0, 0, 2**62),
                        _int(request.POST.get("chunk_id"), 0, 0, 2**62), helpful)
    except KBError as exc:
        return page_error(exc)
    back = request.POST.get("next", "/")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}) or not back.startswith("/"):
        back = "/"
    back = back.split("&voted=")[0]
    joiner = "&" if "?" in back else "?"
    marker = urlencode({"voted": request.POST.get("chunk_id", ""), "query_id": request.POST.get("query_id", "")})
    return HttpResponseRedirect(f"{back}{joiner}{marker}")


@staff_member_required(login_url="login")
@require_GET
def curator_report(request):
    """Per namespace and period: top, zero-result and weak queries with counts, trend and votes;
    with `?query=ID`, one logged search with its results, ready to become an eval case."""
    principal = staff_principal(request.user)
    namespaces = list(principal.readable_namespaces().order_by("slug"))
    slug = request.GET.get("namespace") or default_namespace(namespaces)
    namespace = next((ns for ns in namespaces if ns.slug == slug), None)
    days = _int(request.GET.get("days"), 7, 1, 365)
    context = {"namespaces": namespaces, "namespace": namespace, "days": days, "periods": PERIODS,
               "report": query_report(namespace, days) if namespace else None, "case": None,
               "made": request.GET.get("made", ""), "retention_days": kb_settings().query_retention_days}
    query_id = _int(request.GET.get("query"), 0, 0, 2**62)
    if namespace and query_id:
        log = QueryLog.objects.filter(pk=query_id, namespace=namespace).first()
        if log is not None:
            context["case"] = {"log": log, "results": query_results(log)}
    return render(request, "kb/curate.html", context)


@staff_member_required(login_url="login")
@require_POST
def make_eval_case(request):
    """One click from a query (and its votes) to a judged case of the namespace's curated suite."""
    principal = staff_principal(request.user)
    slug = request.POST.get("namespace", "")
    try:
        principal.check(slug, write=True)
        namespace = Namespace.objects.filter(slug=slug).first()
        if namespace is None:
            raise NotFound(f"No namespace {slug!r}.")
        log_id = _int(request.POST.get("query"), 0, 0, 2**62)
        days = request.POST.get("days", "7")
        if log_id and not request.POST.get("question"):  # one click from a row of the report
            log = QueryLog.objects.filter(pk=log_id, namespace=namespace).first()
            if log is None:
                raise NotFound(f"No logged search {log_id} in {slug!r}.")
            relevant, irrelevant = curation.judged_from_feedback(query_results(log))
            if not relevant:  # nothing came back: the curator names the answer on the review page
                review = urlencode({"namespace": slug, "days": days, "query": log.pk})
                return HttpResponseRedirect(f"{reverse('curator-report')}?{review}#case-h")
            suite, case_id = curation.make_eval_case(namespace, log.query[:4000], relevant, irrelevant)
        else:
            suite, case_id = make_eval_case_for(namespace, request.POST)
    except KBError as exc:
        return page_error(exc)
    query = urlencode({"namespace": slug, "days": days, "made": f"{suite.name}: {case_id}"})
    return HttpResponseRedirect(f"{reverse('curator-report')}?{query}")


def make_eval_case_for(namespace: Namespace, form) -> tuple:
    question = form.get("question", "").strip()[:4000]
    return curation.make_eval_case(namespace, question, form.getlist("relevant"), form.getlist("irrelevant"))


def _int(value, default: int, low: int, high: int) -> int:
    try:
        return min(high, max(low, int(value)))
    except (TypeError, ValueError):
        return default
