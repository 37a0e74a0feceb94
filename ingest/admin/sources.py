"""The console's source pages: one form per kind, the source's files and latest runs, and the
actions that queue a run."""

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import OuterRef, Subquery
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.views.decorators.http import require_POST

from ingest import service as ingest_service
from ingest.forms import COMMON_FIELDS, KIND_HELP, content_fields, option_names, source_form
from ingest.uploads import store_upload
from kb import models
from kb.admin_access import NamespaceScoped, ScopedInline, parent_id
from kb.admin_audiences import AudienceSetting
from kb.admin_counts import capped, count_of
from kb.audiences import apply_source
from kb.vocabulary import SOURCE_KINDS

RECENT_RUNS = 20  # runs shown on a source's page (all of them: the runs list, filtered by source)


class IngestRunInline(ScopedInline, admin.TabularInline):
    model = models.IngestRun
    fields = ["run_link", "status", "mode", "progress", "items_failed", "queued_at", "finished_at"]
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = False
    ordering = ["-queued_at"]
    show_change_link = False

    def get_queryset(self, request):
        """The source's latest RECENT_RUNS runs: a source refreshed for years has thousands."""
        queryset = super().get_queryset(request)  # newest first (`ordering`)
        source_id = parent_id(request)
        if source_id is None:
            return queryset
        return queryset.filter(
            pk__in=list(
                queryset.filter(source_id=source_id).values_list("pk", flat=True)[:RECENT_RUNS]
            )
        )

    @admin.display(description="run")
    def run_link(self, obj):
        return format_html('<a href="../../../ingestrun/{}/change/">#{}</a>', obj.pk, obj.pk)

    @admin.display(description="progress")
    def progress(self, obj):
        return f"{obj.items_done}/{obj.items_total}"


class SourceFileInline(ScopedInline, admin.TabularInline):
    model = models.SourceFile
    fields = ["path", "byte_size", "sha256", "uploaded_at"]
    readonly_fields = fields
    extra = 0
    can_delete = True
    show_change_link = False

    def has_add_permission(self, request, obj=None):
        return False  # files arrive through the upload field, which stores them safely


LIVE_STATUSES = (models.IngestRun.Status.QUEUED, models.IngestRun.Status.RUNNING)


@admin.register(models.Source)
class SourceAdmin(AudienceSetting, NamespaceScoped):
    """One form per kind (`ingest/forms.py`): adding a source first asks which kind it is."""

    list_display = [
        "name",
        "namespace",
        "kind",
        "enabled",
        "priority",
        "document_count",
        "run_status",
        "last_run_at",
    ]
    list_filter = ["kind", "enabled", "namespace", "last_run_status"]
    search_fields = ["name", "location"]
    readonly_fields = [
        "kind",
        "last_run_at",
        "last_run_status",
        "last_run_summary",
        "indexed_revision",
        "indexed_commit",
        "held",
        "created_at",
        "updated_at",
    ]
    inlines = [SourceFileInline, IngestRunInline]
    actions = ["ingest_now", "reembed_all", "confirm_held_removals"]
    # not the name Django looks up by itself, so an admin that replaces this one does not inherit it
    change_form_template = "admin/kb/source/source_form.html"

    @staticmethod
    def _kind(request, obj) -> str | None:
        if obj is not None:
            return obj.kind
        kind = request.GET.get("kind") or request.POST.get("kind")
        return kind if kind in SOURCE_KINDS else None

    def get_fieldsets(self, request, obj=None):
        kind = self._kind(request, obj) or models.Source.Kind.TEXT
        content = [
            f
            for f in content_fields(kind)
            if f != "files" or obj is None or self.has_change_permission(request, obj)
        ]
        fieldsets = [
            (
                None,
                {"fields": ["namespace", "name", "kind", *content], "description": KIND_HELP[kind]},
            )
        ]
        if option_names(kind):
            fieldsets.append(("Options", {"fields": list(option_names(kind))}))
        fieldsets.append(("Schedule and ranking", {"fields": list(COMMON_FIELDS)}))
        fieldsets.append(
            (
                "Audience",
                {
                    "fields": ["audience_groups"],
                    "description": "Leave empty for everyone who reads the namespace. Choose "
                    "groups to limit the source's documents to them (and to the namespace's "
                    "curators): nobody else finds a word of them, on any page, in the API or "
                    "through MCP.",
                },
            )
        )
        if obj is not None and obj.held_removals:
            fieldsets.insert(0, ("Removals held", {"fields": ["held"]}))
        if obj is not None:
            commit = ["indexed_commit"] if kind == models.Source.Kind.GIT else []
            fieldsets.append(
                (
                    "Last run",
                    {
                        "fields": [
                            "last_run_at",
                            "last_run_status",
                            "last_run_summary",
                            "indexed_revision",
                            *commit,
                            "created_at",
                            "updated_at",
                        ]
                    },
                )
            )
        return fieldsets

    @admin.display(description="held removals")
    def held(self, obj):
        """What a run held back, and how to let it through."""
        held = obj.held_removals or {}
        refs = held.get("refs") or []
        if not refs:
            return "-"
        shown = ", ".join(refs[:20]) + (f" and {len(refs) - 20} more" if len(refs) > 20 else "")
        return format_html(
            "Run #{} found {} of the source's {} documents gone and removed none of them, in "
            "case the source was "
            'out of reach rather than emptied: {}. If they really are gone, choose "Confirm held '
            'removals" for '
            "this source in the sources list; a later run that finds them again lifts the hold.",
            held.get("run"),
            len(refs),
            held.get("stored"),
            shown,
        )

    def get_inlines(self, request, obj=None):
        """A file source lists its files; other kinds have none to list."""
        if (self._kind(request, obj) or models.Source.Kind.TEXT) == models.Source.Kind.FILE:
            return self.inlines
        return [inline for inline in self.inlines if inline is not SourceFileInline]

    def get_form(self, request, obj=None, change=False, **kwargs):
        kwargs["form"] = source_form(self._kind(request, obj) or models.Source.Kind.TEXT)
        return super().get_form(request, obj, change=change, **kwargs)

    def add_view(self, request, form_url="", extra_context=None):
        """Without a kind, the page to choose one; each choice opens that kind's form."""
        if self._kind(request, None) is None:
            if not self.has_add_permission(request):
                raise PermissionDenied
            return TemplateResponse(
                request,
                "admin/kb/source/choose_kind.html",
                {
                    **self.admin_site.each_context(request),
                    "opts": self.model._meta,
                    "title": "Add a source",
                    "kinds": [
                        (value, label, KIND_HELP[value])
                        for value, label in models.Source.Kind.choices
                    ],
                },
            )
        return super().add_view(request, form_url, extra_context)

    def apply_audience(self, obj) -> None:
        apply_source(obj)

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        ingest_service.sync_refresh_schedule(obj)
        upload = getattr(form, "upload", None)  # read and checked by the form (`read_upload`)
        if upload is not None and obj.kind == models.Source.Kind.FILE:
            report = store_upload(obj, upload)
            skipped = "; ".join(f"{s['path']}: {s['code']}, {s['message']}" for s in report.skipped)
            self.message_user(
                request,
                f"{len(report.added)} added, {len(report.replaced)} replaced, "
                f"{len(report.unchanged)} unchanged" + (f"; skipped {skipped}" if skipped else ""),
            )
            if report.added or report.replaced:
                self._queued(request, [ingest_service.start_ingest(obj)])
        elif form.config_changed and (run := ingest_service.queue_after_save(obj)):
            self._queued(request, [run])

    def _queued(self, request, runs):
        if not runs:
            self.message_user(
                request,
                "Nothing was queued: no selected source may be ingested by you.",
                messages.WARNING,
            )
            return
        links = format_html_join(
            ", ",
            '<a href="{}">run #{}</a>',
            ((reverse("admin:kb_ingestrun_change", args=[r.pk]), r.pk) for r in runs),
        )
        self.message_user(request, format_html("Queued {}.", links), messages.SUCCESS)

    def _start(self, request, queryset, mode):
        self._queued(
            request, [ingest_service.start_ingest(source, mode=mode) for source in queryset]
        )

    def get_urls(self):
        return [
            path(
                "<int:source_id>/ingest/",
                self.admin_site.admin_view(require_POST(self.ingest_view)),
                name="kb_source_ingest",
            ),
        ] + super().get_urls()

    def ingest_view(self, request, source_id):
        """ "Ingest now" on the source's own page."""
        source = self.scoped_object(request, source_id, write=True)
        self._start(request, [source], models.IngestRun.Mode.INGEST)
        return HttpResponseRedirect(reverse("admin:kb_source_change", args=[source.pk]))

    @admin.action(description="Ingest now")
    def ingest_now(self, request, queryset):
        self._start(request, queryset, models.IngestRun.Mode.INGEST)

    @admin.action(description="Re-embed all documents")
    def reembed_all(self, request, queryset):
        self._start(request, queryset, models.IngestRun.Mode.REEMBED)

    @admin.action(description="Confirm held removals")
    def confirm_held_removals(self, request, queryset):
        """Remove the documents a run held back when the source shrank by more than half."""
        removed = {source.name: ingest_service.confirm_held_removals(source) for source in queryset}
        done = ", ".join(f"{count} from {name}" for name, count in removed.items() if count)
        self.message_user(
            request,
            f"Removed {done}." if done else "No selected source had removals held.",
            messages.SUCCESS if done else messages.WARNING,
        )

    def get_queryset(self, request):
        live = models.IngestRun.objects.filter(
            source=OuterRef("pk"), status__in=LIVE_STATUSES
        ).order_by("-queued_at")
        return (
            super()
            .get_queryset(request)
            .annotate(
                _documents=count_of(models.Document, "source", models.Source),
                _live=Subquery(live.values("status")[:1]),
            )
        )

    @admin.display(description="last run status", ordering="last_run_status")
    def run_status(self, obj):
        """A queued or running run first: a source just saved is not 'never run'."""
        return obj._live or obj.last_run_status or "-"

    @admin.display(description="documents", ordering="_documents")
    def document_count(self, obj):
        return capped(obj._documents)
