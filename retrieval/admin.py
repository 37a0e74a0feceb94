"""The curator's console for what is searched and what searching produced: documents and their
chunks (searched by their words), fusion calibrations, the query log, and the namespaces with what
searching found out about them (their weights, their meaning channel, their text search)."""

from django.contrib import admin, messages
from django.db.models import Count
from django_q.tasks import async_task

from ingest.decisions import EMBED_REASONS
from kb import models
from kb.admin_access import (
    AudienceSetting,
    LargeTableAdmin,
    NamespaceScoped,
    ReadOnlyInConsole,
    ScopedInline,
    capped,
    count_of,
)
from kb.audiences import apply_document
from kb.conf import kb_settings
from kb.embedding.compared import foreign_passages
from kb.embedding.embedders import get_embedder
from kb.languages import NAMES as LANGUAGE_NAMES
from kb.languages import name as language_name
from kb.lexing import passages_by_config
from kb.model_languages import languages_queries_decide, leaves_out, unread_share
from retrieval.breadth import ESTIMATE_MIN_SEARCHES, WORDS_OFF_EXCESS, broad, log_summary
from retrieval.lookups import matching_chunk_ids

STORED_MEDIA_TYPES = ("text/markdown", "text/plain")  # what extraction stores (ingest/extract)
MAX_SEARCHED_NAMESPACES = (
    20  # an unfiltered chunk search looks in the first 20 namespaces the curator may read
)


@admin.register(models.FusionCalibration)
class FusionCalibrationAdmin(NamespaceScoped):
    """Fitted by `kb_bench` or `kb_eval --fit`, never typed in; deleting one returns the
    namespace to the default weights."""

    list_display = [
        "namespace",
        "lexical_weight",
        "fitted_on",
        "queries",
        "cross_validated_ndcg",
        "default_ndcg",
        "version",
        "fitted_at",
    ]
    readonly_fields = list_display

    def has_add_permission(self, request):
        return False


@admin.register(models.QueryLog)
class QueryLogAdmin(NamespaceScoped):
    list_display = ["query", "namespace", "caller", "result_count", "total_ms", "created_at"]
    list_filter = ["caller", "namespace"]
    search_fields = ["query"]
    readonly_fields = ["namespace", "query", "caller", "result_ids", "timings", "created_at"]

    def has_add_permission(self, request):
        return False

    @admin.display(description="results")
    def result_count(self, obj):
        return len(obj.result_ids)

    @admin.display(description="ms")
    def total_ms(self, obj):
        return obj.timings.get("total_ms")


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


def _named(languages: tuple[str, ...]) -> str:
    return " or ".join(language_name(code) for code in languages)


@admin.register(models.Namespace)
class NamespaceAdmin(NamespaceScoped):
    """Members see and edit their namespaces; creating or deleting a tenant is a superuser's."""

    list_display = [
        "slug",
        "title",
        "is_public",
        "language",
        "source_count",
        "fusion_weights",
        "created_at",
    ]
    list_filter = ["is_public", "language"]
    search_fields = ["slug", "title"]
    readonly_fields = ["fusion_weights", "text_search", "meaning_channel"]
    actions = ["lex_again"]

    def get_readonly_fields(self, request, obj=None):
        """A member edits the namespace's title, description and language; its slug (unique across
        every tenant: a refused rename would name another tenant's) and whether anyone may read
        it are a superuser's."""
        fields = list(super().get_readonly_fields(request, obj))
        return fields if request.user.is_superuser else ["slug", "is_public", *fields]

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if change and "language" in form.changed_data:
            self._lex_again(request, [obj])

    @admin.action(description="Lex stored passages again in the language setting")
    def lex_again(self, request, queryset):
        self._lex_again(request, queryset)

    def _lex_again(self, request, namespaces):
        for namespace in namespaces:
            async_task(
                "kb.lexing.apply_language_task",
                namespace.pk,
                task_name=f"lex-namespace-{namespace.pk}",
            )
            self.message_user(
                request,
                f"Namespace {namespace}: its passages are being lexed again in the background "
                '("text search" on its page shows the progress).',
                messages.INFO,
            )

    @admin.display(description="meaning (vector) channel")
    def meaning_channel(self, obj):
        foreign = foreign_passages(obj.passage_models, get_embedder().model_id)
        languages = ", ".join(
            f"{language_name(code) if code else 'not named'}: {n:,}"
            for code, n in sorted(obj.document_languages.items(), key=lambda item: -item[1])
        )
        if foreign is not None and foreign.whole:
            return f"not used. {foreign.said()} (documents by language: {languages or 'none yet'})"
        models = f"{foreign.said()} " if foreign is not None else ""
        read = kb_settings().embedding_languages
        share, language = unread_share(obj.document_languages, read)
        fitted = getattr(obj, "fusion", None) is not None
        words_alone, with_meaning = languages_queries_decide(obj.document_languages, read)
        if leaves_out(share) and not fitted:
            verdict = (
                f"not used: {share:.0%} of the documents are in {language}, which the "
                "embedding model is not said to read; searches rank by words alone"
                + (f", except a query in {_named(with_meaning)}" if with_meaning else "")
                + ", unless the model is measured to read the text in part (a namespace of 30 "
                "documents or "
                "more: then meaning counts at a quarter, as each search's explanation says)"
            )
        elif share:
            verdict = (
                f"used; {share:.0%} of the documents are in {language}, which the embedding "
                "model does not read"
                + (
                    f"; a query in {_named(words_alone)} is ranked by words alone"
                    if words_alone and not fitted
                    else ""
                )
            )
        else:
            verdict = "used"
        return f"{models}{verdict} (documents by language: {languages or 'none yet'})"

    @admin.display(description="text search: passages per configuration")
    def text_search(self, obj):
        if not obj.pk:
            return "-"
        counts = passages_by_config(obj.pk)
        found = ", ".join(f"{config}: {n:,}" for config, n in counts.items()) or "no passages yet"
        if obj.relexing:  # set by a change of setting, cleared only by a relex that finished
            found += (
                "; being lexed again as the setting says (queries meet every configuration until "
                "it "
                'finishes; if no worker is running it, use the action "Lex stored passages again")'
            )
        return found

    def get_queryset(self, request):
        # a GROUP BY drops Meta.ordering: ordered again, so pages (the autocomplete's too) are
        # stable
        return (
            super()
            .get_queryset(request)
            .annotate(_sources=Count("sources"))
            .select_related("fusion", "meaning_estimate")
            .order_by("slug")
        )

    def has_add_permission(self, request):
        return request.user.is_superuser

    def has_delete_permission(self, request, obj=None):
        return request.user.is_superuser

    @admin.display(description="fusion weights (meaning / words)")
    def fusion_weights(self, obj):
        calibration = getattr(obj, "fusion", None) if obj.pk else None
        if calibration is None:
            return self._unjudged_weights(
                getattr(obj, "meaning_estimate", None) if obj.pk else None
            )
        return (
            f"{1 - calibration.lexical_weight:g} / {calibration.lexical_weight:g} (fitted "
            f"{calibration.fitted_at:%Y-%m-%d} to {calibration.fitted_on}, v{calibration.version})"
        )

    @staticmethod
    def _unjudged_weights(estimate) -> str:
        """What the namespace's search log says about its weights (`retrieval.breadth`)."""
        if estimate is None or estimate.median_excess is None:
            return "default (no judged queries fitted)"
        found = log_summary(estimate.median_excess, estimate.searches)
        if broad(estimate.median_excess, estimate.searches):
            return (
                f"1 / 0, estimated from the search log ({found}: a broad collection; no "
                "judged queries fitted)"
            )
        why = (
            f"fewer than the {ESTIMATE_MIN_SEARCHES} a median needs"
            if estimate.searches < ESTIMATE_MIN_SEARCHES
            else f"below the {WORDS_OFF_EXCESS:g} from which words stop weighing"
        )
        return f"default (no judged queries fitted; {found}, {why})"

    @admin.display(description="sources", ordering="_sources")
    def source_count(self, obj):
        return obj._sources
