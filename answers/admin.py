"""The answers log in the console: what was asked, the gate's rule, the counts, the reader's vote,
and, for a curator who may change one of its namespaces, a link that makes it an eval case."""

from django.contrib import admin

from kb.admin_access import NamespaceScoped
from kb.errors import KBError
from kb.models import AnswerLog


@admin.register(AnswerLog)
class AnswerLogAdmin(NamespaceScoped):
    list_display = [
        "question",
        "answered",
        "gate_rule",
        "sentence_count",
        "supported",
        "unsupported",
        "dropped",
        "error_code",
        "helpful",
        "created_at",
    ]
    list_filter = ["answered", "gate_rule", "helpful", "error_code"]
    search_fields = ["question"]
    readonly_fields = [f.name for f in AnswerLog._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        context["may_make_case"] = obj is not None and any(
            self._may_write(request, slug) for slug in obj.namespaces
        )
        return super().render_change_form(request, context, add, change, form_url, obj)

    def _may_write(self, request, slug: str) -> bool:
        try:
            self._principal(request).check(slug, write=True)
        except KBError:
            return False
        return True
