"""Where a citation opens: the one rule every answer (search hits, knowledge retrieval) cites by.
Pure."""

from __future__ import annotations

from kb.markup import passage_anchor


def document_citation_url(
    *,
    url: str,
    ref: str,
    anchor: str,
    namespace: str,
    document_id: int,
    page: int | None = None,
    page_unit: str = "",
    chunk_id: int | None = None,
) -> str:
    """Where a citation opens. Web documents: `url#anchor` (a PDF on the web: `url#page=N`).
    Stored files and text: this server's document view at the cited passage's own anchor,
    `/documents/ID/#passage-<chunk id>` (which the view scrolls to and highlights), or
    `#anchor` (its section) when no chunk is known, or for a PDF
    its original at `/documents/ID/original#page=N`, which browsers open at that page. Both
    views check that the reader may read the document's namespace."""
    url = url or (ref if ref.startswith(("http://", "https://")) else "")
    pdf_page = page if page and page_unit == "page" else None
    if url:
        if "#" in url:
            return url
        if pdf_page:
            return f"{url}#page={pdf_page}"
        return f"{url}#{anchor}" if anchor else url
    base = f"/documents/{document_id}/"
    if pdf_page:
        return f"{base}original#page={pdf_page}"
    if chunk_id is not None:
        return f"{base}#{passage_anchor(chunk_id)}"
    return f"{base}#{anchor}" if anchor else base


def absolute_url(citation: str, base_url: str) -> str:
    """A citation as a link that works outside this server: this server's own paths
    (`/documents/...`) put on `base_url` (scheme://host[/prefix]); web URLs stay as they are."""
    return base_url.rstrip("/") + citation if citation.startswith("/") else citation
