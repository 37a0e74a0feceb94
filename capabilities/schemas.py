"""Request and response shapes of the capabilities API (OpenAPI via django-ninja)."""

from __future__ import annotations

from ninja import Field, Schema


class CatalogIn(Schema):
    provider_ids: list[str] | None = None
    page: int = Field(
        1, ge=1, le=1_000_000
    )  # capabilities.service.MAX_PAGE: an offset PostgreSQL can take
    page_size: int = Field(50, ge=1, le=200)


class ProviderRef(Schema):
    id: str
    static_revision: str


class CatalogEntry(Schema):
    id: str
    provider: str
    title: str
    summary: str
    static_revision: str


class CatalogOut(Schema):
    providers: list[ProviderRef]
    total: int
    page: int
    page_size: int
    capabilities: list[CatalogEntry]


class WarningOut(Schema):
    code: str
    message: str
    id: str = ""
    rank: int | None = None


class CapabilitiesIn(Schema):
    text: str = Field(..., max_length=4000)
    provider_ids: list[str] = Field(..., min_length=1, max_length=100)
    limit: int = Field(10, ge=1, le=100)


class CapabilityOut(Schema):
    id: str
    rank: int
    score: float | None
    provider: str
    title: str
    summary: str
    static_revision: str


class CapabilitiesOut(Schema):
    candidates: list[CapabilityOut]
    warnings: list[WarningOut]
    static_revision_by_provider: dict[str, str]


class SelectedCapability(Schema):
    id: str
    static_revision: str = ""


class KnowledgeIn(Schema):
    selected: list[str | SelectedCapability] = Field(..., min_length=1, max_length=100)
    text: str = Field(..., max_length=4000)
    knowledge_ids: list[str] | None = None
    roles: list[str] | None = None
    locales: list[str] | None = None
    limit: int = Field(10, ge=1, le=100)


class KnowledgeHitOut(Schema):
    rank: int
    target_id: str
    document_id: int
    title: str
    role: str
    locale: str
    capability_ids: list[str]
    start_byte: int
    end_byte: int
    snippet: str
    score: float | None
    citation_url: str


class TargetEvidence(Schema):
    id: str
    role: str
    locale: str
    capability_ids: list[str]
    content_id: str | None
    freshness: str


class Evidence(Schema):
    targets: list[TargetEvidence]
    static_revision_by_provider: dict[str, str]
    mapping_revision: str
    source_revisions: dict[str, str]
    indexed_config_revision: str
    observed_at: str


class KnowledgeOut(Schema):
    hits: list[KnowledgeHitOut]
    evidence: Evidence
    warnings: list[WarningOut]
