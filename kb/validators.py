"""Django field validators for namespace slugs, provider and capability ids, URLs and per-kind
source options,
checked against the vocabulary of `kb/vocabulary.py`."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError

from kb.vocabulary import (
    CAPABILITY_ID_RE,
    MAX_PATTERN_CHARS,
    MAX_PATTERNS,
    NAMESPACE_RE,
    SOURCE_OPTIONS,
)


def validate_namespace_slug(value: str) -> None:
    if not NAMESPACE_RE.match(value or ""):
        raise ValidationError(
            f"{value!r} is not a valid namespace. Use lowercase letters, digits, '-' and '_', "
            "optionally with one 'kind:name' prefix, e.g. 'tenant:acme' or 'agent:support'.",
            code="invalid_namespace",
        )


def validate_capability_id(value: str) -> None:
    if not CAPABILITY_ID_RE.match(value or ""):
        raise ValidationError(
            f"{value!r} is not a canonical capability id; use 'provider/name', lowercase.",
            code="invalid_capability_id",
        )


def validate_provider_id(value: str) -> None:
    if not CAPABILITY_ID_RE.match(f"{value or ''}/x"):
        raise ValidationError(
            f"{value!r} is not a provider id. Use lowercase letters, digits, '.', '_' and '-', "
            "e.g. 'billing' or, for a namespace's own provider, the namespace with '.' for ':' and "
            "a name: 'tenant.acme.billing'.",
            code="invalid_provider_id",
        )


def validate_http_url(value: str, field: str = "location") -> None:
    parts = urlsplit(value or "")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError(
            {
                field: f"{value!r} is not an http(s) URL with a host, e.g. "
                "'https://docs.example.com/'."
            },
            code="invalid_url",
        )


def is_http_pattern(pattern: str) -> bool:
    """Whether a URL pattern with {commit}, {path} and {line} places (a git source's `web_url`)
    is an http(s) URL with a host once they are filled: it becomes every citation's link."""
    parts = urlsplit(
        pattern.strip().replace("{commit}", "0").replace("{path}", "p").replace("{line}", "1")
    )
    return parts.scheme.lower() in ("http", "https") and bool(parts.netloc)


def validate_source_options(kind: str, options: dict[str, Any]) -> None:
    """Reject unknown options, options of another kind, and out-of-range values."""
    if not isinstance(options, dict):
        raise ValidationError({"options": "Options must be a JSON object."}, code="invalid_options")
    errors = []
    for name, value in options.items():
        spec = SOURCE_OPTIONS.get(name)
        if spec is None:
            errors.append(f"unknown option {name!r} (known: {', '.join(sorted(SOURCE_OPTIONS))})")
            continue
        kinds, typ, low, high = spec
        if kind not in kinds:
            errors.append(f"option {name!r} does not apply to {kind!r} sources")
            continue
        if typ is int and (isinstance(value, bool) or not isinstance(value, int)):
            errors.append(f"option {name!r} must be a whole number, got {value!r}")
        elif typ is bool and not isinstance(value, bool):
            errors.append(f"option {name!r} must be true or false, got {value!r}")
        elif typ is list and not (
            isinstance(value, list) and all(isinstance(v, str) and v for v in value)
        ):
            what = (
                "domain names"
                if name == "allowed_domains"
                else "URL path patterns such as '/docs/*'"
            )
            errors.append(f"option {name!r} must be a list of {what}, got {value!r}")
        elif name in ("include", "exclude") and (
            len(value) > MAX_PATTERNS or any(len(v) > MAX_PATTERN_CHARS for v in value)
        ):
            errors.append(
                f"option {name!r} takes at most {MAX_PATTERNS} patterns of at most "
                f"{MAX_PATTERN_CHARS} characters"
            )
        elif name in ("include", "exclude") and (
            hints := [glob_hint(v) for v in value if regex_like(v)]
        ):
            errors.append(
                f"option {name!r} takes {GLOBS}, not regular expressions: {'; '.join(hints)}"
            )
        elif typ is str and not isinstance(value, str):
            errors.append(f"option {name!r} must be text, got {value!r}")
        elif name == "web_url" and value.strip() and not is_http_pattern(value):
            errors.append(
                f"option 'web_url' must be an http(s) URL with a host, e.g. "
                f"'https://github.com/psf/requests/blob/{{commit}}/{{path}}#L{{line}}', "
                f"got {value!r}"
            )
        elif typ is int and not low <= value <= high:
            errors.append(f"option {name!r} must be between {low} and {high}, got {value!r}")
    if errors:
        raise ValidationError({"options": "; ".join(errors)}, code="invalid_options")


GLOBS = "globs (* is any run of characters, ? one character, matched against the whole path)"
# what only a regular expression would hold: ^ or $ anchors, .* or .+, a backslash escape, (?, |,
# a character class [a-z] or a repeat {2,3}; a path's own ( ) + . stay globs
_REGEX_SIGNS = re.compile(r"^\^|\$$|\.[*+]|\\.|\(\?|\||\[[^\]]+\]|\{\d+(,\d*)?\}")


def regex_like(pattern: str) -> bool:
    """Whether an include or exclude pattern reads as a regular expression: it would match
    nothing as a glob (`ingest.scope.glob_match`), silently."""
    return bool(_REGEX_SIGNS.search(pattern))


def glob_hint(pattern: str) -> str:
    """What to write instead of a regex-looking pattern: the glob it means, when one says it."""
    glob = pattern.removeprefix("^").removesuffix("$")
    glob = re.sub(r"\.[*+]", "*", glob)
    glob = re.sub(r"\\([./?*+()\-])", r"\1", glob)
    if not pattern.endswith("$") and not glob.endswith("*"):
        glob += "*"  # a regular expression matches anywhere; a glob matches the whole path
    if not pattern.startswith("^") and not glob.startswith(("/", "*")):
        glob = "*" + glob
    if regex_like(glob):
        return f"{pattern!r} (write it as one glob per line)"
    return f"{pattern!r} (write {glob!r})"
