"""The document views a citation opens: the text view and the original upload."""

from __future__ import annotations

from urllib.parse import quote

from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from ingest.documents import document_view, original_file
from kb.auth import principal_for
from kb.errors import KBError, error_status
from kb.http import page_error
from kb.replicas import on_replica

# served inline: a browser shows them and runs nothing; everything else is a download
INLINE_TYPES = {"application/pdf": "application/pdf", "text/plain": "text/plain; charset=utf-8",
                "text/markdown": "text/plain; charset=utf-8", "text/csv": "text/plain; charset=utf-8"}


# every stored file but a PDF: a sandbox (an origin of its own, no scripts, no forms) loading nothing
STORED_FILE_POLICY = "sandbox; default-src 'none'; frame-ancestors 'none'; form-action 'none'; base-uri 'none'"
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
        return render(request, "kb/document.html", {"view": view, "document": view.document})

    return _for_reader(request, document_id, respond)


@require_safe
def document_original(request, document_id: int):
    return _for_reader(request, document_id, _original)


def _original(principal, document_id: int) -> HttpResponse:
    data, name, media_type = original_file(principal, document_id)
    inline = media_type in INLINE_TYPES
    response = HttpResponse(data, content_type=INLINE_TYPES.get(media_type, "application/octet-stream"))
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Disposition"] = f"{'inline' if inline else 'attachment'}; filename*=UTF-8''{quote(name)}"
    response["Content-Security-Policy"] = PDF_POLICY if media_type == "application/pdf" else STORED_FILE_POLICY
    response["Cross-Origin-Resource-Policy"] = "same-origin"
    return response
