"""Single sign-on in the console: group rules (a curator writes them for the namespaces they
curate), the accounts made by sign-in; and the access log, superusers' only: the sign-ins and the
reads of restricted documents, each with its CSV export."""

from django.contrib import admin, messages
from django.http import HttpResponse
from django.utils import timezone

from kb import models
from kb.admin_access import NamespaceScoped, SuperuserOnly
from kb.identity import reads
from kb.identity.accounts import apply_rules
from kb.identity.signins import as_csv


@admin.register(models.GroupRule)
class GroupRuleAdmin(NamespaceScoped):
    """Changing a rule changes the memberships of every account of its provider at once, from the
    groups each last brought; a group left at the provider counts at the next reading."""

    list_display = ["group", "provider", "namespace", "role", "created_at"]
    list_filter = ["provider", "role", "namespace"]
    search_fields = ["group", "namespace__slug"]

    def save_model(self, request, obj, form, change):
        before = (form.initial.get("provider"), form.initial.get("group")) if change else None
        super().save_model(request, obj, form, change)
        self._applied(
            request, [(obj.provider, obj.group), *([before] if before else [])]
        )  # a rule moved: both

    def delete_model(self, request, obj):
        super().delete_model(request, obj)
        self._applied(request, [(obj.provider, obj.group)])

    def delete_queryset(self, request, queryset):
        rules = list(queryset.values_list("provider", "group"))
        super().delete_queryset(request, queryset)
        self._applied(request, rules)

    def _applied(self, request, rules) -> None:
        by_provider: dict[str, set[str]] = {}
        for provider, group in rules:
            if provider and group:
                by_provider.setdefault(provider, set()).add(group)
        accounts = sum(
            apply_rules(provider, groups) for provider, groups in sorted(by_provider.items())
        )
        self.message_user(
            request,
            f"Memberships of {accounts} single sign-on account(s) in these groups brought in "
            "line with the rules.",
            messages.INFO,
        )


class ReadOnly(SuperuserOnly):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(models.ExternalIdentity)
class ExternalIdentityAdmin(ReadOnly):
    list_display = ["user", "provider", "subject", "groups", "synced_at"]
    list_filter = ["provider"]
    search_fields = ["user__username", "subject"]


@admin.register(models.SignIn)
class SignInAdmin(ReadOnly):
    """Kept KB_SIGN_IN_LOG_DAYS days; "Export as CSV" gives the selected rows (select all to export
    the filter)."""

    list_display = ["at", "method", "username", "user", "succeeded", "reason", "address"]
    list_filter = ["succeeded", "method", "at"]
    search_fields = ["username", "address"]
    date_hierarchy = "at"
    actions = ["export_csv"]

    @admin.action(description="Export selected sign-ins as CSV")
    def export_csv(self, request, queryset):
        response = HttpResponse(as_csv(queryset), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = (
            f'attachment; filename="sign-ins-{timezone.now():%Y%m%d-%H%M%S}.csv"'
        )
        return response

    export_csv.allowed_permissions = ("view",)


@admin.register(models.RestrictedRead)
class RestrictedReadAdmin(ReadOnly):
    """Kept KB_ACCESS_LOG_DAYS days; "Export as CSV" gives the selected rows (select all to export
    the filter)."""

    list_display = [
        "at",
        "surface",
        "username",
        "token_name",
        "document_number",
        "title",
        "namespace",
        "address",
    ]
    list_filter = ["surface", "namespace", "at"]
    search_fields = ["username", "token_name", "title", "namespace"]
    date_hierarchy = "at"
    actions = ["export_csv"]

    @admin.action(description="Export selected restricted reads as CSV")
    def export_csv(self, request, queryset):
        response = HttpResponse(reads.as_csv(queryset), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = (
            f'attachment; filename="restricted-reads-{timezone.now():%Y%m%d-%H%M%S}.csv"'
        )
        return response

    export_csv.allowed_permissions = ("view",)
