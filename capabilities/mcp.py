"""The MCP tools of the capability catalogue and its retrievers: the same shapes as
/api/capabilities/* and /api/knowledge/retrieve; a CG_* error is a tool error with its code."""

from __future__ import annotations

from dataclasses import asdict

from capabilities import knowledge, service
from capabilities.schemas import (
    CapabilitiesIn,
    CapabilitiesOut,
    CatalogIn,
    CatalogOut,
    KnowledgeIn,
    KnowledgeOut,
)
from kb.toolsets import Answer, Toolset
from retrieval.citations import absolute_url

tools = Toolset()


@tools.tool(
    name="capability_catalog",
    title="All capabilities of the providers",
    input=CatalogIn,
    output=CatalogOut,
    cost="two queries; no model call",
    description="Every capability of the providers this caller may read, in a fixed order, a page "
    "at a time (as GET /api/capabilities/catalog). Retrieval never replaces it.",
)
def capability_catalog(request, data: CatalogIn) -> Answer:
    payload = service.catalog(request.auth, data.provider_ids, data.page, data.page_size)
    lines = [
        f"{c['id']} ({c['provider']}): {c['title']}: {c['summary']}"
        for c in payload["capabilities"]
    ]
    return Answer(
        payload, f"{payload['total']} capabilities, page {payload['page']}:\n" + "\n".join(lines)
    )


@tools.tool(
    name="retrieve_capabilities",
    title="Rank capabilities for a text",
    input=CapabilitiesIn,
    output=CapabilitiesOut,
    cost="one query embedding and one capability-index search",
    description="Rank the providers' capabilities for a text (as POST /api/capabilities/retrieve); "
    "rejected candidates leave rank gaps and are named in warnings.",
)
def retrieve_capabilities(request, data: CapabilitiesIn) -> Answer:
    result = service.retrieve_capabilities(request.auth, data.text, data.provider_ids, data.limit)
    payload = {
        "candidates": result.candidates,
        "warnings": [asdict(w) for w in result.warnings],
        "static_revision_by_provider": result.static_revision_by_provider,
    }
    lines = [
        f"{c['rank']}. {c['id']} ({c['provider']} @ {c['static_revision']}): {c['title']}"
        for c in payload["candidates"]
    ]
    return Answer(payload, "\n".join(lines + _warnings(payload)) or "No capability matched.")


@tools.tool(
    name="retrieve_knowledge",
    title="Verified knowledge for selected capabilities",
    input=KnowledgeIn,
    output=KnowledgeOut,
    cost="one hybrid search per namespace of the selected targets, then a byte check of every hit",
    description="Verified, byte-exact knowledge hits for the selected capabilities, with "
    "evidence (as POST "
    "/api/knowledge/retrieve). Stale indexes, revision mismatches and budgets are CG_* errors.",
)
def retrieve_knowledge(request, data: KnowledgeIn) -> Answer:
    selected = [item if isinstance(item, str) else item.dict() for item in data.selected]
    result = knowledge.retrieve_knowledge(
        request.auth, selected, data.text, data.knowledge_ids, data.roles, data.locales, data.limit
    )
    hits = [
        {**h, "citation_url": absolute_url(h["citation_url"], request.kb_base_url)}
        for h in result.hits
    ]
    payload = {
        "hits": hits,
        "evidence": result.evidence,
        "warnings": [asdict(w) for w in result.warnings],
    }
    lines = [
        f"{h['rank']}. {h['title']} [{h['target_id']}] "
        f"bytes {h['start_byte']}-{h['end_byte']}: {h['snippet']}\n"
        f"   cite: {h['citation_url']}"
        for h in payload["hits"]
    ]
    return Answer(payload, "\n".join(lines + _warnings(payload)) or "No knowledge hit.")


def _warnings(payload: dict) -> list[str]:
    return [f"warning {w['code']}: {w['message']}" for w in payload["warnings"]]
