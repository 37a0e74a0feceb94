"""Structured files people write by hand (eval suites, provider definitions): JSON, or YAML by name.

Pure: text in, data out; a `ValueError` that names the file says what is wrong. Each caller turns it
into its own stable error code."""

from __future__ import annotations

import json
from typing import Any

YAML_SUFFIXES = (".yaml", ".yml")


def read_data(text: str, name: str) -> Any:
    """The data in `text`: YAML when `name` ends in .yaml or .yml, JSON otherwise."""
    if name.lower().endswith(YAML_SUFFIXES):
        import yaml  # PyYAML comes with the embedding stack (huggingface-hub)

        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ValueError(f"{name} is not valid YAML: {exc}") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{name} is not valid JSON: {exc}") from exc
