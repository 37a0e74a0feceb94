"""Who sees what in the curator's console: the base classes every app's admin builds on."""

import json

from django.contrib import admin
from django.core.exceptions import EmptyResultSet
from django.core.paginator import Paginator
from django.db import connections
from django.utils.functional import cached_property

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



class EstimatedCountPaginator(Paginator):
    """Pages that never count a big table row by row. An unfiltered list takes the table's row
    estimate from the statistics (`pg_class.reltuples`); a filtered one the planner's estimate,
    counted exactly only when that is below EXACT_COUNT_BELOW. Past the first pages nobody needs
    the last digit; a curator needs the list in well under a second."""

    EXACT_COUNT_BELOW = 20_000

    @cached_property
    def count(self) -> int:
        queryset = self.object_list
        estimate = _planner_estimate(queryset)
        if estimate < self.EXACT_COUNT_BELOW:
            return queryset.count()
        return estimate


def _planner_estimate(queryset) -> int:
    """Rows the statistics (unfiltered) or the planner (filtered) expect the queryset to hold."""
    if not queryset.query.where:
        with connections[queryset.db].cursor() as cursor:
            cursor.execute("SELECT reltuples::bigint FROM pg_class WHERE oid = %s::regclass",
                           [queryset.model._meta.db_table])
            row = cursor.fetchone()
        if row and row[0] > 0:
            return int(row[0])
    try:
        sql, params = queryset.query.get_compiler(queryset.db).as_sql()
    except EmptyResultSet:  # a filter that can match nothing (an empty id list)
        return 0
    with connections[queryset.db].cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
        plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    return int(plan[0]["Plan"]["Plan Rows"])


class LargeTableAdmin(admin.ModelAdmin):
    """A changelist over a table that grows to millions of rows: estimated counts, no second
    full count for "show all"."""

    paginator = EstimatedCountPaginator
    show_full_result_count = False
