"""The curator's console for sources, their files, documents, chunks and ingest runs."""

from django.contrib import admin, messages
from django.contrib.admin.utils import display_for_field, lookup_field
from django.core.exceptions import PermissionDenied
from django.db.models import OuterRef, Subquery
from django.http import HttpResponseRedirect, JsonResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from ingest import service as ingest_service
from ingest.forms import COMMON_FIELDS, KIND_HELP, content_fields, option_names, source_form
from ingest.run_status import run_note, run_took
from ingest.uploads import store_upload
from kb import models
from kb.admin_access import AudienceSetting, NamespaceScoped, ScopedInline, capped, count_of
from kb.audiences import apply_source
from kb.conf import kb_settings
from kb.http import bounded_int
from kb.vocabulary import SOURCE_KINDS

RECENT_RUNS = 20  # runs shown on a source's page (all of them: the runs list, filtered by source)
# items shown on a run's page, every failed one among them (the run's counters give the totals)
ITEMS_SHOWN = 500
# the run page's fields its script keeps live (source, retry of and the bar are links or drawn
# apart)
LIVE_FIELDS = (
    "status",
    "mode",
    "task_id",
    *models.IngestRun.COUNTERS,
    "error",
    "queued_at",
    "started_at",
    "finished_at",
    "took",
    "heartbeat_at",
    "attempts",
    "worker",
)


def _parent_id(request) -> int | None:
    """The id of the object whose change page is being shown (what an inline belongs to)."""
    match = getattr(request, "resolver_match", None)
    object_id = str((match.kwargs if match else {}).get("object_id", ""))
    return int(object_id) if object_id.isdigit() else None


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
        source_id = _parent_id(request)
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


class IngestItemInline(ScopedInline, admin.TabularInline):
    """Up to ITEMS_SHOWN of the run's items, every failed one among them first: a crawl's run can
    hold a
    million."""

    model = models.IngestItem
    fields = [
        "ref",
        "status",
        "reason",
        "error_code",
        "error_message",
        "byte_size",
        "chunks",
        "duration_ms",
    ]
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = False

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        run_id = _parent_id(request)
        if run_id is None:
            return queryset
        items = queryset.filter(run_id=run_id)
        failed = list(
            items.filter(status=models.IngestItem.Status.FAILED).values_list("pk", flat=True)[
                :ITEMS_SHOWN
            ]
        )
        rest = list(
            items.exclude(pk__in=failed).values_list("pk", flat=True)[: ITEMS_SHOWN - len(failed)]
        )
        return queryset.filter(pk__in=failed + rest)


def _run_note(run, visible) -> str:
    """`visible`: the runs the curator may see, named in a queued run's note; others are counted."""
    behind, ahead = (), 0
    if run.status == models.IngestRun.Status.QUEUED:
        running = models.IngestRun.objects.filter(
            status=models.IngestRun.Status.RUNNING
        ).select_related("source")
        named = set(visible.filter(pk__in=[r.pk for r in running]).values_list("pk", flat=True))
        behind = tuple(
            f"run #{r.pk} ({r.source.name}, {r.items_done}/{r.items_total} items)"
            if r.pk in named
            else "a run of another namespace"
            for r in running.order_by("started_at", "pk")
        )
        ahead = models.IngestRun.objects.filter(
            status=models.IngestRun.Status.QUEUED, pk__lt=run.pk
        ).count()
    return run_note(
        run.status,
        queued_at=run.queued_at,
        heartbeat_at=run.heartbeat_at,
        started_at=run.started_at,
        now=timezone.now(),
        stall_seconds=kb_settings().run_stall_seconds,
        behind=behind,
        queued_ahead=ahead,
    )


@admin.register(models.IngestRun)
class IngestRunAdmin(NamespaceScoped):
    list_display = [
        "__str__",
        "source",
        "status",
        "mode",
        "progress_bar",
        "items",
        "chunks_written",
        "queued_at",
        "took",
    ]
    list_filter = ["status", "mode", "source__namespace"]
    list_select_related = ["source"]
    readonly_fields = [
        "source",
        "status",
        "mode",
        "retry_of",
        "task_id",
        "progress_bar",
        *models.IngestRun.COUNTERS,
        "error",
        "queued_at",
        "started_at",
        "finished_at",
        "took",
        "heartbeat_at",
        "attempts",
        "worker",
    ]
    inlines = [IngestItemInline]
    change_form_template = "admin/kb/ingestrun/change_form.html"

    def has_add_permission(self, request):
        return False

    @admin.display(description="items")
    def items(self, run):
        """The item counters in one narrow column, so the list fits a laptop's screen."""
        counts = [
            (run.items_changed, "changed"),
            (run.items_unchanged, "unchanged"),
            (run.items_failed, "failed"),
        ]
        return (
            format_html_join(mark_safe("<br>"), "{} {}", [(n, label) for n, label in counts if n])
            or "-"
        )

    @admin.display(description="took")
    def took(self, run):
        return (
            run_took(
                run.status,
                queued_at=run.queued_at,
                started_at=run.started_at,
                finished_at=run.finished_at,
                now=timezone.now(),
            )
            or "-"
        )

    def render_change_form(self, request, context, *args, **kwargs):
        run = context.get("original")
        if run is not None:
            context["run_note"] = _run_note(run, self.get_queryset(request))
            context["bar_percent"] = run.progress_percent
            context["title"] = self._title(run)
            context["subtitle"] = (
                None  # the title says it already: Django would repeat the run's name
            )
        # every field is read-only: a Save button would only say "changed successfully" of nothing
        context.update(
            show_save=False, show_save_and_continue=False, show_save_and_add_another=False
        )
        return super().render_change_form(request, context, *args, **kwargs)

    def get_urls(self):
        return [
            path(
                "<int:run_id>/progress.json",
                self.admin_site.admin_view(self.progress_view),
                name="kb_ingestrun_progress",
            ),
            path(
                "<int:run_id>/retry/",
                self.admin_site.admin_view(require_POST(self.retry_view)),
                name="kb_ingestrun_retry",
            ),
        ] + super().get_urls()

    def progress_view(self, request, run_id):
        """What the run page's script (static/kb/run_progress.js) shows while the run is live: the
        header bar, the title, every field as the page shows it, and the items reported since the
        item `after` (so the table fills as the run goes)."""
        run = self.scoped_object(request, run_id)
        after = bounded_int(request.GET.get("after"), 0, 0, 2**62)
        return JsonResponse(
            {
                "id": run.pk,
                "status": run.status,
                "percent": run.progress_percent,
                "items_total": run.items_total,
                "items_done": run.items_done,
                "items_failed": run.items_failed,
                "chunks_total": run.chunks_total,
                "chunks_embedded": run.chunks_embedded,
                "chunks_written": run.chunks_written,
                "note": _run_note(run, self.get_queryset(request)),
                "error": run.error,
                "title": self._title(run),
                "fields": {name: self._shown(run, name) for name in LIVE_FIELDS},
                "items": [
                    {
                        "id": item.pk,
                        "label": str(item),
                        "cells": {
                            name: self._shown(item, name) for name in IngestItemInline.fields
                        },
                    }
                    for item in run.items.filter(pk__gt=after).order_by("pk")[:ITEMS_SHOWN]
                ],
            }
        )

    @staticmethod
    def _title(run) -> str:
        return f"Run #{run.pk} of {run.source.name} ({run.get_status_display().lower()})"

    def _shown(self, obj, name: str) -> str:
        """A read-only field's text as the change page renders it (Django's own display rules)."""
        field, _, value = lookup_field(name, obj, self)
        if field is None:
            return str(value)
        return str(display_for_field(value, field, self.get_empty_value_display()))

    def retry_view(self, request, run_id):
        run = self.scoped_object(request, run_id, write=True)
        retry = ingest_service.retry_run(run)
        if retry is None:
            self.message_user(
                request,
                "This run has nothing to retry: it did not fail and none of its items did.",
                messages.INFO,
            )
            return HttpResponseRedirect(reverse("admin:kb_ingestrun_change", args=[run.pk]))
        what = "the run" if run.status == models.IngestRun.Status.FAILED else "the failed items"
        self.message_user(request, f"Retrying {what} as run #{retry.pk}.", messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:kb_ingestrun_change", args=[retry.pk]))

    @admin.display(description="progress")
    def progress_bar(self, obj):
        failed = obj.status == models.IngestRun.Status.FAILED
        return format_html(
            '<progress class="kb-run-progress{}" data-run="{}" max="100" value="{}" '
            'aria-label="{} of {} items">{}%</progress> {}/{}',
            " kb-failed" if failed else "",
            obj.pk,
            obj.progress_percent,
            obj.items_done,
            obj.items_total,
            obj.progress_percent,
            obj.items_done,
            obj.items_total,
        )
