"""The console's run pages: a run's fields, its items (failed ones first), its live progress
(`progress.json`) and its retry."""

from django.contrib import admin, messages
from django.contrib.admin.utils import display_for_field, lookup_field
from django.http import HttpResponseRedirect, JsonResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from ingest import service as ingest_service
from ingest.run_status import run_note, run_took
from kb import models
from kb.admin_access import NamespaceScoped, ScopedInline, parent_id
from kb.conf import kb_settings
from kb.http import bounded_int

# items shown on a run's page, every failed one among them (the run's counters give the totals)
ITEMS_SHOWN = 500
# the run page's fields its script keeps live, shown after the source, the run it retries and the
# progress bar (links and a drawing, kept apart)
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
        run_id = parent_id(request)
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
    readonly_fields = ["source", "retry_of", "progress_bar", *LIVE_FIELDS]
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
