"""Who sees what in the curator's console: the base classes every app's admin builds on."""

from django.contrib import admin

from kb import models
from kb.auth import staff_principal


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

