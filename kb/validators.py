"""Validators for namespace slugs and per-kind source options (pure; no ORM)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError

NAMESPACE_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}(:[a-z0-9][a-z0-9_.-]{0,62})?$")
CAPABILITY_ID_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]*/[a-z0-9][a-z0-9_.-]*$")

# The source kinds, stated here once (kb.models.Source.Kind gives them their labels)
URL_KINDS = ("url", "sitemap", "crawl", "llms")  # fetched from a location
MULTI_PAGE_KINDS = ("crawl", "sitemap", "llms")  # many pages of one site: they share its boilerplate
SOURCE_KINDS = URL_KINDS + ("file", "text")

# Option name -> (type, minimum, maximum) for numeric options; kinds that accept it.
SOURCE_OPTIONS: dict[str, tuple[tuple[str, ...], type, Any, Any]] = {
    "max_depth": (("crawl",), int, 0, 10),
    "max_pages": (MULTI_PAGE_KINDS, int, 1, 10000),
    "allowed_domains": (("crawl",), list, None, None),
    "use_llms_txt": (("crawl", "sitemap"), bool, None, None),
    "keep_removed": (SOURCE_KINDS, bool, None, None),
    "respect_robots": (("crawl",), bool, None, None),
    # URL path globs (`*` any run of characters, `?` one); never regular expressions
    "include": (MULTI_PAGE_KINDS, list, None, None),
    "exclude": (MULTI_PAGE_KINDS, list, None, None),
}
MAX_PATTERNS = 50
MAX_PATTERN_CHARS = 200


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


def validate_http_url(value: str, field: str = "location") -> None:
    parts = urlsplit(value or "")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError(
            {field: f"{value!r} is not an http(s) URL with a host, e.g. 'https://docs.example.com/'."},
            code="invalid_url",
        )


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
            what = "domain names" if name == "allowed_domains" else "URL path patterns such as '/docs/*'"
            errors.append(f"option {name!r} must be a list of {what}, got {value!r}")
        elif name in ("include", "exclude") and (
            len(value) > MAX_PATTERNS or any(len(v) > MAX_PATTERN_CHARS for v in value)
        ):
            errors.append(f"option {name!r} takes at most {MAX_PATTERNS} patterns of at most "
                          f"{MAX_PATTERN_CHARS} characters")
        elif typ is int and not low <= value <= high:
            errors.append(f"option {name!r} must be between {low} and {high}, got {value!r}")
    if errors:
        raise ValidationError({"options": "; ".join(errors)}, code="invalid_options")
