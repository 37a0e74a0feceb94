"""The knowledge base's data, one module per concern; every model is importable from `kb.models`."""

from kb.models.access import ApiToken, Namespace, NamespaceMembership, RateCounter
from kb.models.answers import AnswerLog
from kb.models.audiences import Audience
from kb.models.capabilities import Capability, KnowledgeTarget, Provider, ProviderRevision
from kb.models.content import SEARCH_CONFIG, Chunk, Document, Source, SourceFile
from kb.models.identity import (
    ExternalIdentity,
    GroupRule,
    IdentityProvider,
    RestrictedRead,
    SignIn,
)
from kb.models.postings import (
    ChunkTerm,
    NamespaceStats,
    PostingList,
    PostingListBuild,
    PostingListChange,
)
from kb.models.runs import IngestItem, IngestRun
from kb.models.search import (
    EvalRun,
    EvalSuite,
    FusionCalibration,
    MeaningEstimate,
    QueryFeedback,
    QueryLog,
)

__all__ = [
    "SEARCH_CONFIG",
    "AnswerLog",
    "Audience",
    "ApiToken",
    "Capability",
    "Chunk",
    "ChunkTerm",
    "Document",
    "EvalRun",
    "EvalSuite",
    "FusionCalibration",
    "IngestItem",
    "IngestRun",
    "KnowledgeTarget",
    "Namespace",
    "NamespaceMembership",
    "NamespaceStats",
    "PostingList",
    "PostingListBuild",
    "PostingListChange",
    "Provider",
    "ProviderRevision",
    "MeaningEstimate",
    "QueryFeedback",
    "QueryLog",
    "RateCounter",
    "Source",
    "SourceFile",
    "ExternalIdentity",
    "GroupRule",
    "IdentityProvider",
    "RestrictedRead",
    "SignIn",
]
