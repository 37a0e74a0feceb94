"""The settings table (kb/conf/) is the one statement of each product setting: docs/configuration.md
shows what it generates, the settings module reads the environment as it says, and its secrets stay
out of the settings' repr."""

import dataclasses
import importlib.util
import os
import re
import runpy
from dataclasses import dataclass
from pathlib import Path

import pytest

from kb.conf import TABLE, KBSettings, configuration_tables, environment_settings
from kb.settings_table import PAGE, at_least, environment_values, markdown, rows, setting

GROUPS = [group for _, group in TABLE]
SECRET_WORDS = {"KEY", "SECRET", "PASSWORD", "TOKEN"}  # KB_ANSWER_API_KEY, not KB_CHUNK_TOKENS


def all_rows():
    return [row for group in GROUPS for _, row in rows(group)]


# named by the environment as the tests start: an override in force (the fast tier's password
# hashers) hides settings.SETTINGS_MODULE, and a test below empties the environment
SETTINGS_MODULE = os.environ["DJANGO_SETTINGS_MODULE"]


def settings_module_path() -> Path:
    return Path(importlib.util.find_spec(SETTINGS_MODULE).origin)


def test_the_docs_tables_are_the_ones_the_table_makes():
    """docs/configuration.md's settings tables are generated (`python -m kb.conf --write`)."""
    assert configuration_tables() in PAGE.read_text(encoding="utf-8"), (
        "docs/configuration.md is stale: run python -m kb.conf --write"
    )


def test_every_variable_the_settings_module_reads_is_documented():
    read = set(re.findall(r"os\.environ\.get\(\s*\"(\w+)\"", settings_module_path().read_text()))
    read |= {row.env for row in all_rows() if row.env}
    page = PAGE.read_text(encoding="utf-8")
    assert sorted(name for name in read if f"`{name}`" not in page) == []


def test_every_setting_is_one_field_and_one_row():
    names = [row.name for row in all_rows()]
    assert len(names) == len(set(names))
    fields = {field.name for field in dataclasses.fields(KBSettings)} - {"identity"}
    assert fields == {name for name, _ in rows(KBSettings)}


def test_secrets_are_kept_out_of_the_repr():
    for group in GROUPS:
        for field in dataclasses.fields(group):
            row = field.metadata.get("row")
            if row and SECRET_WORDS & set((row.env or row.name).split("_")):
                assert not field.repr, f"{row.name} is a secret: declare it with secret=True"


def odd_value(row) -> str:
    """An environment value unlike the default, with the blanks and case a reader must handle."""
    if isinstance(row.default, bool):
        return " Yes "
    if isinstance(row.default, int):
        return " 17 "
    if isinstance(row.default, float):
        return "2.5"
    return " Some,Mixed+Value/ "


ENVIRONMENTS = {
    "defaults": {},
    "e5 model, languages unset": {"KB_EMBEDDER": "e5"},
    "every variable set": {
        **{row.env: odd_value(row) for row in all_rows() if row.env and "<" not in row.env},
        "KB_GIT_TOKEN_FORGE": "git.example.org=secret",
        "KB_GIT_TOKEN_": "nameless",
        "KB_GIT_TOKEN_EMPTY": "",
    },
}


@pytest.mark.parametrize("environment", ENVIRONMENTS.values(), ids=ENVIRONMENTS.keys())
def test_the_settings_module_reads_the_environment_as_the_table_says(monkeypatch, environment):
    """The settings module takes every row from the table and sets none of them again after it."""
    for name in list(os.environ):
        if name.startswith(("KB_", "DJANGO_", "DATABASE_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("KB_DATA_DIR", "/tmp/kb-table-data")
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    module = runpy.run_path(str(settings_module_path()))
    expected = environment_settings(
        os.environ, base_dir=module["BASE_DIR"], data_dir=module["KB_DATA_DIR"]
    )
    assert {name: module[name] for name in expected} == expected


@dataclass(frozen=True)
class Example:
    size: int = setting("KB_EXAMPLE_SIZE", 3, "how big", check=at_least(2))
    key: str = setting("KB_EXAMPLE_KEY", "", "a key", secret=True)
    folder: Path = setting(
        "KB_EXAMPLE_DIR", lambda known: known["KB_DATA_DIR"] / "x", "where", env=None, shown="`x`"
    )


def test_one_statement_of_a_row_reads_checks_documents_and_hides_it():
    environ = {"KB_EXAMPLE_SIZE": " 5 ", "KB_EXAMPLE_KEY": "sekrit"}
    values = environment_values([Example], environ, base_dir=Path("/b"), data_dir=Path("/d"))
    assert values == {
        "KB_EXAMPLE_SIZE": 5,
        "KB_EXAMPLE_KEY": "sekrit",
        "KB_EXAMPLE_DIR": Path("/d/x"),
    }
    table = markdown([("Example", Example)])
    assert "| `KB_EXAMPLE_SIZE` | `3` | how big |\n| `KB_EXAMPLE_KEY` | empty | a key |" in table
    assert "KB_EXAMPLE_DIR" not in table  # not read from the environment: not listed
    assert "sekrit" not in repr(Example(5, "sekrit", Path("/d/x")))
    assert at_least(2)("KB_EXAMPLE_SIZE", 1) == "KB_EXAMPLE_SIZE must be at least 2, got 1."
