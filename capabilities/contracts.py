"""The capability and knowledge retriever contracts, and the core's checks on them. Pure.

Backends are untrusted helpers: the core never passes on a capability, a revision or a byte range
it has not checked against its own records. These dataclasses are what backends receive and
return; the functions below are the checks, free of ORM and I/O so each rule is easy to test.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Mapping

from capabilities.errors import IndexStale, RetrieverFailed, RevisionMismatch
from kb.revisions import canonical_hash

# --- capability retrieval ----------------------------------------------------------------------


@dataclass(frozen=True)
class CapabilityQuery:
    text: str
    provider_ids: tuple[str, ...]
    limit: int


@dataclass(frozen=True)
class CapabilityCandidate:
    """One entry of a backend's ranked list."""

    id: str
    source_static_revision: str  # the provider revision the backend's index was built from
    score: float | None = None


@dataclass(frozen=True)
class ContractWarning:
    code: str
    message: str
    id: str = ""
    rank: int | None = None


@dataclass(frozen=True)
class CheckedCandidate:
    id: str
    rank: int  # the 1-based position in the backend's list: rejected entries leave gaps
    score: float | None
    provider: str


def check_candidates(
    candidates,
    requested: tuple[str, ...],
    provider_of: Mapping[str, str],
    current_revision: Mapping[str, str],
) -> tuple[list[CheckedCandidate], list[ContractWarning]]:
    """Keep the candidates whose provider is in scope, whose capability exists and whose index
    revision is the provider's current one; each rejected candidate leaves a gap and a warning.
    Nothing is re-sorted and no score is re-normalised."""
    if not isinstance(candidates, (list, tuple)):
        raise RetrieverFailed(
            "The capability retriever did not return a list of candidates.",
            details={"returned": type(candidates).__name__},
        )
    kept, warnings, seen = [], [], set()
    for rank, candidate in enumerate(candidates, start=1):
        if not isinstance(candidate, CapabilityCandidate) or not isinstance(candidate.id, str):
            raise RetrieverFailed(
                f"Candidate {rank} is not a CapabilityCandidate.", details={"rank": rank}
            )
        cid = candidate.id
        provider = cid.split("/", 1)[0] if "/" in cid else ""
        if provider not in requested:
            warnings.append(
                ContractWarning(
                    "CG_OUT_OF_SCOPE",
                    f"{cid!r} belongs to provider {provider!r}, which the request did not include.",
                    cid,
                    rank,
                )
            )
        elif cid not in provider_of:
            warnings.append(
                ContractWarning("CG_UNKNOWN_CAPABILITY", f"{cid!r} does not exist.", cid, rank)
            )
        elif candidate.source_static_revision != current_revision.get(provider):
            warnings.append(
                ContractWarning(
                    "CG_REVISION_MISMATCH",
                    f"{cid!r} was indexed from revision "
                    f"{candidate.source_static_revision!r}, the current one "
                    f"is {current_revision.get(provider)!r}.",
                    cid,
                    rank,
                )
            )
        elif cid in seen:
            warnings.append(
                ContractWarning("CG_DUPLICATE_CANDIDATE", f"{cid!r} is listed twice.", cid, rank)
            )
        else:
            seen.add(cid)
            kept.append(CheckedCandidate(cid, rank, candidate.score, provider))
    return kept, warnings


# --- knowledge retrieval -----------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """A knowledge target after expansion: a document, or a source acting as a collection."""

    id: str  # "document:<pk>" or "source:<pk>"
    provider: str
    capability_ids: tuple[str, ...]
    role: str
    locale: str
    source_id: int
    document_ids: tuple[int, ...]  # the documents it covers now (one for a document target)
    byte_size: int


def mapping_revision(targets: list[Target] | tuple[Target, ...]) -> str:
    """A hash of which targets were selected, for which capabilities, with which role and
    locale: a backend answering for another mapping is answering another question."""
    return canonical_hash(
        sorted([t.id, t.role, t.locale, sorted(t.capability_ids)] for t in targets)
    )


@dataclass(frozen=True)
class KnowledgeRequest:
    text: str
    targets: tuple[Target, ...]
    mapping_revision: str
    static_revision_by_provider: dict[str, str]
    limit: int


@dataclass(frozen=True)
class KnowledgeHit:
    target_id: str
    document_id: int
    start_byte: int  # UTF-8 byte offsets into the document's stored text, [start, end)
    end_byte: int
    snippet: str  # exactly those bytes, decoded
    score: float | None = None


@dataclass(frozen=True)
class KnowledgeAnswer:
    hits: list[KnowledgeHit]
    content_ids: dict[
        str, str | None
    ]  # per target: the content the index holds (None: never indexed)
    static_revision_by_provider: dict[str, str]
    mapping_revision: str
    source_revisions: dict[int, str]  # per source: the source revision the index was built from
    indexed_config_revision: str
    observed_at: datetime
    freshness: dict[str, str] = field(default_factory=dict)  # per target: "indexed" | "not_indexed"


@dataclass(frozen=True)
class CurrentRecords:
    """What the core itself knows now, to check an answer against."""

    content_ids: dict[str, str | None]
    static_revision_by_provider: dict[str, str]
    source_revisions: dict[int, str]
    config_revision: str


def verify_evidence(answer, request: KnowledgeRequest, current: CurrentRecords) -> None:
    """Raise unless the answer's evidence is complete and current. Revisions the core cannot
    match are CG_REVISION_MISMATCH; an index behind the content is CG_INDEX_STALE."""
    if not isinstance(answer, KnowledgeAnswer):
        raise RetrieverFailed(
            "The knowledge retriever did not return a KnowledgeAnswer.",
            details={"returned": type(answer).__name__},
        )
    expected_providers = set(request.static_revision_by_provider)
    if set(answer.static_revision_by_provider) != expected_providers:
        raise RevisionMismatch(
            "The evidence must name a static revision for exactly the targets' providers.",
            details={
                "expected": sorted(expected_providers),
                "got": sorted(answer.static_revision_by_provider),
            },
        )
    for provider, revision in answer.static_revision_by_provider.items():
        if revision != current.static_revision_by_provider.get(provider):
            raise RevisionMismatch(
                f"The answer was built for revision {revision!r} of provider {provider!r}; "
                "the current one differs.",
                details={
                    "provider": provider,
                    "got": revision,
                    "current": current.static_revision_by_provider.get(provider),
                },
            )
    if answer.mapping_revision != request.mapping_revision:
        raise RevisionMismatch(
            "The answer was built for another mapping of capabilities to targets.",
            details={"got": answer.mapping_revision, "expected": request.mapping_revision},
        )
    if answer.indexed_config_revision != current.config_revision:
        raise IndexStale(
            "The index was built with another configuration (embedding model).",
            details={"indexed": answer.indexed_config_revision, "current": current.config_revision},
        )
    for target in request.targets:
        if target.id not in answer.content_ids:
            raise RevisionMismatch(
                f"The evidence has no content id for target {target.id!r}.",
                details={"target": target.id},
            )
        if answer.content_ids[target.id] != current.content_ids.get(target.id):
            raise IndexStale(
                f"The index holds other content for target {target.id!r} than the store does.",
                details={
                    "target": target.id,
                    "indexed": answer.content_ids[target.id],
                    "current": current.content_ids.get(target.id),
                },
            )
        if not target.document_ids and answer.content_ids[target.id] is None:
            continue  # never indexed: the evidence says so ("not_indexed"), which is not stale data
        source_id = target.source_id
        if source_id not in answer.source_revisions:
            raise RevisionMismatch(
                f"The evidence has no source revision for source {source_id}.",
                details={"source": source_id},
            )
        if answer.source_revisions[source_id] != current.source_revisions.get(source_id):
            raise IndexStale(
                f"Source {source_id} changed after it was indexed; re-ingest it first.",
                details={
                    "source": source_id,
                    "indexed": answer.source_revisions[source_id],
                    "current": current.source_revisions.get(source_id),
                },
            )


def check_hit(
    hit, targets: Mapping[str, Target], document_bytes: Mapping[int, bytes]
) -> str | None:
    """Why a hit is refused, or None: it must name a selected target, a document of that
    target, a byte range inside the document, and a snippet equal to exactly those bytes."""
    if not isinstance(hit, KnowledgeHit):
        return "not a KnowledgeHit"
    target = targets.get(hit.target_id)
    if target is None:
        return f"target {hit.target_id!r} was not selected"
    if hit.document_id not in target.document_ids:
        return f"document {hit.document_id} is not part of target {hit.target_id!r}"
    data = document_bytes.get(hit.document_id)
    if data is None:
        return f"document {hit.document_id} does not exist"
    if not (
        isinstance(hit.start_byte, int)
        and isinstance(hit.end_byte, int)
        and 0 <= hit.start_byte < hit.end_byte <= len(data)
    ):
        return (
            f"byte range [{hit.start_byte}, {hit.end_byte}) is outside the "
            f"document's {len(data)} bytes"
        )
    try:
        actual = data[hit.start_byte : hit.end_byte].decode("utf-8")
    except UnicodeDecodeError:
        return "the byte range cuts a UTF-8 character"
    if hit.snippet != actual:
        return "the snippet differs from the bytes at that range"
    return None
