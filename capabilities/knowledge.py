"""Knowledge retrieval: the selected capabilities expanded into targets, filtered and held to the
budgets, the backend asked through an access object limited to them, and its answer verified."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from capabilities import store
from capabilities.backends import TargetAccess, knowledge_retriever, model_id
from capabilities.contracts import (
    ContractWarning,
    KnowledgeAnswer,
    KnowledgeRequest,
    Target,
    check_hit,
    mapping_revision,
    verify_evidence,
)
from capabilities.errors import BudgetExceeded, RetrieverFailed, RevisionMismatch, UnknownCapability
from kb.audiences import document_filter
from kb.auth import Principal
from kb.conf import kb_settings
from kb.errors import KBError, ValidationFailed
from kb.vocabulary import CAPABILITY_ID_RE
from retrieval.citations import document_citation_url
from retrieval.query import validate_query

logger = logging.getLogger(__name__)


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
