"""Retriever backends: the query-scoped access object and the built-in retrievers.

A backend is any object with `retrieve(...)`; settings choose it by dotted path
(`KB_CAPABILITY_RETRIEVER`, `KB_KNOWLEDGE_RETRIEVER`), "builtin" for the ones below, "none" for
none. The core (`capabilities/service.py`) checks whatever a backend returns.
"""

from __future__ import annotations

import math
from typing import Protocol

from django.utils import timezone
from django.utils.module_loading import import_string

from capabilities import store
from capabilities.contracts import (
    CapabilityCandidate,
    CapabilityQuery,
    KnowledgeAnswer,
    KnowledgeHit,
    KnowledgeRequest,
    Target,
)
from capabilities.errors import AccessClosed, AccessDenied, RetrieverUnconfigured
from kb.conf import kb_settings
from kb.embedding.embedders import get_embedder
from kb.errors import ConfigurationError
from retrieval import bm25
from retrieval.lookups import query_terms
from retrieval.ranker import LEXICAL, VECTOR, Candidate, ChannelHit, RankerParams, rank
from retrieval.service import Filters, search


class CapabilityRetriever(Protocol):
    def retrieve(self, query: CapabilityQuery) -> list[CapabilityCandidate]: ...


class KnowledgeRetriever(Protocol):
    def retrieve(self, request: KnowledgeRequest, access: "TargetAccess") -> KnowledgeAnswer: ...


def capability_retriever() -> CapabilityRetriever:
    return _load(
        kb_settings().capability_retriever, BuiltinCapabilityRetriever, "KB_CAPABILITY_RETRIEVER"
    )


def knowledge_retriever() -> KnowledgeRetriever:
    return _load(
        kb_settings().knowledge_retriever, BuiltinKnowledgeRetriever, "KB_KNOWLEDGE_RETRIEVER"
    )


def _load(setting: str, builtin, name: str):
    if setting in ("", "none"):
        raise RetrieverUnconfigured(
            f"No retriever is configured ({name} is {setting!r}).", details={"setting": name}
        )
    if setting == "builtin":
        return builtin()
    try:
        return import_string(setting)()
    except ImportError as exc:
        raise ConfigurationError(
            f"{name}={setting!r} cannot be imported: {exc}", details={"setting": name}
        ) from exc


class TargetAccess:
    """What a knowledge backend may read: only the listed targets, and only during the call.
    `reach`: the audiences the caller reads (`kb.audiences`); its targets list only documents
    the caller may read, and its searches read no others either."""

    def __init__(self, targets: tuple[Target, ...], reach: frozenset[int] | None = frozenset()):
        self._targets = {t.id: t for t in targets}
        self._reach = reach
        self._open = True

    @property
    def target_ids(self) -> tuple[str, ...]:
        return tuple(self._targets)

    def close(self) -> None:
        self._open = False

    def _target(self, target_id: str) -> Target:
        if not self._open:
            raise AccessClosed("This access object was valid only during the retrieval call.")
        target = self._targets.get(target_id)
        if target is None:
            raise AccessDenied(
                f"Target {target_id!r} was not selected for this query.",
                details={"target": target_id},
            )
        return target

    def document_ids(self, target_id: str) -> tuple[int, ...]:
        return self._target(target_id).document_ids

    def read(self, target_id: str, document_id: int) -> bytes:
        """The stored UTF-8 text of one document of a selected target."""
        if document_id not in self._target(target_id).document_ids:
            raise AccessDenied(
                f"Document {document_id} is not part of target {target_id!r}.",
                details={"target": target_id, "document": document_id},
            )
        return store.document_bytes([document_id]).get(document_id, b"")

    def search(self, text: str, target_ids: tuple[str, ...] | None = None, limit: int = 10):
        """Our hybrid search restricted to the documents of the selected targets; (target id,
        hit) pairs, best first."""
        wanted = [self._target(t) for t in (target_ids or self.target_ids)]
        owner: dict[int, str] = {}
        for target in wanted:
            for document_id in target.document_ids:
                owner.setdefault(document_id, target.id)
        if not owner:
            return []
        documents = store.documents_with_namespace(owner)
        by_namespace: dict[str, list[int]] = {}
        for document_id, document in documents.items():
            by_namespace.setdefault(document.namespace.slug, []).append(document_id)
        pairs = []
        for namespace, document_ids in sorted(by_namespace.items()):
            result = search(
                text,
                namespace,
                filters=Filters(document_ids=tuple(sorted(document_ids))),
                limit=limit,
                log=False,
                reach=self._reach,
            )
            pairs.extend((owner[hit.document_id], hit) for hit in result.hits)
        pairs.sort(key=lambda pair: (-pair[1].score, pair[1].chunk_id))
        return pairs[:limit]

    def evidence(self) -> dict:
        """What the index holds for the selected targets, as the index itself records it."""
        targets = tuple(self._target(t) for t in self.target_ids)
        document_ids = {d for t in targets for d in t.document_ids}
        return {
            "content_ids": store.content_ids(targets),
            "source_revisions": store.indexed_source_revisions({t.source_id for t in targets}),
            "indexed_config_revision": store.indexed_config_revision(document_ids, model_id()),
            "freshness": {t.id: "indexed" if t.document_ids else "not_indexed" for t in targets},
        }


def model_id() -> str:
    """The configured embedder's model id: what the index's configuration revision names."""
    return get_embedder().model_id


class BuiltinKnowledgeRetriever:
    """Searches our own chunks, restricted to the selected targets; hits are whole chunks."""

    def retrieve(self, request: KnowledgeRequest, access: TargetAccess) -> KnowledgeAnswer:
        hits = []
        for target_id, hit in access.search(request.text, limit=request.limit):
            data = access.read(target_id, hit.document_id)
            hits.append(
                KnowledgeHit(
                    target_id=target_id,
                    document_id=hit.document_id,
                    start_byte=hit.start_byte,
                    end_byte=hit.end_byte,
                    snippet=data[hit.start_byte : hit.end_byte].decode("utf-8"),
                    score=hit.score,
                )
            )
        evidence = access.evidence()
        return KnowledgeAnswer(
            hits=hits,
            static_revision_by_provider=dict(request.static_revision_by_provider),
            mapping_revision=request.mapping_revision,
            observed_at=timezone.now(),
            **evidence,
        )


class BuiltinCapabilityRetriever:
    """Ranks capabilities by their indexed title and summary with the hybrid ranker: cosine to
    the query and BM25 over the capabilities in scope, fused as for chunks."""

    def retrieve(self, query: CapabilityQuery) -> list[CapabilityCandidate]:
        rows = store.indexed_capabilities(query.provider_ids)
        if not rows:
            return []
        vector = get_embedder().embed_query(query.text)
        cosines = {pk: _cosine(vector, embedding) for pk, _, _, embedding, _ in rows}
        bm25_scores = _bm25(query.text, store.capability_lexemes([r[0] for r in rows]))
        by_cosine = sorted(cosines, key=lambda pk: (-cosines[pk], pk))
        by_bm25 = sorted(bm25_scores, key=lambda pk: (-bm25_scores[pk], pk))
        hits: dict[int, dict[str, ChannelHit]] = {}
        for position, pk in enumerate(by_cosine, start=1):
            hits.setdefault(pk, {})[VECTOR] = ChannelHit(position, cosines[pk])
        for position, pk in enumerate(by_bm25, start=1):
            hits.setdefault(pk, {})[LEXICAL] = ChannelHit(position, bm25_scores[pk])
        candidates = [
            Candidate(
                key=canonical_id,
                kind="capability",
                group=canonical_id,
                path=canonical_id,
                text=f"{canonical_id}\n{text}",
                cosine=cosines[pk],
                hits=hits[pk],
            )
            for pk, canonical_id, text, _, _ in rows
        ]
        ranking = rank(candidates, RankerParams(limit=query.limit))
        revision = {canonical_id: revision for _, canonical_id, _, _, revision in rows}
        return [
            CapabilityCandidate(
                id=d.key, score=round(d.score, 6), source_static_revision=revision[d.key]
            )
            for d in ranking.kept
        ]


def index_capabilities(provider, force: bool = False) -> int:
    """Embed the title and summary of the provider's capabilities whose index is behind its
    current revision; returns how many were (re-)indexed."""
    status = store.index_status(provider)
    todo = store.capabilities_to_index(provider, status["revision"], force)
    if not todo:
        return 0
    texts = [f"{c.title}\n\n{c.summary}".strip() for c in todo]
    vectors = get_embedder().embed_documents(texts)
    for capability, text, vector in zip(todo, texts, vectors, strict=True):
        store.save_capability_index(capability, text, vector, status["revision"])
    return len(todo)


def _cosine(a, b) -> float:
    dot = float(sum(float(x) * float(y) for x, y in zip(a, b, strict=False)))
    norm = math.sqrt(sum(float(x) ** 2 for x in a)) * math.sqrt(sum(float(y) ** 2 for y in b))
    return dot / norm if norm else 0.0


def _bm25(text: str, documents: dict[int, dict[str, int]]) -> dict[int, float]:
    """BM25 of the query over a small set of documents held in memory (the capabilities)."""
    if not documents:
        return {}
    n = len(documents)
    lengths = {pk: sum(terms.values()) for pk, terms in documents.items()}
    avgdl = max(1.0, sum(lengths.values()) / n)
    scores: dict[int, float] = {}
    for lexeme, qtf in query_terms(text):
        df = sum(1 for terms in documents.values() if lexeme in terms)
        if not df:
            continue
        weight = bm25.Term(lexeme, qtf, df).weight(n)
        for pk, terms in documents.items():
            tf = terms.get(lexeme)
            if tf:
                scores[pk] = scores.get(pk, 0.0) + weight * bm25.impact(tf, lengths[pk], avgdl)
    return scores
