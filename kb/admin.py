"""The curator's console. Thin: listing, filtering and forms here; work happens in services."""

import json

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.http import HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.views.decorators.http import require_POST

from django.utils import timezone

from ingest import services as ingest_services
from ingest.uploads import add_files
from kb.errors import KBError
from kb.auth import issue_secret, staff_principal
from kb import models
from retrieval.eval_runner import run_recorded
from retrieval.evals import EvalFileError, parse_suite
from retrieval.fusion import DEFAULT_WEIGHTS


class NamespaceScoped(admin.ModelAdmin):
    """Staff users who are not superusers see and change only their namespaces' objects
    (`NamespaceMembership`); `namespace_field` is the lookup from the model to its namespace."""

    namespace_field = "namespace"

    def _principal(self, request):
        return staff_principal(request.user)

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        principal = self._principal(request)
        if principal.namespaces is None:
            return queryset
        lookup = f"{self.namespace_field}__slug__in" if self.namespace_field else "slug__in"
        return queryset.filter(**{lookup: principal.namespaces})

    def _namespace_of(self, obj):
        if obj is None:
            return None
        value = obj
        for part in self.namespace_field.split("__") if self.namespace_field else ():
            value = getattr(value, part)
        return value.slug

    def has_change_permission(self, request, obj=None):
        if not super().has_change_permission(request, obj):
            return False
        principal = self._principal(request)
        return obj is None or principal.namespaces is None or self._namespace_of(obj) in principal.writable

    def has_delete_permission(self, request, obj=None):
        return super().has_delete_permission(request, obj) and self.has_change_permission(request, obj)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        principal = self._principal(request)
        if db_field.name == "namespace" and principal.namespaces is not None:
            kwargs["queryset"] = models.Namespace.objects.filter(slug__in=principal.writable)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


class SuperuserOnly(admin.ModelAdmin):
    """Only superusers see or change these: who may read what (memberships), and API tokens,
    which can name any namespace."""

    def has_module_permission(self, request):
        return request.user.is_superuser

    def has_view_permission(self, request, obj=None):
        return request.user.is_superuser

    has_change_permission = has_add_permission = has_delete_permission = has_view_permission


@admin.register(models.NamespaceMembership)
class NamespaceMembershipAdmin(SuperuserOnly):
    list_display = ["user", "namespace", "can_write"]
    list_filter = ["namespace", "can_write"]


@admin.register(models.Namespace)
class NamespaceAdmin(NamespaceScoped):
    namespace_field = ""
    list_display = ["slug", "title", "is_public", "source_count", "fusion_weights", "created_at"]
    list_filter = ["is_public"]
    search_fields = ["slug", "title"]
    readonly_fields = ["fusion_weights"]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(_sources=Count("sources")).select_related("fusion")

    @admin.display(description="fusion weights (meaning / words)")
    def fusion_weights(self, obj):
        calibration = getattr(obj, "fusion", None) if obj.pk else None
        if calibration is None:
            return f"{DEFAULT_WEIGHTS.vector:g} / {DEFAULT_WEIGHTS.lexical:g} (default: no judged queries fitted)"
        return (f"{1 - calibration.lexical_weight:g} / {calibration.lexical_weight:g} (fitted "
                f"{calibration.fitted_at:%Y-%m-%d} to {calibration.fitted_on}, v{calibration.version})")

    @admin.display(description="sources", ordering="_sources")
    def source_count(self, obj):
        return obj._sources


@admin.register(models.FusionCalibration)
class FusionCalibrationAdmin(NamespaceScoped):
    """Fitted by `kb_bench` or `kb_eval --fit`, never typed in; deleting one returns the
    namespace to the default weights."""

    list_display = ["namespace", "lexical_weight", "fitted_on", "queries", "cross_validated_ndcg",
                    "default_ndcg", "version", "fitted_at"]
    readonly_fields = list_display

    def has_add_permission(self, request):
        return False


class IngestRunInline(admin.TabularInline):
    model = models.IngestRun
    fields = ["run_link", "status", "mode", "progress", "items_failed", "queued_at", "finished_at"]
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = False
    ordering = ["-queued_at"]
    show_change_link = False

    def get_queryset(self, request):
        return super().get_queryset(request).order_by("-queued_at")

    @admin.display(description="run")
    def run_link(self, obj):
        return format_html('<a href="../../../ingestrun/{}/change/">#{}</a>', obj.pk, obj.pk)

    @admin.display(description="progress")
    def progress(self, obj):
        return f"{obj.items_done}/{obj.items_total}"


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        single = super().clean
        if isinstance(data, (list, tuple)):
            return [single(d, initial) for d in data if d]
        return [single(data, initial)] if data else []


class SourceForm(forms.ModelForm):
    files = MultipleFileField(
        required=False, label="Add files",
        help_text="File sources: one or more files (PDF, Word, PowerPoint, Excel, OpenDocument, CSV, "
                  "EPUB, e-mail, markdown, text, HTML), or a .zip of them; each becomes a document.",
    )

    class Meta:
        model = models.Source
        fields = "__all__"


class SourceFileInline(admin.TabularInline):
    model = models.SourceFile
    fields = ["path", "byte_size", "sha256", "uploaded_at"]
    readonly_fields = fields
    extra = 0
    can_delete = True
    show_change_link = False

    def has_add_permission(self, request, obj=None):
        return False  # files arrive through the upload field, which stores them safely


@admin.register(models.Source)
class SourceAdmin(NamespaceScoped):
    form = SourceForm
    list_display = [
        "name", "namespace", "kind", "enabled", "priority", "document_count",
        "last_run_status", "last_run_at",
    ]
    list_filter = ["kind", "enabled", "namespace", "last_run_status"]
    search_fields = ["name", "location"]
    readonly_fields = ["last_run_at", "last_run_status", "last_run_summary", "created_at", "updated_at"]
    inlines = [SourceFileInline, IngestRunInline]
    actions = ["ingest_now", "reembed_all"]

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        ingest_services.sync_refresh_schedule(obj)
        uploads = form.cleaned_data.get("files") or []
        if uploads and obj.kind == models.Source.Kind.FILE:
            try:
                report = add_files(obj, [(f.name, f) for f in uploads])
            except KBError as exc:
                self.message_user(request, f"{exc.code}: {exc.message}", messages.ERROR)
                return
            skipped = "; ".join(f"{s['path']}: {s['message']}" for s in report.skipped)
            self.message_user(request, f"{len(report.added)} added, {len(report.replaced)} replaced, "
                              f"{len(report.unchanged)} unchanged" + (f"; skipped {skipped}" if skipped else ""))
            if report.added or report.replaced:
                ingest_services.start_ingest(obj)

    def _start(self, request, queryset, mode):
        if not self.has_change_permission(request):
            raise PermissionDenied
        runs = [ingest_services.start_ingest(source, mode=mode) for source in queryset]
        links = format_html_join(
            ", ", '<a href="{}">run #{}</a>',
            ((reverse("admin:kb_ingestrun_change", args=[r.pk]), r.pk) for r in runs),
        )
        self.message_user(request, format_html("Queued {}.", links), messages.SUCCESS)

    @admin.action(description="Ingest now")
    def ingest_now(self, request, queryset):
        self._start(request, queryset, models.IngestRun.Mode.INGEST)

    @admin.action(description="Re-embed all documents")
    def reembed_all(self, request, queryset):
        self._start(request, queryset, models.IngestRun.Mode.REEMBED)

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(_documents=Count("documents"))

    @admin.display(description="documents", ordering="_documents")
    def document_count(self, obj):
        return obj._documents


class ChunkInline(admin.TabularInline):
    model = models.Chunk
    fields = ["position", "anchor", "heading_path", "start_byte", "end_byte", "token_estimate", "has_embedding"]
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = False

    @admin.display(boolean=True, description="embedded")
    def has_embedding(self, obj):
        return obj.embedding is not None


@admin.register(models.Document)
class DocumentAdmin(NamespaceScoped):
    list_display = ["__str__", "source", "namespace", "media_type", "byte_size", "chunk_count", "indexed_at"]
    list_filter = ["namespace", "source", "media_type"]
    search_fields = ["title", "ref", "path"]
    readonly_fields = ["content_hash", "byte_size", "indexed_at", "embedding_model", "etag", "last_modified"]
    list_select_related = ["source", "namespace"]
    inlines = [ChunkInline]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(_chunks=Count("chunks"))

    @admin.display(description="chunks", ordering="_chunks")
    def chunk_count(self, obj):
        return obj._chunks


@admin.register(models.Chunk)
class ChunkAdmin(NamespaceScoped):
    list_display = ["__str__", "document", "anchor", "start_byte", "end_byte", "token_estimate", "embed_reason"]
    list_filter = ["namespace", "is_summary", "embed_reason"]
    search_fields = ["text", "anchor"]
    exclude = ["embedding"]
    readonly_fields = ["document", "namespace", "search_vector", "embedding_model", "embed_reason"]
    list_select_related = ["document"]


class RevisionInline(admin.TabularInline):
    model = models.ProviderRevision
    fields = ["revision", "is_current", "created_at"]
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = False


class CapabilityInline(admin.TabularInline):
    model = models.Capability
    fields = ["canonical_id", "title", "summary", "indexed_revision"]
    readonly_fields = fields  # edited through the definition, the one source of truth
    extra = 0
    max_num = 0
    can_delete = False


class ProviderForm(forms.ModelForm):
    class Meta:
        model = models.Provider
        fields = ["slug", "definition"]
        help_texts = {"definition": "The provider definition (JSON): title, namespace and capabilities with "
                                    "their knowledge targets. Saving applies it and records a new revision "
                                    "when it changed."}

    def clean(self):
        from capabilities.definitions import parse_provider
        from capabilities.store import resolve_definition
        from kb.errors import KBError

        data = super().clean()
        definition = dict(data.get("definition") or {})
        definition["id"] = data.get("slug") or definition.get("id", "")
        try:
            self.parsed = parse_provider(definition)
            resolve_definition(self.parsed)
        except KBError as exc:
            raise forms.ValidationError(f"{exc.code}: {exc.message}") from exc
        return data


@admin.register(models.Provider)
class ProviderAdmin(admin.ModelAdmin):
    form = ProviderForm
    list_display = ["slug", "title", "namespace", "current_revision", "capability_count", "index_state", "updated_at"]
    search_fields = ["slug", "title"]
    readonly_fields = ["title", "namespace", "index_state"]
    inlines = [CapabilityInline, RevisionInline]
    actions = ["reindex_capabilities"]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(_caps=Count("capabilities"))

    def save_model(self, request, obj, form, change):
        from capabilities.backends import index_capabilities
        from capabilities.store import apply_definition
        provider, changed = apply_definition(form.parsed)
        obj.pk = provider.pk
        obj.refresh_from_db()
        indexed = index_capabilities(provider)
        messages.info(request, f"{'New revision recorded' if changed else 'Definition unchanged'}; "
                               f"{indexed} capabilities (re-)indexed.")

    def save_related(self, request, form, formsets, change):
        # capabilities and targets come from the definition, not from the read-only inlines
        for formset in formsets:
            formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []

    @admin.action(description="Re-index capabilities (built-in capability retriever)")
    def reindex_capabilities(self, request, queryset):
        from capabilities.backends import index_capabilities

        count = sum(index_capabilities(provider, force=True) for provider in queryset)
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
        from capabilities.store import index_status

        if not obj.pk:
            return "—"
        status = index_status(obj)
        return "current" if status["current"] else f"behind: {status['indexed']}/{status['capabilities']} indexed"


class KnowledgeTargetInline(admin.TabularInline):
    model = models.KnowledgeTarget
    fields = ["document", "source", "role", "locale"]
    raw_id_fields = ["document", "source"]
    extra = 0


@admin.register(models.Capability)
class CapabilityAdmin(admin.ModelAdmin):
    list_display = ["canonical_id", "title", "provider"]
    list_filter = ["provider"]
    search_fields = ["canonical_id", "title", "summary"]
    inlines = [KnowledgeTargetInline]


class IngestItemInline(admin.TabularInline):
    model = models.IngestItem
    fields = ["ref", "status", "reason", "error_code", "error_message", "byte_size", "chunks", "duration_ms"]
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = False


@admin.register(models.IngestRun)
class IngestRunAdmin(NamespaceScoped):
    namespace_field = "source__namespace"
    list_display = [
        "__str__", "source", "status", "mode", "progress_bar", "items_changed",
        "items_unchanged", "items_failed", "chunks_written", "queued_at", "finished_at",
    ]
    list_filter = ["status", "mode", "source__namespace"]
    list_select_related = ["source"]
    readonly_fields = [
        "source", "status", "mode", "retry_of", "task_id", "progress_bar", "items_total",
        "items_done", "items_changed", "items_unchanged", "items_failed", "items_removed",
        "chunks_written", "chunks_embedded", "error", "queued_at", "started_at", "finished_at",
    ]
    inlines = [IngestItemInline]
    change_form_template = "admin/kb/ingestrun/change_form.html"

    def has_add_permission(self, request):
        return False

    def get_urls(self):
        return [
            path("<int:run_id>/progress.json", self.admin_site.admin_view(self.progress_view),
                 name="kb_ingestrun_progress"),
            path("<int:run_id>/retry/", self.admin_site.admin_view(require_POST(self.retry_view)),
                 name="kb_ingestrun_retry"),
        ] + super().get_urls()

    def progress_view(self, request, run_id):
        if not self.has_view_permission(request):
            raise PermissionDenied
        run = get_object_or_404(models.IngestRun, pk=run_id)
        return JsonResponse({
            "id": run.pk, "status": run.status, "percent": run.progress_percent,
            "items_total": run.items_total, "items_done": run.items_done,
            "items_failed": run.items_failed, "chunks_written": run.chunks_written,
        })

    def retry_view(self, request, run_id):
        if not self.has_change_permission(request):
            raise PermissionDenied
        run = get_object_or_404(models.IngestRun, pk=run_id)
        retry = ingest_services.retry_failed_items(run)
        if retry is None:
            self.message_user(request, "This run has no failed items.", messages.INFO)
            return HttpResponseRedirect(reverse("admin:kb_ingestrun_change", args=[run.pk]))
        self.message_user(request, f"Retrying the failed items as run #{retry.pk}.", messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:kb_ingestrun_change", args=[retry.pk]))

    @admin.display(description="progress")
    def progress_bar(self, obj):
        return format_html(
            '<progress class="kb-run-progress" data-run="{}" max="100" value="{}" '
            'aria-label="{} of {} items">{}%</progress> {}/{}',
            obj.pk, obj.progress_percent, obj.items_done, obj.items_total,
            obj.progress_percent, obj.items_done, obj.items_total,
        )


@admin.register(models.QueryLog)
class QueryLogAdmin(NamespaceScoped):
    list_display = ["query", "namespace", "result_count", "total_ms", "created_at"]
    list_filter = ["namespace"]
    search_fields = ["query"]
    readonly_fields = ["namespace", "query", "result_ids", "timings", "created_at"]

    def has_add_permission(self, request):
        return False

    @admin.display(description="results")
    def result_count(self, obj):
        return len(obj.result_ids)

    @admin.display(description="ms")
    def total_ms(self, obj):
        return obj.timings.get("total_ms")


@admin.register(models.ApiToken)
class ApiTokenAdmin(SuperuserOnly):
    list_display = ["name", "prefix", "scope", "namespace_list", "rate_limit_per_minute", "created_at",
                    "last_used_at", "revoked_at"]
    list_filter = ["scope", "revoked_at"]
    search_fields = ["name", "prefix"]
    readonly_fields = ["prefix", "created_at", "last_used_at"]
    filter_horizontal = ["namespaces"]
    actions = ["revoke"]

    @admin.display(description="namespaces")
    def namespace_list(self, obj):
        return ", ".join(obj.namespaces.values_list("slug", flat=True))

    def save_model(self, request, obj, form, change):
        if change:
            return super().save_model(request, obj, form, change)
        secret = issue_secret(obj)
        super().save_model(request, obj, form, change)
        self.message_user(request, format_html(
            "Token created. Copy it now; it is stored only as a hash and will not be shown again: "
            "<code class=\"kb-token\">{}</code>", secret), messages.WARNING)

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request, queryset):
        count = queryset.filter(revoked_at=None).update(revoked_at=timezone.now())
        self.message_user(request, f"Revoked {count} token(s).", messages.SUCCESS)


class EvalSuiteForm(forms.ModelForm):
    upload = forms.FileField(required=False, help_text="A JSON eval file; replaces the definition.")

    class Meta:
        model = models.EvalSuite
        fields = ["name", "namespace", "definition", "upload"]

    def clean(self):
        data = super().clean()
        upload = data.get("upload")
        if upload:
            try:
                data["definition"] = json.loads(upload.read().decode("utf-8"))
            except (ValueError, UnicodeDecodeError) as exc:
                raise forms.ValidationError(f"The uploaded file is not JSON: {exc}") from exc
        try:
            parse_suite(data.get("definition"), namespace=data.get("namespace") or None)
        except EvalFileError as exc:
            raise forms.ValidationError(exc.message) from exc
        return data

    def save(self, commit=True):
        self.instance.definition = self.cleaned_data["definition"]
        return super().save(commit)


class EvalRunInline(admin.TabularInline):
    model = models.EvalRun
    fields = ["run_link", "passed", "failed", "total", "regressed", "created_at"]
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = False

    @admin.display(description="run")
    def run_link(self, obj):
        return format_html('<a href="{}">#{}</a>', reverse("admin:kb_evalrun_change", args=[obj.pk]), obj.pk)

    @admin.display(description="regressed")
    def regressed(self, obj):
        return ", ".join(obj.regressions()) or "—"


@admin.register(models.EvalSuite)
class EvalSuiteAdmin(admin.ModelAdmin):
    form = EvalSuiteForm
    list_display = ["name", "namespace", "case_count", "last_result", "created_at"]
    inlines = [EvalRunInline]
    actions = ["run_now"]

    @admin.display(description="cases")
    def case_count(self, obj):
        return len(obj.definition.get("cases", []))

    @admin.display(description="last run")
    def last_result(self, obj):
        run = obj.runs.first()
        return f"{run.passed}/{run.total} passed" if run else "—"

    @admin.action(description="Run now")
    def run_now(self, request, queryset):
        for suite in queryset:
            run = run_recorded(suite)
            regressed = run.regressions()
            level = messages.SUCCESS if not run.failed else messages.WARNING
            self.message_user(request, format_html(
                '{}: <a href="{}">{} of {} passed</a>{}', suite.name,
                reverse("admin:kb_evalrun_change", args=[run.pk]), run.passed, run.total,
                f"; regressed since the previous run: {', '.join(regressed)}" if regressed else ""), level)


@admin.register(models.EvalRun)
class EvalRunAdmin(admin.ModelAdmin):
    list_display = ["__str__", "suite", "passed", "failed", "total", "created_at"]
    list_filter = ["suite"]
    readonly_fields = ["suite", "passed", "failed", "total", "duration_ms", "created_at", "case_table"]
    exclude = ["results"]

    def has_add_permission(self, request):
        return False

    @admin.display(description="cases")
    def case_table(self, obj):
        regressed = set(obj.regressions())
        rows = format_html_join(
            "", '<tr class="{}"><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>',
            (("kb-regressed" if c["id"] in regressed else "", c["id"],
              "REGRESSED" if c["id"] in regressed else ("pass" if c["passed"] else "fail"),
              c.get("error") or "; ".join(f"{k['name']}: {k['detail']}" for k in c["checks"]),
              f"{c['duration_ms']:.0f} ms") for c in obj.results.get("cases", [])),
        )
        return format_html(
            '<style>.kb-regressed td {{ background: #fde2e1; font-weight: bold; }}</style>'
            '<table><thead><tr><th>case</th><th>result</th><th>checks</th><th>time</th></tr></thead>'
            "<tbody>{}</tbody></table>", rows)
