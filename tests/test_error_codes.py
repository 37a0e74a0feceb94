"""One class per stable error code: unique codes, each listed once in docs/api.md with its
status."""

import importlib
import pkgutil
import re
from pathlib import Path

import pytest
from django.conf import settings

from kb.errors import KBError, error_classes, error_status

ERROR_TABLE = Path(__file__).resolve().parent.parent / "docs" / "api.md"
APPS = settings.PRODUCT_APPS


def all_error_classes() -> list[type[KBError]]:
    """Every KBError subclass the apps define (every module imported, not only `errors`)."""
    for app in APPS:
        package = importlib.import_module(app)
        for info in pkgutil.walk_packages(package.__path__, app + "."):
            if ".migrations" not in info.name and ".management" not in info.name:
                importlib.import_module(info.name)
    return error_classes()


def documented_codes() -> dict[str, list[tuple[int, str]]]:
    listed: dict[str, list[tuple[int, str]]] = {}
    rows = re.findall(
        r"^\| `([A-Z][A-Z0-9_]+)` \| (\d{3}) \| `([\w.]+)` \|", ERROR_TABLE.read_text(), re.M
    )
    for code, status, path in rows:
        listed.setdefault(code, []).append((int(status), path))
    return listed


def test_every_code_belongs_to_one_class():
    codes = [cls.code for cls in all_error_classes()]
    assert len(codes) == len(set(codes)), sorted(code for code in codes if codes.count(code) > 1)


def test_every_code_is_listed_once_in_the_api_docs_with_its_status():
    listed = documented_codes()
    for cls in all_error_classes():
        expected = [(cls.http_status, f"{cls.__module__}.{cls.__name__}")]
        assert listed.get(cls.code) == expected, (
            f"{cls.__name__} ({cls.code}): {listed.get(cls.code)}"
        )
    documented = {cls.code for cls in all_error_classes()}
    assert set(listed) - documented == set(), "docs/api.md lists codes no class has"


def test_the_docs_table_is_the_one_the_classes_make():
    """docs/api.md's table is generated (`manage.py kb_error_table --write`) and stays so."""
    from config.management.commands.kb_error_table import error_table

    assert error_table() in ERROR_TABLE.read_text(), (
        "docs/api.md is stale: run manage.py kb_error_table --write"
    )


def test_the_table_moves_when_a_class_changes(monkeypatch):
    from config.management.commands.kb_error_table import error_table
    from retrieval.errors import EmptyQuery

    monkeypatch.setattr(EmptyQuery, "http_status", 400)
    assert error_table() not in ERROR_TABLE.read_text()


def test_each_app_defines_its_errors_in_its_errors_module():
    assert [cls for cls in all_error_classes() if not cls.__module__.endswith(".errors")] == []


def test_the_statuses_django_answers_by_itself_map_to_the_same_classes():
    from kb.errors import MethodNotAllowed, NotFound, error_for_status

    assert error_for_status(404) is NotFound and error_for_status(405) is MethodNotAllowed
    assert error_for_status(418) is KBError


def test_a_code_cannot_be_passed_in():
    with pytest.raises(TypeError):
        KBError("message", code="SOMETHING_ELSE")


def test_the_status_is_the_class_status():
    from retrieval.errors import EmptyQuery

    assert error_status(EmptyQuery("empty")) == 422
