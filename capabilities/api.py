"""Catalog and retrieval endpoints. Thin: parse, call the service (which checks access), shape."""

from dataclasses import asdict

from ninja import Query, Router

from capabilities import knowledge, service
from capabilities.schemas import (
    CapabilitiesIn,
    CapabilitiesOut,
    CatalogIn,
    CatalogOut,
    KnowledgeIn,
    KnowledgeOut,
)

router = Router(tags=["capabilities"])


@router.get(
    "/capabilities/catalog",
    response=CatalogOut,
    summary="All capabilities of the providers, paginated",
)
def catalog(request, params: Query[CatalogIn]):
    return service.catalog(request.auth, params.provider_ids, params.page, params.page_size)


@router.post(
    "/capabilities/retrieve",
    response=CapabilitiesOut,
    summary="Rank capabilities for a text; rejected candidates leave rank gaps",
)
def retrieve_capabilities(request, data: CapabilitiesIn):
    result = service.retrieve_capabilities(request.auth, data.text, data.provider_ids, data.limit)
    return {
        "candidates": result.candidates,
        "warnings": [asdict(w) for w in result.warnings],
        "static_revision_by_provider": result.static_revision_by_provider,
    }


@router.post(
    "/knowledge/retrieve",
    response=KnowledgeOut,
    summary="Verified, byte-exact knowledge hits for selected capabilities, with evidence",
)
def retrieve_knowledge(request, data: KnowledgeIn):
    selected = [item if isinstance(item, str) else item.dict() for item in data.selected]
    result = knowledge.retrieve_knowledge(
        request.auth, selected, data.text, data.knowledge_ids, data.roles, data.locales, data.limit
    )
    return {
        "hits": result.hits,
        "evidence": result.evidence,
        "warnings": [asdict(w) for w in result.warnings],
    }
