"""The console's own part: who may read which namespace, and API tokens (the namespaces' own page,
with what searching found out about them, is retrieval's: `retrieval/admin/`).

Every app registers its models' admin next to its services (`ingest/admin/`,
`retrieval/admin/`, `capabilities/admin.py`, `evaluation/admin.py`) on the base classes of
`kb/admin_access.py`."""

from django import forms
from django.contrib import admin, messages
from django.utils.html import format_html

from kb import models
from kb.admin_access import NamespaceScoped, SuperuserOnly
from kb.auth import issue_secret, revoke_tokens
from kb.identity import admin as identity_admin  # noqa: F401  (registers single sign-on's models)

admin.site.site_header = "Knowledge base console"
admin.site.site_title = "Knowledge base console"
admin.site.index_title = "Sources, runs, namespaces and readers"


@admin.register(models.NamespaceMembership)
class NamespaceMembershipAdmin(SuperuserOnly):
    list_display = ["user", "namespace", "can_write"]
    list_filter = ["namespace", "can_write"]


class ApiTokenForm(forms.ModelForm):
    """A token is either a namespace token (its namespaces) or a person token (its user)."""

    class Meta:
        model = models.ApiToken
        fields = "__all__"

    def clean(self):
        cleaned = super().clean()
        user, namespaces = cleaned.get("user"), cleaned.get("namespaces")
        if user is not None and namespaces:
            self.add_error(
                "namespaces",
                "A person token reads what its user reads: leave its namespaces empty.",
            )
        elif user is None and not namespaces and "namespaces" not in self.errors:
            self.add_error(
                "namespaces",
                "Choose the namespaces of this token, or a user for a token that acts for them.",
            )
        return cleaned


@admin.register(models.ApiToken)
class ApiTokenAdmin(SuperuserOnly):
    """Every token, namespace and person tokens alike: superusers issue, change and revoke them;
    people make and revoke their own person tokens at /accounts/tokens/."""

    form = ApiTokenForm
    list_display = [
        "name",
        "prefix",
        "scope",
        "user",
        "namespace_list",
        "rate_limit_per_minute",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
    ]
    list_filter = ["scope", ("user", admin.EmptyFieldListFilter), "expires_at", "revoked_at"]
    search_fields = ["name", "prefix", "user__username"]
    readonly_fields = ["prefix", "created_at", "last_used_at"]
    filter_horizontal = ["namespaces"]
    raw_id_fields = ["user"]
    actions = ["revoke"]

    @admin.display(description="namespaces")
    def namespace_list(self, obj):
        if obj.user_id is not None:
            return "what its user reads"
        return ", ".join(obj.namespaces.values_list("slug", flat=True))

    def get_exclude(self, request, obj=None):
        """A new token is not revoked: its form asks only what it may do."""
        return ["revoked_at"] if obj is None else []

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        if "revoked_at" in form.base_fields:
            form.base_fields["revoked_at"].help_text = (
                "When the token stopped working (the Revoke action on the list sets it to now); "
                "empty: it works."
            )
        return form

    def save_model(self, request, obj, form, change):
        if change:
            return super().save_model(request, obj, form, change)
        secret = issue_secret(obj)
        super().save_model(request, obj, form, change)
        self.message_user(
            request,
            format_html(
                "Token created. Copy it now; it is stored only as a hash and will not be shown "
                "again: "
                '<code class="kb-token" id="kb-new-token">{}</code>'
                '<button type="button" class="button kb-copy" '
                'data-copy="kb-new-token">Copy</button>',
                secret,
            ),
            messages.WARNING,
        )

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request, queryset):
        count = revoke_tokens(queryset)
        self.message_user(request, f"Revoked {count} token(s).", messages.SUCCESS)


def lock_down_unscoped(site: admin.AdminSite) -> None:
    """Every admin registered by another app (users, groups, django-q's tasks and schedules) is a
    superuser's: their rows belong to no namespace, so a member must not see them at all."""
    for model, model_admin in list(site._registry.items()):
        if isinstance(model_admin, (NamespaceScoped, SuperuserOnly)):
            continue
        locked = type(type(model_admin).__name__, (SuperuserOnly, type(model_admin)), {})
        site.unregister(model)
        site.register(model, locked)
