"""MCP tools as the apps declare them; config/mcp.py serves them.

A tool is a function `(request, data) -> Answer`, with django-ninja Schemas for input and output, so
a tool and the JSON API describe a field the same way; the output is validated before it leaves.
Every tool is read-only; a `KBError` it raises becomes a tool error with its stable code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ninja import Schema


@dataclass(frozen=True)
class Answer:
    structured: dict[str, Any]
    text: str


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    input: type[Schema]
    output: type[Schema]
    func: Callable[[Any, Any], Answer]
    cost: str  # what one call costs, for docs/mcp.md and the tool's description


@dataclass
class Toolset:
    """The tools of one app, in the order they are listed."""

    tools: list[Tool] = field(default_factory=list)

    def tool(
        self,
        *,
        name: str,
        title: str,
        description: str,
        input: type[Schema],
        output: type[Schema],
        cost: str,
    ) -> Callable[[Callable[[Any, Any], Answer]], Callable[[Any, Any], Answer]]:
        def register(func: Callable[[Any, Any], Answer]) -> Callable[[Any, Any], Answer]:
            self.tools.append(Tool(name, title, description, input, output, func, cost))
            return func

        return register
