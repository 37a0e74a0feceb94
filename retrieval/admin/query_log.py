"""The console's query log: each search, its caller, results and time."""

from django.contrib import admin

from kb import models
from kb.admin_access import NamespaceScoped


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
