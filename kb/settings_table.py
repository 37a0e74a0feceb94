"""Declare one row of the settings table: read from the environment, checked and documented.

The table itself is kb/conf/'s settings classes. This module imports no Django: the settings module
reads the rows (`kb.conf.environment_settings`) while Django is being configured.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

PAGE = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"
BEGIN = "<!-- settings tables: made from kb/conf/ by `python -m kb.conf --write` -->\n"
END = "<!-- end of the settings tables -->\n"
HEADER = "| variable | default | meaning |\n|---|---|---|\n"
HTTP_URL = r"https?://[^/?#\s]+(/[^?#\s]*)?"

# a check is given the setting's name and typed value and says what is wrong with it, or None
Check = Callable[[str, object], "str | None"]


@dataclass(frozen=True)
class Row:
    """One product setting."""

    name: str  # the Django setting, and the environment variable unless `env` names another
    default: (
        object  # a value, or a function of the values read before it (and BASE_DIR, KB_DATA_DIR)
    )
    doc: str  # its line in docs/configuration.md
    env: str | None  # None: not read from the environment; ending in <NAME>: a family of variables
    read: Callable[[object], object]  # the variable's text (or the default) -> the Django setting
    convert: Callable[[object], object]  # the Django setting -> the typed field
    check: Check | None
    shown: str | None  # the default as docs/configuration.md says it, when not the value itself


def setting(
    name: str,
    default: object,
    doc: str,
    *,
    env: str | None = "",
    read: Callable[[object], object] | None = None,
    convert: Callable[[object], object] | None = None,
    check: Check | None = None,
    shown: str | None = None,
    secret: bool = False,
):
    """A field of the settings table; `secret` keeps the value out of the settings' repr."""
    if callable(default) and shown is None:
        raise TypeError(f"{name}: a computed default needs `shown`, how the docs say it")
    row = Row(
        name=name,
        default=default,
        doc=" ".join(doc.split()),
        env=name if env == "" else env,
        read=read or _reader_for(default),
        convert=convert or (lambda value: value),
        check=check,
        shown=shown,
    )
    return dataclasses.field(repr=not secret, metadata={"row": row})


def rows(cls) -> Iterator[tuple[str, Row]]:
    """(field name, row) of each field of `cls` declared with `setting`, in declaration order."""
    for each in dataclasses.fields(cls):
        if "row" in each.metadata:
            yield each.name, each.metadata["row"]


# --- reading an environment variable ---------------------------------------------------------


def text(value) -> str:
    return str(value)


def stripped(value) -> str:
    return str(value).strip()


def lowered(value) -> str:
    return str(value).strip().lower()


def url(value) -> str:
    """A URL without its trailing slash."""
    return str(value).strip().rstrip("/")


def flag(value) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes")


def comma_list(value) -> list[str]:
    return [item.strip() for item in str(value).split(",") if item.strip()]


def resolved_path(value) -> Path:
    return Path(value).resolve()


def _reader_for(default) -> Callable[[object], object]:
    if isinstance(default, bool):
        return flag
    if isinstance(default, int):
        return int
    if isinstance(default, float):
        return float
    return lambda value: value


def environment_values(classes, environ: Mapping[str, str], *, base_dir: Path, data_dir: Path):
    """The Django settings of every row of `classes`, read from `environ` (the settings module's
    os.environ) or defaulted: {"KB_EMBEDDER": "local", ...}."""
    known: dict[str, object] = {"BASE_DIR": base_dir, "KB_DATA_DIR": data_dir}
    values: dict[str, object] = {}
    for cls in classes:
        for _, row in rows(cls):
            if row.env and row.env.endswith("<NAME>"):
                prefix = row.env.removesuffix("<NAME>")
                value = {
                    name.removeprefix(prefix): text
                    for name, text in environ.items()
                    if name.startswith(prefix) and name != prefix and text
                }
            else:
                default = row.default(known) if callable(row.default) else row.default
                value = row.read(environ.get(row.env, default) if row.env else default)
            values[row.name] = known[row.name] = value
    return values


# --- checks ------------------------------------------------------------------------------------


def at_least(least: float, *, say_value: bool = True) -> Check:
    def check(name, value):
        if value < least:
            return f"{name} must be at least {least}" + (f", got {value}." if say_value else ".")
        return None

    return check


def between(low: float, high: float) -> Check:
    def check(name, value):
        if not low <= value <= high:
            return f"{name} must be between {low} and {high}, got {value}."
        return None

    return check


def one_of(*choices: str, said: str | None = None) -> Check:
    """The value is one of `choices`; `said` is how the message lists them (default: 'a' or 'b')."""
    quoted = [f"'{choice}'" if choice else "empty" for choice in choices]
    said = said or f"{', '.join(quoted[:-1])} or {quoted[-1]}"

    def check(name, value):
        return None if value in choices else f"{name} must be {said}, got {value!r}."

    return check


def matches(pattern: str, said: str) -> Check:
    """An empty value (the feature is off), or one that matches `pattern`."""

    def check(name, value):
        if value and not re.fullmatch(pattern, value):
            return f"{name} must be {said}, got {value!r}."
        return None

    return check


# --- docs/configuration.md ---------------------------------------------------------------------


def _shown(row: Row) -> str:
    if row.shown is not None:
        return row.shown
    if row.default == "":
        return "empty"
    if isinstance(row.default, bool):
        return f"`{str(row.default).lower()}`"
    if isinstance(row.default, float):
        return f"`{row.default:g}`"
    return f"`{row.default}`"


def markdown(groups) -> str:
    """One table per (heading, class) of `groups`, of the rows read from the environment, between
    the markers, as docs/configuration.md holds them."""
    parts = [BEGIN]
    for heading, cls in groups:
        lines = [f"| `{row.env}` | {_shown(row)} | {row.doc} |" for _, row in rows(cls) if row.env]
        parts.append(f"\n### {heading}\n\n" + HEADER + "\n".join(lines) + "\n")
    return "".join(parts) + "\n" + END


def write_markdown(groups, page: Path = PAGE) -> int:
    """Replace the tables between the markers of `page`; how many settings they list."""
    table = markdown(groups)
    text = page.read_text(encoding="utf-8")
    start, end = text.index(BEGIN), text.index(END) + len(END)
    page.write_text(text[:start] + table + text[end:], encoding="utf-8")
    return sum(line.startswith("| `") for line in table.splitlines())
