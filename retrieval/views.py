"""The server-rendered search page: a thin view over the search service and the page presenter."""

from django.shortcuts import render
from django.views.decorators.http import require_GET

from kb.auth import principal_for
from kb.errors import KBError, error_status
from kb.http import page_error
from kb.models import Source
from kb.replicas import on_replica
from retrieval.page import PAGE_SIZE, results_page
from retrieval.service import Filters, search

MAX_PAGES = 5


@require_GET
def search_page(request):
    try:
        principal = principal_for(request, None)
    except KBError as exc:
        return page_error(exc)
    return on_replica(lambda: _page(request, principal))  # the page's reads, its search included


def _page(request, principal):
    namespaces = list(principal.readable_namespaces().order_by("slug"))
    query = request.GET.get("q", "").strip()
    namespace = request.GET.get("namespace") or (namespaces[0].slug if namespaces else "")
    source_id = request.GET.get("source", "")
    page = _int(request.GET.get("page"), 1, 1, MAX_PAGES)
    group = "chunk" if request.GET.get("group") == "chunk" else "document"  # documents by default
    context = {"query": query, "namespaces": namespaces, "namespace": namespace, "source_id": source_id,
               "group": group,
               "sources": Source.objects.filter(namespace__slug=namespace, namespace__in=namespaces).order_by("name"),
               "error": None, "results": None}
    status = 200
    if query:
        try:
            principal.check(namespace)
            filters = Filters(source_ids=(int(source_id),)) if source_id.isdigit() else Filters()
            result = search(query, namespace, limit=PAGE_SIZE * MAX_PAGES, filters=filters, group=group,
                            caller="page")
            context["results"] = results_page(result, page)
        except KBError as exc:
            context["error"] = exc
            status = error_status(exc) if error_status(exc) < 500 else 400  # the form stays usable
    return render(request, "kb/search.html", context, status=status)


def _int(value, default: int, low: int, high: int) -> int:
    try:
        return min(high, max(low, int(value)))
    except (TypeError, ValueError):
        return default
