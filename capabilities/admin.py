"""The curator's console for capability providers: the definition is the one source of truth."""

from django import forms
from django.contrib import admin, messages
from django.db.models import Count

from capabilities import service
from kb import models
from kb.admin_access import NamespaceScoped, ScopedInline
from kb.errors import KBError
from kb.models import Provider


class RevisionInline(ScopedInline, admin.TabularInline):
    model = models.ProviderRevision
    fields = ["revision", "is_current", "created_at"]
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = False


class CapabilityInline(ScopedInline, admin.TabularInline):
    model = models.Capability
    fields = ["canonical_id", "title", "summary", "indexed_revision"]
    readonly_fields = fields  # edited through the definition, the one source of truth
    extra = 0
    max_num = 0
    can_delete = False


class ProviderForm(forms.ModelForm):
    writer = None  # the curator's Principal, bound by ProviderAdmin.get_form

    class Meta:
        model = models.Provider
        fields = ["slug", "definition"]
        help_texts = {
            "definition": "The provider definition (JSON): title, namespace and capabilities with "
            "their knowledge targets. Saving applies it and records a new revision when it changed."
        }

    def validate_unique(self):
        """The id is checked for uniqueness only once the definition is valid: the rules it passed
        then leave a member only ids of their own namespace to collide with (another tenant's
        taken id refused as taken would tell that it exists)."""
        if not self._errors:
            super().validate_unique()

    def clean(self):
        data = super().clean()
        # the definition's namespace must be one the curator may change, before anything is looked
        # up
        try:
            self.parsed = service.check_provider(
                data.get("definition"), data.get("slug"), writer=self.writer
            )
        except KBError as exc:
            raise forms.ValidationError(f"{exc.code}: {exc.message}") from exc
        return data


@admin.register(models.Provider)
class ProviderAdmin(NamespaceScoped):
    form = ProviderForm
    list_display = [
        "slug",
        "title",
        "namespace",
        "current_revision",
        "capability_count",
        "index_state",
        "updated_at",
    ]
    search_fields = ["slug", "title"]
    readonly_fields = ["title", "namespace", "index_state"]
    inlines = [CapabilityInline, RevisionInline]
    actions = ["reindex_capabilities"]

    def get_queryset(self, request):
        return (
            super().get_queryset(request).annotate(_caps=Count("capabilities")).order_by("slug")
        )  # GROUP BY: reorder

    def get_form(self, request, obj=None, **kwargs):
        form = super().get_form(request, obj, **kwargs)
        return type(form.__name__, (form,), {"writer": self._principal(request)})

    def save_model(self, request, obj, form, change):
        report = service.apply_provider(form.parsed, index=service.INDEX_QUEUE)
        obj.pk = Provider.objects.get(slug=report["provider"]).pk
        obj.refresh_from_db()
        messages.info(
            request,
            f"{'New revision recorded' if report['changed'] else 'Definition unchanged'}; "
            "the capabilities are indexed in the background.",
        )

    def save_related(self, request, form, formsets, change):
        # capabilities and targets come from the definition, not from the read-only inlines
        for formset in formsets:
            formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []

    @admin.action(description="Re-index capabilities (built-in capability retriever)")
    def reindex_capabilities(self, request, queryset):
        count = sum(service.reindex_provider(provider) for provider in queryset)
        messages.success(request, f"{count} capabilities re-indexed.")

    @admin.display(description="capabilities", ordering="_caps")
    def capability_count(self, obj):
        return obj._caps

    @admin.display(description="current revision")
    def current_revision(self, obj):
        current = obj.revisions.filter(is_current=True).first()
        return current.revision[:12] if current else "—"

    @admin.display(description="index")
    def index_state(self, obj):
        if not obj.pk:
            return "—"
        status = service.index_status(obj)
        return (
            "current"
            if status["current"]
            else f"behind: {status['indexed']}/{status['capabilities']} indexed"
        )


class KnowledgeTargetInline(ScopedInline, admin.TabularInline):
    model = models.KnowledgeTarget
    fields = ["document", "source", "role", "locale"]
    raw_id_fields = ["document", "source"]
    extra = 0


@admin.register(models.Capability)
class CapabilityAdmin(NamespaceScoped):
    """Capabilities come from their provider's definition; here their knowledge targets can be
    adjusted, within the provider's namespace."""

    readonly_fields = [
        "provider",
        "canonical_id",
        "title",
        "summary",
        "indexed_revision",
        "indexed_text",
    ]
    exclude = ["indexed_embedding"]
    list_display = ["canonical_id", "title", "provider"]
    list_filter = ["provider"]
    search_fields = ["canonical_id", "title", "summary"]
    inlines = [KnowledgeTargetInline]

    def has_add_permission(self, request):
        return False
