"""Backends plugged in by dotted path in the contract tests. Each wraps the real built-in
backend and breaks one rule of the contract, so the test shows the core catching exactly that."""

from dataclasses import replace

from capabilities.backends import BuiltinKnowledgeRetriever
from capabilities.contracts import CapabilityCandidate

SCRIPT: dict = {}  # what the scripted capability backend returns; set by the test


class ScriptedCapabilityRetriever:
    def retrieve(self, query):
        SCRIPT["query"] = query
        return SCRIPT["candidates"]


class FailingRetriever:
    calls = 0

    def retrieve(self, *args):
        FailingRetriever.calls += 1
        raise RuntimeError("backend is down")


class OldMappingRetriever(BuiltinKnowledgeRetriever):
    def retrieve(self, request, access):
        return replace(super().retrieve(request, access), mapping_revision="0" * 64)


class WrongProviderRevisionRetriever(BuiltinKnowledgeRetriever):
    def retrieve(self, request, access):
        answer = super().retrieve(request, access)
        return replace(
            answer,
            static_revision_by_provider={p: "old" for p in answer.static_revision_by_provider},
        )


class MissingEvidenceRetriever(BuiltinKnowledgeRetriever):
    def retrieve(self, request, access):
        return replace(super().retrieve(request, access), static_revision_by_provider={})


class StaleContentRetriever(BuiltinKnowledgeRetriever):
    def retrieve(self, request, access):
        answer = super().retrieve(request, access)
        return replace(answer, content_ids={t: "stale" for t in answer.content_ids})


class ReadsUnselectedTarget(BuiltinKnowledgeRetriever):
    target = ""

    def retrieve(self, request, access):
        access.read(ReadsUnselectedTarget.target, 1)
        return super().retrieve(request, access)


class KeepsAccess(BuiltinKnowledgeRetriever):
    kept = None

    def retrieve(self, request, access):
        KeepsAccess.kept = access
        return super().retrieve(request, access)


class TamperedHits(BuiltinKnowledgeRetriever):
    """Returns the real hits plus four lies: a shifted range, a changed snippet, a range past the
    end and an unselected target."""

    def retrieve(self, request, access):
        answer = super().retrieve(request, access)
        real = answer.hits[0]
        lies = [
            replace(real, start_byte=real.start_byte + 1),
            replace(real, snippet=real.snippet.upper()),
            replace(real, end_byte=10**9),
            replace(real, target_id="document:999999"),
        ]
        return replace(answer, hits=[real, *lies])


def candidate(cid, revision, score=None):
    return CapabilityCandidate(id=cid, source_static_revision=revision, score=score)
