"""Every ORM query of the capabilities app: definitions, catalog, targets and current records."""

from __future__ import annotations

from django.db import connection, transaction
from django.db.models import Func, IntegerField, Q

from capabilities.contracts import CurrentRecords, Target
from capabilities.definitions import ProviderDefinition
from capabilities.errors import TargetUnknown, UnknownProvider
from ingest.uploads import current_source_revision
from kb.errors import NamespaceUnknown
from kb.models import (
    SEARCH_CONFIG,
    Capability,
    Chunk,
    Document,
    KnowledgeTarget,
    Namespace,
    Provider,
    ProviderRevision,
    Source,
)
from kb.revisions import canonical_hash, config_revision

# --- definitions -------------------------------------------------------------------------------


@transaction.atomic
def apply_definition(definition: ProviderDefinition) -> tuple[Provider, bool]:
    """Create or update a provider, its capabilities and targets from a definition; record a
    new revision when the definition changed. Returns the provider and whether it changed."""
    namespace, resolved = resolve_definition(definition)
    provider, _ = Provider.objects.select_for_update().get_or_create(slug=definition.id)
    revision = definition.static_revision
    current = provider.revisions.filter(is_current=True).first()
    changed = current is None or current.revision != revision
    provider.title, provider.namespace, provider.definition = (
        definition.title,
        namespace,
        definition.as_dict(),
    )
    provider.save()
    if changed:
        provider.revisions.filter(is_current=True).update(is_current=False)
        ProviderRevision.objects.update_or_create(
            provider=provider,
            revision=revision,
            defaults={"definition": definition.as_dict(), "is_current": True},
        )
    wanted = {definition.canonical_id(c): c for c in definition.capabilities}
    provider.capabilities.exclude(canonical_id__in=list(wanted)).delete()
    for canonical_id, capability_def in wanted.items():
        capability, _ = Capability.objects.update_or_create(
            canonical_id=canonical_id,
            defaults={
                "provider": provider,
                "title": capability_def.title,
                "summary": capability_def.summary,
            },
        )
        capability.targets.all().delete()
        KnowledgeTarget.objects.bulk_create(
            [
                KnowledgeTarget(capability=capability, role=t.role, locale=t.locale, **target)
                for t, target in zip(
                    capability_def.knowledge, resolved[capability_def.name], strict=True
                )
            ]
        )
    return provider, changed


def resolve_definition(definition: ProviderDefinition) -> tuple[Namespace, dict[str, list[dict]]]:
    """The definition's namespace and each capability's targets as model objects; raises with a
    stable code when the namespace, a source or a document does not exist. Writes nothing."""
    namespace = Namespace.objects.filter(slug=definition.namespace).first()
    if namespace is None:
        raise NamespaceUnknown(
            f"Namespace {definition.namespace!r} does not exist.",
            details={"namespace": definition.namespace, "provider": definition.id},
        )
    return namespace, {
        c.name: [_resolve_target(namespace, t) for t in c.knowledge]
        for c in definition.capabilities
    }


def _resolve_target(namespace: Namespace, target) -> dict:
    source = Source.objects.filter(namespace=namespace, name=target.source).first()
    if source is None:
        raise TargetUnknown(
            f"Source {target.source!r} does not exist in namespace {namespace.slug!r}.",
            details={"source": target.source},
        )
    if not target.document:
        return {"source": source}
    document = Document.objects.filter(source=source, ref=target.document).first()
    if document is None:
        raise TargetUnknown(
            f"Document {target.document!r} of source {target.source!r} has not been "
            "ingested; ingest the source first.",
            details={"source": target.source, "document": target.document},
        )
    return {"document": document}


# --- providers, revisions, catalog -------------------------------------------------------------


def providers(slugs, readable: Q) -> dict[str, Provider]:
    """The providers named, restricted to namespaces the caller may read; unknown ids raise."""
    found = {
        p.slug: p
        for p in Provider.objects.select_related("namespace").filter(
            slug__in=list(slugs), namespace__in=Namespace.objects.filter(readable)
        )
    }
    missing = sorted(set(slugs) - set(found))
    if missing:
        raise UnknownProvider(
            f"Unknown provider(s): {', '.join(missing)}.", details={"providers": missing}
        )
    return found


def provider_in(slug: str, namespace: str) -> bool:
    """Whether provider `slug` exists in `namespace` (and not merely in another)."""
    return Provider.objects.filter(slug=slug, namespace__slug=namespace).exists()


def readable_provider_slugs(readable: Q) -> list[str]:
    return list(
        Provider.objects.filter(namespace__in=Namespace.objects.filter(readable))
        .order_by("slug")
        .values_list("slug", flat=True)
    )


def current_revisions(provider_slugs) -> dict[str, str]:
    return dict(
        ProviderRevision.objects.filter(
            provider__slug__in=list(provider_slugs), is_current=True
        ).values_list("provider__slug", "revision")
    )


def capability_providers(provider_slugs) -> dict[str, str]:
    """canonical id → provider slug, for the capabilities that exist in these providers."""
    return dict(
        Capability.objects.filter(provider__slug__in=list(provider_slugs)).values_list(
            "canonical_id", "provider__slug"
        )
    )


def capabilities(canonical_ids, readable: Q | None = None) -> dict[str, Capability]:
    """The capabilities of these ids; with `readable`, only those of providers in namespaces the
    caller may read, so another tenant's id looks exactly like one that does not exist."""
    query = Capability.objects.select_related("provider", "provider__namespace").filter(
        canonical_id__in=list(canonical_ids)
    )
    if readable is not None:
        query = query.filter(provider__namespace__in=Namespace.objects.filter(readable))
    return {c.canonical_id: c for c in query}


def catalog_page(provider_slugs, offset: int, limit: int) -> tuple[int, list[Capability]]:
    """Capabilities in a fixed order (provider, then canonical id): the same page every time."""
    query = (
        Capability.objects.filter(provider__slug__in=list(provider_slugs))
        .select_related("provider")
        .order_by("provider__slug", "canonical_id")
    )
    return query.count(), list(query[offset : offset + limit])


# --- knowledge targets -------------------------------------------------------------------------


def readable_source_ids(source_ids, readable_namespaces: Q) -> set[int]:
    """Those of `source_ids` whose namespace matches `readable_namespaces` (a Namespace filter)."""
    return set(
        Source.objects.filter(
            pk__in=list(source_ids), namespace__in=Namespace.objects.filter(readable_namespaces)
        ).values_list("pk", flat=True)
    )


def expand_targets(capability_ids, documents: Q | None = None) -> list[Target]:
    """The selected capabilities' targets, one per (target, role, locale), with the documents
    each covers now that match `documents` (those the caller may read, `kb.audiences`); a target
    named by two capabilities lists both, and a document target whose document does not match
    is left out, as if it were missing."""
    documents = documents if documents is not None else Q()
    rows = (
        KnowledgeTarget.objects.filter(capability__canonical_id__in=list(capability_ids))
        .select_related("capability__provider", "document", "source")
        .order_by("pk")
    )
    merged: dict[tuple, dict] = {}
    for row in rows:
        target_id = f"document:{row.document_id}" if row.document_id else f"source:{row.source_id}"
        key = (target_id, row.role, row.locale)
        entry = merged.setdefault(
            key,
            {
                "provider": row.capability.provider.slug,
                "capabilities": set(),
                "source_id": row.document.source_id if row.document_id else row.source_id,
                "document_id": row.document_id,
            },
        )
        entry["capabilities"].add(row.capability.canonical_id)
    source_documents: dict[int, list[tuple[int, int]]] = {}
    source_ids = {e["source_id"] for e in merged.values() if e["document_id"] is None}
    for doc_id, source_id, size in _document_sizes(Q(source_id__in=source_ids) & documents):
        source_documents.setdefault(source_id, []).append((doc_id, size))
    single = {
        doc_id: size
        for doc_id, _, size in _document_sizes(
            Q(pk__in=[e["document_id"] for e in merged.values() if e["document_id"]]) & documents
        )
    }
    targets = []
    for (target_id, role, locale), e in merged.items():
        if e["document_id"]:
            if e["document_id"] not in single:
                continue
            docs = [(e["document_id"], single[e["document_id"]])]
        else:
            docs = sorted(source_documents.get(e["source_id"], []))
        targets.append(
            Target(
                id=target_id,
                provider=e["provider"],
                capability_ids=tuple(sorted(e["capabilities"])),
                role=role,
                locale=locale,
                source_id=e["source_id"],
                document_ids=tuple(d for d, _ in docs),
                byte_size=sum(s for _, s in docs),
            )
        )
    return sorted(targets, key=lambda t: (t.id, t.role, t.locale))


def _document_sizes(condition: Q):
    """(document id, source id, UTF-8 size of the stored text) for the matching documents."""
    octets = Func("content", function="octet_length", output_field=IntegerField())
    return (
        Document.objects.filter(condition)
        .annotate(octets=octets)
        .values_list("pk", "source_id", "octets")
    )


def content_ids(targets) -> dict[str, str | None]:
    """Per target, a hash of the content it holds: the document's content hash, or for a source
    the hash of its documents' hashes; None when nothing of it was ever indexed."""
    document_ids = {d for t in targets for d in t.document_ids}
    hashes = dict(Document.objects.filter(pk__in=document_ids).values_list("pk", "content_hash"))
    result = {}
    for t in targets:
        if not t.document_ids:
            result[t.id] = None
        elif t.id.startswith("document:"):
            result[t.id] = hashes.get(t.document_ids[0])
        else:
            result[t.id] = canonical_hash(sorted([d, hashes.get(d)] for d in t.document_ids))
    return result


def current_records(
    targets, static_revision_by_provider: dict[str, str], embedding_model: str
) -> CurrentRecords:
    sources = Source.objects.filter(pk__in={t.source_id for t in targets})
    return CurrentRecords(
        content_ids=content_ids(targets),
        static_revision_by_provider=static_revision_by_provider,
        source_revisions={s.pk: current_source_revision(s) for s in sources},
        config_revision=config_revision(embedding_model),
    )


def indexed_source_revisions(source_ids) -> dict[int, str]:
    return dict(
        Source.objects.filter(pk__in=list(source_ids)).values_list("pk", "indexed_revision")
    )


def indexed_config_revision(document_ids, fallback_model: str) -> str:
    models = sorted(
        set(
            Document.objects.filter(pk__in=list(document_ids)).values_list(
                "embedding_model", flat=True
            )
        )
    )
    if not models:
        return config_revision(fallback_model)
    return config_revision(models[0] if len(models) == 1 else "|".join(models))


def document_bytes(document_ids) -> dict[int, bytes]:
    return {
        pk: content.encode("utf-8")
        for pk, content in Document.objects.filter(pk__in=list(document_ids)).values_list(
            "pk", "content"
        )
    }


def documents_with_namespace(document_ids) -> dict[int, Document]:
    return {
        d.pk: d
        for d in Document.objects.select_related("namespace", "source")
        .filter(pk__in=list(document_ids))
        .defer("content")
    }


def chunk_anchor(document_id: int, start_byte: int) -> str:
    chunk = (
        Chunk.objects.filter(
            document_id=document_id, start_byte__lte=start_byte, end_byte__gt=start_byte
        )
        .order_by("position")
        .values_list("anchor", flat=True)
        .first()
    )
    return chunk or ""


# --- the built-in capability index -------------------------------------------------------------


def capabilities_to_index(provider: Provider, revision: str, force: bool) -> list[Capability]:
    query = provider.capabilities.all()
    if not force:
        query = query.exclude(indexed_revision=revision)
    return list(query)


def save_capability_index(capability: Capability, text: str, embedding, revision: str) -> None:
    Capability.objects.filter(pk=capability.pk).update(
        indexed_text=text, indexed_embedding=list(embedding), indexed_revision=revision
    )


def indexed_capabilities(provider_slugs):
    return list(
        Capability.objects.filter(
            provider__slug__in=list(provider_slugs), indexed_embedding__isnull=False
        ).values_list("pk", "canonical_id", "indexed_text", "indexed_embedding", "indexed_revision")
    )


def capability_lexemes(capability_pks) -> dict[int, dict[str, int]]:
    """Each capability's indexed text as lexemes with frequencies, lexed (and folded) as passages
    are."""
    result: dict[int, dict[str, int]] = {}
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT c.id, t.lexeme, coalesce(array_length(t.positions, 1), 1)
               FROM kb_capability c, unnest(kb_lex(%s, c.indexed_text)) t
               WHERE c.id = ANY(%s)""",
            [SEARCH_CONFIG, list(capability_pks)],
        )
        for pk, lexeme, tf in cursor.fetchall():
            result.setdefault(pk, {})[lexeme] = int(tf)
    return result


def index_status(provider: Provider) -> dict:
    current = (
        provider.revisions.filter(is_current=True).values_list("revision", flat=True).first() or ""
    )
    total = provider.capabilities.count()
    indexed = provider.capabilities.filter(
        indexed_revision=current, indexed_embedding__isnull=False
    ).count()
    return {
        "revision": current,
        "capabilities": total,
        "indexed": indexed,
        "current": total == indexed,
    }
