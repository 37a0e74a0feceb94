"""The answers log in the console: what was asked, the gate's rule, the counts, the reader's vote."""

from django.contrib import admin

from kb.admin_access import NamespaceScoped
from kb.models import AnswerLog


@admin.register(AnswerLog)
class AnswerLogAdmin(NamespaceScoped):
    list_display = ["question", "answered", "gate_rule", "sentence_count", "supported", "unsupported", "dropped",
                    "error_code", "helpful", "created_at"]
    list_filter = ["answered", "gate_rule", "helpful", "error_code"]
    search_fields = ["question"]
    readonly_fields = [f.name for f in AnswerLog._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
