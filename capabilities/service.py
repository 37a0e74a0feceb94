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
from capabilities.backends import (
    TargetAccess,
    capability_retriever,
    index_capabilities,
    knowledge_retriever,
    model_id,
)
from capabilities.contracts import (
    CapabilityQuery,
    CheckedCandidate,
    ContractWarning,
    KnowledgeAnswer,
    KnowledgeRequest,
    Target,
    check_candidates,
    check_hit,
    mapping_revision,
    verify_evidence,
)
from capabilities.definitions import (
    ProviderDefinition,
    parse_definitions,
    parse_provider,
    qualified_id,
)
from capabilities.errors import (
    BudgetExceeded,
    DefinitionInvalid,
    RetrieverFailed,
    RevisionMismatch,
    UnknownCapability,
)
from kb.audiences import document_filter
from kb.auth import Principal
from kb.conf import kb_settings
from kb.datafiles import read_data
from kb.errors import KBError, ValidationFailed
from kb.vocabulary import CAPABILITY_ID_RE
from retrieval.citations import document_citation_url
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


# --- knowledge retrieval -----------------------------------------------------------------------


@dataclass
class KnowledgeResult:
    hits: list[dict]
    evidence: dict
    warnings: list[ContractWarning] = field(default_factory=list)


def retrieve_knowledge(
    principal: Principal,
    selected: list,
    text: str,
    knowledge_ids: list[str] | None = None,
    roles: list[str] | None = None,
    locales: list[str] | None = None,
    limit: int = 10,
) -> KnowledgeResult:
    """Expand the selected capabilities into targets, filter them, check the budgets, then ask
    the knowledge backend through an access object limited to those targets, and verify its
    answer: evidence first (revisions, mapping, freshness), then every hit against the bytes."""
    text = validate_query(text, limit)
    wanted = _selected(selected)
    # an id no capability can have (NUL, a lone surrogate, another shape) is unknown without a
    # lookup
    records = store.capabilities(
        [cid for cid in wanted if CAPABILITY_ID_RE.match(cid)], principal.readable()
    )
    missing = sorted(set(wanted) - set(records))
    if missing:
        raise UnknownCapability(
            f"Unknown capability id(s): {', '.join(missing)}.", details={"ids": missing}
        )
    providers = store.providers({r.provider.slug for r in records.values()}, principal.readable())
    revisions = store.current_revisions(providers)
    for cid, seen_revision in wanted.items():
        if seen_revision and seen_revision != revisions.get(records[cid].provider.slug):
            raise RevisionMismatch(
                f"{cid!r} was selected at revision {seen_revision!r}, which is not current.",
                details={
                    "id": cid,
                    "selected": seen_revision,
                    "current": revisions.get(records[cid].provider.slug),
                },
            )
    targets = _filter(
        store.expand_targets(wanted, document_filter(principal.audiences)),
        knowledge_ids,
        roles,
        locales,
    )
    readable = store.readable_source_ids({t.source_id for t in targets}, principal.readable())
    targets = [
        t for t in targets if t.source_id in readable
    ]  # a capability never opens another tenant
    _check_budget(targets)
    target_providers = {t.provider for t in targets}
    request = KnowledgeRequest(
        text=text,
        targets=tuple(targets),
        mapping_revision=mapping_revision(targets),
        static_revision_by_provider={p: revisions[p] for p in sorted(target_providers)},
        limit=limit,
    )
    backend = knowledge_retriever()
    access = TargetAccess(request.targets, principal.audiences)
    try:
        answer = backend.retrieve(request, access)
    except KBError:
        raise
    except (
        Exception
    ) as exc:  # a backend is third-party code: any failure is an error, never an empty success
        logger.exception("knowledge retriever failed")
        raise RetrieverFailed(
            f"The knowledge retriever failed: {exc.__class__.__name__}: {exc}",
            details={"backend": type(backend).__name__},
        ) from exc
    finally:
        access.close()
    current = store.current_records(targets, request.static_revision_by_provider, model_id())
    verify_evidence(answer, request, current)
    hits, warnings = _verified_hits(answer, targets)
    return KnowledgeResult(hits=hits, evidence=_evidence(answer, targets), warnings=warnings)


def _selected(selected) -> dict[str, str]:
    """Capability ids (or {"id", "static_revision"} objects) → {id: revision seen or ""}."""
    if not isinstance(selected, (list, tuple)) or not selected:
        raise ValidationFailed(
            "selected must list at least one capability id.", details={"field": "selected"}
        )
    result = {}
    for item in selected:
        if isinstance(item, str):
            result[item] = ""
        elif isinstance(item, dict) and isinstance(item.get("id"), str):
            result[item["id"]] = str(item.get("static_revision") or "")
        else:
            raise ValidationFailed(
                "Each selected entry is a capability id or {id, static_revision}.",
                details={"field": "selected"},
            )
    return result


def _filter(targets: list[Target], knowledge_ids, roles, locales) -> list[Target]:
    if knowledge_ids is not None:
        targets = [t for t in targets if t.id in set(knowledge_ids)]
    if roles is not None:
        targets = [t for t in targets if t.role in set(roles)]
    if locales is not None:
        targets = [t for t in targets if t.locale in set(locales)]
    return targets


def _check_budget(targets: list[Target]) -> None:
    conf = kb_settings()
    total_bytes = sum(t.byte_size for t in {t.id: t for t in targets}.values())
    if len(targets) > conf.knowledge_max_targets:
        raise BudgetExceeded(
            f"{len(targets)} knowledge targets exceed the budget of {conf.knowledge_max_targets}.",
            details={"targets": len(targets), "max_targets": conf.knowledge_max_targets},
        )
    if total_bytes > conf.knowledge_max_bytes:
        raise BudgetExceeded(
            f"The targets hold {total_bytes} bytes, over the budget of {conf.knowledge_max_bytes}.",
            details={"bytes": total_bytes, "max_bytes": conf.knowledge_max_bytes},
        )


def _verified_hits(
    answer: KnowledgeAnswer, targets: list[Target]
) -> tuple[list[dict], list[ContractWarning]]:
    by_id = {t.id: t for t in targets}
    if not isinstance(answer.hits, (list, tuple)):
        raise RetrieverFailed("The knowledge answer's hits are not a list.")
    wanted_docs = {
        h.document_id
        for h in answer.hits
        if getattr(h, "target_id", None) in by_id
        and getattr(h, "document_id", None) in by_id[h.target_id].document_ids
    }
    data = store.document_bytes(wanted_docs)
    documents = store.documents_with_namespace(wanted_docs)
    hits, warnings = [], []
    for position, hit in enumerate(answer.hits, start=1):
        problem = check_hit(hit, by_id, data)
        if problem:
            warnings.append(
                ContractWarning("CG_HIT_REJECTED", problem, getattr(hit, "target_id", ""), position)
            )
            continue
        target, document = by_id[hit.target_id], documents[hit.document_id]
        anchor = store.chunk_anchor(hit.document_id, hit.start_byte)
        hits.append(
            {
                "rank": position,
                "target_id": target.id,
                "document_id": document.pk,
                "title": document.title,
                "role": target.role,
                "locale": target.locale,
                "capability_ids": list(target.capability_ids),
                "start_byte": hit.start_byte,
                "end_byte": hit.end_byte,
                "snippet": hit.snippet,
                "score": hit.score,
                "citation_url": document_citation_url(
                    url=document.metadata.get("url", ""),
                    ref=document.ref,
                    anchor=anchor,
                    namespace=document.namespace.slug,
                    document_id=document.pk,
                ),
            }
        )
    return hits, warnings


def _evidence(answer: KnowledgeAnswer, targets: list[Target]) -> dict:
    return {
        "targets": [
            {
                "id": t.id,
                "role": t.role,
                "locale": t.locale,
                "capability_ids": list(t.capability_ids),
                "content_id": answer.content_ids.get(t.id),
                "freshness": answer.freshness.get(
                    t.id, "indexed" if t.document_ids else "not_indexed"
                ),
            }
            for t in targets
        ],
        "static_revision_by_provider": answer.static_revision_by_provider,
        "mapping_revision": answer.mapping_revision,
        "source_revisions": {str(k): v for k, v in answer.source_revisions.items()},
        "indexed_config_revision": answer.indexed_config_revision,
        "observed_at": answer.observed_at.isoformat(),
    }
