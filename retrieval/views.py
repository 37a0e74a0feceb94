"""The server-rendered pages of search: the reader's search page, its thumbs up/down, the
document views a citation opens (the text view and the original upload), and the curator's
report of what readers look for (staff only)."""

from urllib.parse import quote, urlencode

from django.http import HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST, require_safe

from kb.audiences import document_filter
from kb.auth import principal_for, staff_principal
from kb.conf import kb_settings
from kb.errors import AuthenticationRequired, KBError, error_status
from kb.http import bounded_int, page_error, staff_page
from kb.identity.reads import Surface, record_restricted_reads
from kb.languages import has_cjk
from kb.models import Namespace, QueryLog, Source
from kb.replicas import on_replica
from retrieval.curation import PERIODS, query_report, query_results, record_feedback
from retrieval.documents import document_view, original_file
from retrieval.lookups import spelling_correction
from retrieval.page import PAGE_SIZE, results_page
from retrieval.query import MAX_QUERY_CHARS
from retrieval.service import Filters, search

MAX_PAGES = 5


@require_GET
def search_page(request):
    try:
        principal = principal_for(request, None)
    except KBError as exc:
        return page_error(exc)
    return on_replica(lambda: _page(request, principal))  # the page's reads, its search included


def default_namespace(namespaces: list[Namespace]) -> str:
    """KB_DEFAULT_NAMESPACE when it is among `namespaces`, else the first of them."""
    wanted = kb_settings().default_namespace
    slugs = [ns.slug for ns in namespaces]
    if wanted in slugs:
        return wanted
    return slugs[0] if slugs else ""


def collection_groups(principal, namespaces: list[Namespace]) -> list[tuple[str, list[Namespace]]]:
    """The page's collection list: for a member, its own namespaces, then the public ones it reads
    without a membership, each under its label; for anyone else one unlabelled group."""
    if principal.kind != "member":
        return [("", namespaces)]
    own = [ns for ns in namespaces if principal.access(ns) == "member"]
    public = [ns for ns in namespaces if principal.access(ns) == "public"]
    return [
        (label, group)
        for label, group in (("Your collections", own), ("Public collections", public))
        if group
    ]


def _page(request, principal):
    namespaces = list(principal.readable_namespaces().order_by("slug"))
    groups = collection_groups(principal, namespaces)
    query = request.GET.get("q", "").strip()
    # a member opens on its own collections before the public ones
    namespace = request.GET.get("namespace") or (default_namespace(groups[0][1]) if groups else "")
    sources = list(
        Source.objects.filter(
            document_filter(principal.audiences),
            namespace__slug=namespace,
            namespace__in=namespaces,
        ).order_by("name")
    )
    source_id = request.GET.get("source", "")
    if source_id and source_id not in {str(s.pk) for s in sources}:
        source_id = ""  # a source of another namespace: the filter follows the namespace
    page = bounded_int(request.GET.get("page"), 1, 1, MAX_PAGES)
    group = "chunk" if request.GET.get("group") == "chunk" else "document"  # documents by default
    context = {
        "query": query,
        "namespaces": namespaces,
        "groups": groups,
        "namespace": namespace,
        "source_id": source_id,
        "group": group,
        "sources": sources,
        "error": None,
        "results": None,
        "correction": None,
        "sign_in": False,
        "voted": request.GET.get("voted", ""),
    }
    status = 200
    if query:
        try:
            principal.check(namespace)
            filters = Filters(source_ids=(int(source_id),)) if source_id else Filters()
            # back from a vote: the same search again, not logged twice; its votes name the first
            voted_on = (
                bounded_int(request.GET.get("query_id"), 0, 0, 2**62) if context["voted"] else 0
            )
            start = (page - 1) * PAGE_SIZE
            result = search(
                query,
                namespace,
                limit=PAGE_SIZE * MAX_PAGES,
                filters=filters,
                group=group,
                log=not voted_on,
                caller="page",
                text_window=(start, start + PAGE_SIZE),
                reach=principal.audiences,
            )
            context["results"] = results_page(result, page)
            # each result's feedback form posts here and comes back: worked out once, not per row
            context["feedback_url"], context["this_page"] = (
                reverse("feedback"),
                request.get_full_path(),
            )
            if voted_on:
                context["results"]["query_id"] = voted_on
            if not result.cited and not context["results"]["rows"]:
                context["correction"] = spelling_correction(
                    query, namespace, filters
                )  # nothing else to show
                # passages of Chinese, Japanese or Korean are lexed in character pairs
                # (docs/languages.md)
                context["lone_character"] = len(query.strip()) == 1 and has_cjk(query)
            elif (
                not result.cited
            ):  # weak results are shown at once; page.js asks for the correction
                context["suggest_url"] = (
                    reverse("suggest")
                    + "?"
                    + urlencode({"q": query, "namespace": namespace, "source": source_id})
                )
        except AuthenticationRequired as exc:
            context["error"], context["sign_in"] = exc, True
            status = error_status(exc)
        except KBError as exc:
            context["error"] = exc
            status = error_status(exc) if error_status(exc) < 500 else 400  # the form stays usable
    return render(request, "kb/search.html", context, status=status)


@require_GET
def spelling_suggestion(request):
    """The search page's "did you mean" for a page of weak results, asked by page.js once the
    results are shown, so the page does not wait for it: {"correction": text or null}. A
    namespace the caller may not read, or that does not exist, answers null as one with nothing
    to correct does: the answer tells nothing about other namespaces."""
    try:
        principal = principal_for(request, None)  # counted against the caller's rate limit
    except KBError as exc:
        return JsonResponse({"correction": None, "code": exc.code}, status=error_status(exc))
    query = request.GET.get("q", "").strip()
    namespace = request.GET.get("namespace", "")
    source_id = request.GET.get("source", "")
    filters = (
        Filters(source_ids=(int(source_id),))
        if source_id.isdigit() and len(source_id) < 19
        else Filters()
    )

    def read() -> str | None:
        try:
            principal.check(namespace)
            return spelling_correction(query, namespace, filters)
        except KBError:
            return None

    correction = on_replica(read) if query and len(query) <= MAX_QUERY_CHARS else None
    return JsonResponse({"correction": correction})


@require_POST
def page_feedback(request):
    """The search page's thumbs up/down (a plain form, so it works without script): record it
    and go back to the same results."""
    try:
        principal = principal_for(request, None)
        helpful = request.POST.get("helpful") == "1"
        record_feedback(
            principal,
            bounded_int(request.POST.get("query_id"), 0, 0, 2**62),
            bounded_int(request.POST.get("chunk_id"), 0, 0, 2**62),
            helpful,
        )
    except KBError as exc:
        return page_error(exc)
    back = request.POST.get("next", "/")
    if not url_has_allowed_host_and_scheme(
        back, allowed_hosts={request.get_host()}
    ) or not back.startswith("/"):
        back = "/"
    back = back.split("&voted=")[0]
    joiner = "&" if "?" in back else "?"
    marker = urlencode(
        {"voted": request.POST.get("chunk_id", ""), "query_id": request.POST.get("query_id", "")}
    )
    return HttpResponseRedirect(f"{back}{joiner}{marker}")


@staff_page
@require_GET
def curator_report(request):
    """Per namespace and period: top, zero-result and weak queries with counts, trend and votes;
    with `?query=ID`, one logged search with its results, ready to become an eval case."""
    principal = staff_principal(request.user)
    namespaces = list(
        principal.member_namespaces().order_by("slug")
    )  # not the public ones it merely reads
    slug = request.GET.get("namespace") or default_namespace(namespaces)
    namespace = next((ns for ns in namespaces if ns.slug == slug), None)
    days = bounded_int(request.GET.get("days"), 7, 1, 365)
    context = {
        "namespaces": namespaces,
        "namespace": namespace,
        "days": days,
        "periods": PERIODS,
        "report": query_report(namespace, days) if namespace else None,
        "case": None,
        "made": request.GET.get("made", ""),
        "made_suite": bounded_int(request.GET.get("suite"), 0, 0, 2**62),
        "retention_days": kb_settings().query_retention_days,
    }
    query_id = bounded_int(request.GET.get("query"), 0, 0, 2**62)
    if namespace and query_id:
        log = QueryLog.objects.filter(pk=query_id, namespace=namespace).first()
        if log is not None:
            context["case"] = {"log": log, "results": query_results(log, principal.audiences)}
    return render(request, "kb/curate.html", context)


# served inline: a browser shows them and runs nothing; everything else is a download
INLINE_TYPES = {
    "application/pdf": "application/pdf",
    "text/plain": "text/plain; charset=utf-8",
    "text/markdown": "text/plain; charset=utf-8",
    "text/csv": "text/plain; charset=utf-8",
}


# every stored file but a PDF: a sandbox (an origin of its own, no scripts, no forms) loading
# nothing
STORED_FILE_POLICY = (
    "sandbox; default-src 'none'; frame-ancestors 'none'; form-action 'none'; base-uri 'none'"
)
# a PDF is shown by the browser's own viewer, which Chromium refuses to start in any sandbox
# (crbug.com/413851: "This page has been blocked"); so the tightest policy its viewer allows:
# nothing loaded, no framing by other sites, no forms or base URL
PDF_POLICY = "default-src 'none'; frame-ancestors 'none'; form-action 'none'; base-uri 'none'"


def _for_reader(request, document_id: int, respond):
    """Call `respond(principal, document_id)`; a missing or unreadable document gets one page."""
    try:
        principal = principal_for(request, None)
    except KBError as exc:  # a rate limit, say
        return page_error(exc)
    try:
        return on_replica(lambda: respond(principal, document_id))
    except KBError as exc:
        return render(request, "kb/document_missing.html", {"error": exc}, status=error_status(exc))


@require_safe
def document_page(request, document_id: int):
    def respond(principal, document_id):
        view = document_view(principal, document_id)
        record_restricted_reads(principal, [view.document], Surface.PAGE, request)
        return render(request, "kb/document.html", {"view": view, "document": view.document})

    return _for_reader(request, document_id, respond)


@require_safe
def document_original(request, document_id: int):
    def respond(principal, document_id):
        response = _original(principal, document_id)
        record_restricted_reads(principal, [document_id], Surface.PAGE, request)
        return response

    return _for_reader(request, document_id, respond)


def _original(principal, document_id: int) -> HttpResponse:
    data, name, media_type = original_file(principal, document_id)
    inline = media_type in INLINE_TYPES
    response = HttpResponse(
        data, content_type=INLINE_TYPES.get(media_type, "application/octet-stream")
    )
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Disposition"] = (
        f"{'inline' if inline else 'attachment'}; filename*=UTF-8''{quote(name)}"
    )
    response["Content-Security-Policy"] = (
        PDF_POLICY if media_type == "application/pdf" else STORED_FILE_POLICY
    )
    response["Cross-Origin-Resource-Policy"] = "same-origin"
    return response
