"""The curator's one click from a logged search to a judged eval case (from the report at
/curate/)."""

from urllib.parse import urlencode

from django.http import HttpResponseRedirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from evaluation.cases import MAX_QUESTION_CHARS, case_from_logged_search, make_eval_case
from kb.auth import staff_principal
from kb.errors import KBError, NotFound
from kb.http import bounded_int, page_error, staff_page
from kb.models import Namespace


@staff_page
@require_POST
def make_eval_case_page(request):
    """One click from a query (and its votes) to a judged case of the namespace's curated suite."""
    principal = staff_principal(request.user)
    slug = request.POST.get("namespace", "")
    try:
        principal.check(slug, write=True)
        namespace = Namespace.objects.filter(slug=slug).first()
        if namespace is None:
            raise NotFound(f"No namespace {slug!r}.")
        log_id = bounded_int(request.POST.get("query"), 0, 0, 2**62)
        days = request.POST.get("days", "7")
        if log_id and not request.POST.get("question"):  # one click from a row of the report
            made = case_from_logged_search(namespace, log_id, principal.audiences)
            if made is None:  # nothing came back: the curator names the answer on the review page
                review = urlencode({"namespace": slug, "days": days, "query": log_id})
                return HttpResponseRedirect(f"{reverse('curator-report')}?{review}#case-h")
            suite, case_id = made
        else:
            question = request.POST.get("question", "").strip()[:MAX_QUESTION_CHARS]
            suite, case_id = make_eval_case(
                namespace,
                question,
                request.POST.getlist("relevant"),
                request.POST.getlist("irrelevant"),
            )
    except KBError as exc:
        return page_error(exc)
    query = urlencode(
        {"namespace": slug, "days": days, "made": f"{suite.name}: {case_id}", "suite": suite.pk}
    )
    return HttpResponseRedirect(f"{reverse('curator-report')}?{query}")
