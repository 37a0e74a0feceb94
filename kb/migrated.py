"""Whether the database has every migration applied: commands say so in one line, not a
traceback."""

from __future__ import annotations

from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def unapplied_migrations() -> list[str]:
    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return [f"{migration.app_label}.{migration.name}" for migration, _ in plan]


def migration_hint() -> str:
    """ "" when migrated, else the sentence a command prints instead of running."""
    pending = unapplied_migrations()
    if not pending:
        return ""
    return (
        f"The database is not migrated ({len(pending)} migrations pending, first {pending[0]}): "
        "run `python manage.py migrate` (scripts/run does it) and try again."
    )
