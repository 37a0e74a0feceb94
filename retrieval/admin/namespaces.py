"""The console's namespaces, with what searching found out about them: their fusion weights,
their meaning channel, their text search."""

from django.contrib import admin, messages
from django.db.models import Count
from django_q.tasks import async_task

from kb import models
from kb.admin_access import NamespaceScoped
from kb.conf import kb_settings
from kb.embedding.compared import foreign_passages
from kb.embedding.embedders import get_embedder
from kb.languages import name as language_name
from kb.lexing import passages_by_config
from kb.model_languages import languages_queries_decide, leaves_out, unread_share
from retrieval.breadth import log_summary


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
        """The default, and what the namespace's search log says of it (`retrieval.breadth`)."""
        if estimate is None or estimate.median_excess is None:
            return "default (no judged queries fitted)"
        found = log_summary(estimate.median_excess, estimate.searches)
        return f"default (no judged queries fitted; {found}, which does not set the weights)"

    @admin.display(description="sources", ordering="_sources")
    def source_count(self, obj):
        return obj._sources
