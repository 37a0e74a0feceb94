"""Lists over tables of millions of rows: estimated page counts, and per-row counts that stop at
COUNT_CAP."""

import json

from django.contrib import admin
from django.core.exceptions import EmptyResultSet
from django.core.paginator import Paginator
from django.db import connections
from django.db.models.expressions import RawSQL
from django.utils.functional import cached_property


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
            cursor.execute(
                "SELECT reltuples::bigint FROM pg_class WHERE oid = %s::regclass",
                [queryset.model._meta.db_table],
            )
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


COUNT_CAP = 10_000  # per-row counts in the lists stop here


def count_of(model, field: str, parent):
    """How many `model` rows point at each listed row, counted for the rows of the page only and
    at most to COUNT_CAP + 1 (a source of a million documents is "10,000+", not a second's
    count)."""
    child, column = model._meta.db_table, model._meta.get_field(field).column
    return RawSQL(
        f"SELECT count(*) FROM (SELECT 1 FROM {child} x WHERE x.{column} "
        f"= {parent._meta.db_table}.id "
        f"LIMIT {COUNT_CAP + 1}) capped",
        (),
    )


def capped(count: int) -> str:
    return f"{COUNT_CAP:,}+" if count > COUNT_CAP else str(count)
