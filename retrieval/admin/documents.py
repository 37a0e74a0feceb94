"""The console's documents and chunks: read-only, searched by their words or exact ref, filtered
by fixed choices (a million rows are never scanned for their distinct values)."""

from django.contrib import admin

from ingest.decisions import EMBED_REASONS
from kb import models
from kb.admin_access import NamespaceScoped, ReadOnlyInConsole, ScopedInline
from kb.admin_audiences import AudienceSetting
from kb.admin_counts import LargeTableAdmin, capped, count_of
from kb.audiences import apply_document
from kb.languages import NAMES as LANGUAGE_NAMES
from kb.languages import name as language_name
from retrieval.lookups import matching_chunk_ids

STORED_MEDIA_TYPES = ("text/markdown", "text/plain")  # what extraction stores (ingest/extract)
MAX_SEARCHED_NAMESPACES = (
    20  # an unfiltered chunk search looks in the first 20 namespaces the curator may read
)


def _matching_chunks(model_admin, request, term: str) -> list[int]:
    """Chunks matching `term` by their words in the namespace the list is filtered to, else in
    the first MAX_SEARCHED_NAMESPACES namespaces the curator is a member of."""
    namespaces = model_admin._principal(request).member_namespaces().values_list("pk", flat=True)
    chosen = request.GET.get("namespace__id__exact")
    if chosen and chosen.isdigit():
        namespaces = namespaces.filter(pk=int(chosen))
    return matching_chunk_ids(list(namespaces[:MAX_SEARCHED_NAMESPACES]), term)


class ChunkInline(ScopedInline, admin.TabularInline):
    model = models.Chunk
    fields = [
        "position",
        "anchor",
        "heading_path",
        "start_byte",
        "end_byte",
        "token_estimate",
        "has_embedding",
    ]
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = False

    @admin.display(boolean=True, description="embedded")
    def has_embedding(self, obj):
        return obj.embedding is not None


def fixed_choices_filter(field: str, title: str, choices: tuple[str, ...]):
    """A list filter offering fixed values: listing the distinct values of a million rows would
    scan them."""

    def lookups(self, request, model_admin):
        return [(value, value) for value in choices]

    def queryset(self, request, queryset):
        return queryset.filter(**{field: self.value()}) if self.value() else queryset

    return type(
        f"{field.title().replace('_', '')}Filter",
        (admin.SimpleListFilter,),
        {"title": title, "parameter_name": field, "lookups": lookups, "queryset": queryset},
    )


# what extraction stores (a document's original type is in its metadata), why a chunk was embedded
MediaTypeFilter = fixed_choices_filter("media_type", "stored as", STORED_MEDIA_TYPES)
EmbedReasonFilter = fixed_choices_filter("embed_reason", "embed reason", EMBED_REASONS)


class LanguageFilter(admin.SimpleListFilter):
    """Documents by detected language, named: the languages a reader may see named (a fixed list;
    a rarer language the detector knows is listed under its code, not offered here), or none."""

    title = "language"
    parameter_name = "language"

    NOT_NAMED = "not named"

    def lookups(self, request, model_admin):
        return [(named, named) for named in sorted(set(LANGUAGE_NAMES.values()))] + [
            (self.NOT_NAMED, "not named")
        ]

    def queryset(self, request, queryset):
        if not self.value():
            return queryset
        if self.value() == self.NOT_NAMED:
            return queryset.filter(language="")
        return queryset.filter(
            language__in=[code for code, named in LANGUAGE_NAMES.items() if named == self.value()]
        )


@admin.register(models.Document)
class DocumentAdmin(AudienceSetting, ReadOnlyInConsole, LargeTableAdmin, NamespaceScoped):
    """Written only by the pipeline: the console shows documents and may delete them, and its
    curators may give one an audience of its own (nothing else of it changes here). Searching
    finds documents by the words of their chunks (the lexical channel) or by their exact ref,
    never by a scan of every title."""

    list_display = [
        "__str__",
        "source",
        "namespace",
        "type_read",
        "language_named",
        "byte_size",
        "chunk_count",
        "indexed_at",
    ]
    list_filter = ["namespace", "source", MediaTypeFilter, LanguageFilter]
    search_fields = ["title"]  # shows the search box; get_search_results does the searching
    readonly_fields = [
        "content_hash",
        "byte_size",
        "indexed_at",
        "embedding_model",
        "etag",
        "last_modified",
    ]
    list_select_related = ["source", "namespace"]
    inlines = [ChunkInline]

    def has_change_permission(self, request, obj=None):
        """A curator of its namespace may set its audience (`get_readonly_fields`: only that)."""
        return NamespaceScoped.has_change_permission(self, request, obj)

    def get_readonly_fields(self, request, obj=None):
        return [
            field.name
            for field in models.Document._meta.fields
            if field.editable and not field.primary_key
        ] + list(self.readonly_fields)

    def get_fields(self, request, obj=None):
        return [*dict.fromkeys(self.get_readonly_fields(request, obj)), "audience_groups"]

    def apply_audience(self, obj) -> None:
        apply_document(obj)

    def get_search_results(self, request, queryset, search_term):
        term = search_term.strip()
        if not term:
            return queryset, False
        by_words = models.Chunk.objects.filter(
            pk__in=_matching_chunks(self, request, term)
        ).values_list("document_id", flat=True)
        by_ref = models.Document.objects.filter(ref=term).values_list(
            "pk", flat=True
        )  # skip scan of (source, ref)
        return queryset.filter(pk__in={*by_words, *by_ref}), False

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(_chunks=count_of(models.Chunk, "document", models.Document))
        )

    @admin.display(description="chunks", ordering="_chunks")
    def chunk_count(self, obj):
        return capped(obj._chunks)

    @admin.display(description="language", ordering="language")
    def language_named(self, obj):
        return language_name(obj.language) if obj.language else "not named"

    @admin.display(description="type")
    def type_read(self, obj):
        """What was read (a PDF's application/pdf); its text is stored as markdown or plain text."""
        return obj.original_type


@admin.register(models.Chunk)
class ChunkAdmin(ReadOnlyInConsole, LargeTableAdmin, NamespaceScoped):
    """Written only by the pipeline. Searching finds chunks by their words through the lexical
    channel (`matching_chunk_ids`), never by a scan of every text."""

    list_display = [
        "__str__",
        "document",
        "anchor",
        "start_byte",
        "end_byte",
        "token_estimate",
        "embed_reason",
    ]
    list_filter = ["namespace", "is_summary", EmbedReasonFilter]
    search_fields = ["text"]  # shows the search box; get_search_results does the searching
    exclude = ["embedding"]
    readonly_fields = [
        "document",
        "namespace",
        "search_vector",
        "embedding_model",
        "embedding_runtime",
        "embed_reason",
    ]
    list_select_related = ["document"]

    def get_search_results(self, request, queryset, search_term):
        if not search_term.strip():
            return queryset, False
        return queryset.filter(pk__in=_matching_chunks(self, request, search_term)), False
