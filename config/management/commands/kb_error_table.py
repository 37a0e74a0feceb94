"""python manage.py kb_error_table [--write]

Prints the "Error codes" table of docs/api.md as the error classes define it (one row per class:
code, HTTP status, class, parent, docstring), or writes it there with --write.
tests/test_error_codes.py fails when the page and the classes disagree.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from kb.errors import KBError, error_classes

PACKAGES = settings.PRODUCT_APPS
PAGE = Path(settings.BASE_DIR) / "docs" / "api.md"
HEADER = "| code | HTTP | class | subclass of | what it means |\n|---|---|---|---|---|\n"
TABLE = re.compile(r"^\| code \| HTTP \|.*?\n(?=\n)", re.S | re.M)


def import_error_modules() -> None:
    """Import every package's `errors` modules, so every error class is defined."""
    for package in PACKAGES:
        module = importlib.import_module(package)
        for info in pkgutil.walk_packages(module.__path__, package + "."):
            if info.name.endswith(".errors"):
                importlib.import_module(info.name)


def error_table() -> str:
    import_error_modules()
    rows = []
    for cls in error_classes():
        parent = cls.__mro__[1].__name__ if cls is not KBError else "Exception"
        meaning = " ".join((cls.__doc__ or "").split("\n\n")[0].split())
        name = f"{cls.__module__}.{cls.__name__}"
        rows.append(f"| `{cls.code}` | {cls.http_status} | `{name}` | `{parent}` | {meaning} |")
    return HEADER + "\n".join(rows) + "\n"


class Command(BaseCommand):
    help = (
        "Print (or --write into docs/api.md) the table of error codes, made from the error classes."
    )

    def add_arguments(self, parser):
        parser.add_argument("--write", action="store_true", help="Replace the table in docs/api.md")

    def handle(self, *args, write: bool, **options):
        table = error_table()
        if not write:
            self.stdout.write(table, ending="")
            return
        page = PAGE.read_text(encoding="utf-8")
        PAGE.write_text(TABLE.sub(lambda _: table, page, count=1), encoding="utf-8")
        self.stdout.write(f"wrote {len(table.splitlines()) - 2} codes into {PAGE}")
