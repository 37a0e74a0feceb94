"""Catalog, capability retrieval and knowledge retrieval: the core that checks every backend.

Used by the API, the admin and the management command. Every function takes the caller's
`Principal`, so a caller only ever sees providers in namespaces it may read.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from django_q.tasks import async_task

from capabilities import store
from capabilities.backends import capability_retriever, index_capabilities
from capabilities.contracts import (
    CapabilityQuery,
    CheckedCandidate,
    ContractWarning,
    check_candidates,
)
from capabilities.definitions import (
    ProviderDefinition,
    parse_definitions,
    parse_provider,
    qualified_id,
)
from capabilities.errors import DefinitionInvalid, RetrieverFailed

# knowledge retrieval lives in knowledge.py; callers above this app reach it here, its public door
from capabilities.knowledge import KnowledgeResult, retrieve_knowledge  # noqa: F401
from kb.auth import Principal
from kb.datafiles import read_data
from kb.errors import KBError, ValidationFailed
from retrieval.query import validate_query

logger = logging.getLogger(__name__)

MAX_PAGE_SIZE = 200
MAX_PAGE = 1_000_000  # far past any catalog's end, and its offset stays inside PostgreSQL's bigint
INDEX_NOW, INDEX_QUEUE, INDEX_SKIP = "now", "queue", "skip"  # when `apply_provider` embeds


# --- definitions -------------------------------------------------------------------------------


def load_definition_file(
    path: str | Path, reindex: bool = True, *, index: str | None = None
) -> list[dict]:
    """Load providers from a JSON or YAML file; one entry per provider: slug, revision, changed."""
    try:
        data = read_data(Path(path).read_text(encoding="utf-8"), str(path))
    except ValueError as exc:
        raise DefinitionInvalid(str(exc)) from exc
    return load_definitions(data, reindex=reindex, index=index)


def load_definitions(data, reindex: bool = True, *, index: str | None = None) -> list[dict]:
    """Apply every provider in `data` and, with `reindex`, embed what changed here and now (or
    as `index` says: `queue` hands it to the worker)."""
    index = index or (INDEX_NOW if reindex else INDEX_SKIP)
    return [apply_provider(definition, index=index) for definition in parse_definitions(data)]


def check_provider(data, slug: str, *, writer: Principal | None = None) -> ProviderDefinition:
    """One provider's definition as typed in the console, its id taken from `slug`: parsed, its
    namespace authorised for `writer` (when given) before the store is asked anything, so
    another tenant's namespace, sources and documents cannot be probed, then resolved against
    the store, so an unknown namespace or source fails before anything is written."""
    definition = dict(data or {})
    definition["id"] = slug or definition.get("id", "")
    parsed = parse_provider(definition)
    if writer is not None:
        writer.check(parsed.namespace, write=True)
        if (
            writer.kind == "member"
            and "." not in parsed.id
            and not store.provider_in(parsed.id, parsed.namespace)
        ):
            # a new plain id could be another tenant's: refusing it as taken would say that it is
            suggested = qualified_id(parsed.namespace, parsed.id)
            raise DefinitionInvalid(
                "Invalid provider definition: provider.id of a new provider a member defines "
                "names its "
                f"namespace: use {suggested!r}, not {parsed.id!r}.",
                details={"field": "provider.id", "suggested": suggested},
            )
    store.resolve_definition(parsed)
    return parsed


def apply_provider(definition: ProviderDefinition, *, index: str = INDEX_NOW) -> dict:
    """Apply a provider's definition (a new revision when it changed) and index its capabilities:
    `now` embeds here, `queue` hands the embedding to the background worker, `skip` leaves it."""
    provider, changed = store.apply_definition(definition)
    report = {
        "provider": provider.slug,
        "revision": definition.static_revision,
        "changed": changed,
        "capabilities": len(definition.capabilities),
        "indexed": 0,
        "task": None,
    }
    if index == INDEX_NOW:
        report["indexed"] = index_capabilities(provider)
    elif index == INDEX_QUEUE:
        report["task"] = async_task(
            "capabilities.tasks.index_provider",
            provider.pk,
            task_name=f"index-provider-{provider.pk}",
        )
    return report


def reindex_provider(provider) -> int:
    """Embed every capability of the provider again, current or not; returns how many."""
    return index_capabilities(provider, force=True)


def index_status(provider) -> dict:
    """The provider's current revision and how many of its capabilities are indexed at it."""
    return store.index_status(provider)


# --- catalog -----------------------------------------------------------------------------------


def catalog(
    principal: Principal, provider_ids: list[str] | None = None, page: int = 1, page_size: int = 50
) -> dict:
    """Every capability of the providers, in a fixed order, a page at a time. Retrieval never
    replaces it, and it does not depend on any retriever being configured or healthy."""
    if not 1 <= page <= MAX_PAGE or not 1 <= page_size <= MAX_PAGE_SIZE:
        raise ValidationFailed(
            f"page must be between 1 and {MAX_PAGE} and page_size between 1 and {MAX_PAGE_SIZE}.",
            details={"page": page, "page_size": page_size},
        )
    slugs = (
        sorted(store.providers(provider_ids, principal.readable()))
        if provider_ids
        else store.readable_provider_slugs(principal.readable())
    )
    revisions = store.current_revisions(slugs)
    total, rows = store.catalog_page(slugs, (page - 1) * page_size, page_size)
    return {
        "providers": [{"id": s, "static_revision": revisions.get(s, "")} for s in slugs],
        "total": total,
        "page": page,
        "page_size": page_size,
        "capabilities": [
            {
                "id": c.canonical_id,
                "provider": c.provider.slug,
                "title": c.title,
                "summary": c.summary,
                "static_revision": revisions.get(c.provider.slug, ""),
            }
            for c in rows
        ],
    }


# --- capability retrieval ----------------------------------------------------------------------


@dataclass
class CapabilityResult:
    candidates: list[dict]
    warnings: list[ContractWarning] = field(default_factory=list)
    static_revision_by_provider: dict[str, str] = field(default_factory=dict)


def retrieve_capabilities(
    principal: Principal, text: str, provider_ids: list[str], limit: int = 10
) -> CapabilityResult:
    text = validate_query(text, limit)
    if not provider_ids:
        raise ValidationFailed(
            "provider_ids must name at least one provider.", details={"field": "provider_ids"}
        )
    requested = tuple(sorted(store.providers(provider_ids, principal.readable())))
    backend = capability_retriever()
    try:
        candidates = backend.retrieve(
            CapabilityQuery(text=text, provider_ids=requested, limit=limit)
        )
    except KBError:
        raise
    except Exception as exc:  # a backend failure is an error, never an empty success
        logger.exception("capability retriever failed")
        raise RetrieverFailed(
            f"The capability retriever failed: {exc.__class__.__name__}: {exc}",
            details={"backend": type(backend).__name__},
        ) from exc
    revisions = store.current_revisions(requested)
    kept, warnings = check_candidates(
        candidates, requested, store.capability_providers(requested), revisions
    )
    records = store.capabilities(c.id for c in kept)
    return CapabilityResult(
        candidates=[_capability_out(c, records[c.id], revisions[c.provider]) for c in kept],
        warnings=warnings,
        static_revision_by_provider=revisions,
    )


def _capability_out(candidate: CheckedCandidate, record, revision: str) -> dict:
    return {
        "id": candidate.id,
        "rank": candidate.rank,
        "score": candidate.score,
        "provider": candidate.provider,
        "title": record.title,
        "summary": record.summary,
        "static_revision": revision,
    }
