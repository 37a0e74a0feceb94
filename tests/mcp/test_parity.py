"""/api/docs and the MCP tool list describe the same fields with the same names: every field of
a tool's input or output is a field of the matching API shape, of the same JSON type, unless the
tool's Schema lists it as MCP-only (and docs/mcp.md explains it)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.test import Client

from config.api import api
from config.mcp import TOOLS
from kb.auth import issue_token

pytestmark = pytest.mark.django_db
DOCS = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"

# tool: (MCP class, API shapes: component names, or "GET path" for an endpoint's query parameters)
PAIRS = [
    ("search", "AgentSearchIn", ["SearchIn"]),
    (
        "search",
        "AgentSearchOut",
        ["SearchOut", "SpellingOut"],
    ),  # with weak results, "did you mean" too
    ("search", "AgentDocumentOut", ["DocumentGroupOut"]),
    ("search", "PassageOut", ["HitOut"]),
    ("search", "ExplanationOut", ["ExplanationOut"]),
    ("fetch", "FetchIn", ["GET /api/documents/{document_id}/text"]),
    ("fetch", "FetchOut", ["DocumentTextOut", "HitOut"]),
    ("context", "AgentContextIn", ["ContextIn"]),
    ("context", "ContextOut", ["ContextOut"]),
    ("list_namespaces", "NamespaceListOut", ["NamespaceListOut"]),
    ("list_namespaces", "NamespaceOut", ["NamespaceOut"]),
    ("list_sources", "SourceSummaryOut", ["SourceOut"]),
    ("capability_catalog", "CatalogIn", ["GET /api/capabilities/catalog"]),
    ("capability_catalog", "CatalogOut", ["CatalogOut"]),
    ("retrieve_capabilities", "CapabilitiesIn", ["CapabilitiesIn"]),
    ("retrieve_capabilities", "CapabilitiesOut", ["CapabilitiesOut"]),
    ("retrieve_knowledge", "KnowledgeIn", ["KnowledgeIn"]),
    ("retrieve_knowledge", "KnowledgeOut", ["KnowledgeOut"]),
    ("answer", "AnswerToolIn", ["AnswerIn"]),
    ("answer", "AnswerOut", ["AnswerOut"]),
    ("answer", "SentenceOut", ["SentenceOut"]),
]


@pytest.fixture
def listed(namespace):
    """The tool list as a client receives it, through the real endpoint."""
    _, token = issue_token("docs", namespaces=[namespace])
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/list",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        },
    }
    response = Client().post(
        "/mcp",
        json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
        HTTP_MCP_PROTOCOL_VERSION="2026-07-28",
        HTTP_MCP_METHOD="tools/list",
    )
    assert response.status_code == 200, response.content
    return {tool["name"]: tool for tool in response.json()["result"]["tools"]}


def kind(schema: dict, defs: dict) -> str:
    """A property's JSON type without nullability: `integer`, `array of string`, `object`."""
    options = [s for s in schema.get("anyOf", [schema]) if s.get("type") != "null"]
    if len(options) != 1:
        return " or ".join(sorted(kind(s, defs) for s in options))
    one = options[0]
    if "$ref" in one:
        return "object"
    if one.get("type") == "array":
        return "array of " + kind(one.get("items", {}), defs)
    return one.get("type", "any")


def mcp_properties(tool: dict, name: str) -> tuple[dict, dict]:
    for schema in (tool["inputSchema"], tool["outputSchema"]):
        defs = schema.get("$defs", {})
        if schema.get("title") == name:
            return schema.get("properties", {}), defs
        if name in defs:
            return defs[name].get("properties", {}), defs
    raise AssertionError(f"{tool['name']} has no schema {name}")


def api_properties(openapi: dict, shape: str) -> dict:
    if shape.startswith("GET "):
        operation = openapi["paths"][shape.removeprefix("GET ")]["get"]
        return {p["name"]: p["schema"] for p in operation["parameters"] if p["in"] == "query"}
    return openapi["components"]["schemas"][shape]["properties"]


@pytest.mark.parametrize(
    "tool, mcp_class, api_shapes", PAIRS, ids=[f"{t}:{c}" for t, c, _ in PAIRS]
)
def test_tool_fields_are_api_fields(listed, tool, mcp_class, api_shapes):
    openapi = api.get_openapi_schema()
    components = openapi["components"]["schemas"]
    api_fields: dict = {}
    for shape in api_shapes:
        api_fields = {**api_properties(openapi, shape), **api_fields}
    properties, defs = mcp_properties(listed[tool], mcp_class)
    mcp_only = next(t for t in TOOLS if t.name == tool)
    schema_class = _schema_class(mcp_only, mcp_class)
    only = getattr(schema_class, "MCP_ONLY", frozenset())
    for field, schema in properties.items():
        if field in only:
            assert field not in api_fields, (
                f"{mcp_class}.{field} is listed as MCP-only but the API has it"
            )
            continue
        assert field in api_fields, f"{tool}: {mcp_class}.{field} is not a field of {api_shapes}"
        assert kind(schema, defs) == kind(api_fields[field], components), (
            f"{tool}: {mcp_class}.{field}"
        )


def _schema_class(tool, name: str):
    """The Schema class of that name in a tool's input or output, nested ones included."""
    seen, todo = set(), [tool.input, tool.output]
    while todo:
        cls = todo.pop()
        if cls.__name__ == name:
            return cls
        seen.add(cls)
        for info in cls.model_fields.values():
            for inner in re.findall(r"[A-Za-z]+", str(info.annotation)):
                candidate = _resolve(cls, inner)
                if candidate is not None and candidate not in seen:
                    todo.append(candidate)
    raise AssertionError(f"no Schema {name} in {tool.name}")


def _resolve(cls, name: str):
    import sys

    value = getattr(sys.modules[cls.__module__], name, None)
    return value if isinstance(value, type) and hasattr(value, "model_fields") else None


def test_docs_explain_every_mcp_only_field_and_every_tool(listed):
    text = DOCS.read_text(encoding="utf-8")
    for tool in TOOLS:
        assert f"`{tool.name}`" in text, tool.name
        for cls in (tool.input, tool.output):
            for field in getattr(cls, "MCP_ONLY", ()):
                assert f"`{field}`" in text, f"{cls.__name__}.{field}"
    assert set(listed) == {tool.name for tool in TOOLS}


def test_no_two_api_shapes_share_a_name():
    """/api/docs names each shape by its class; two classes of one name would make it describe
    one with the other's fields (as /api/search's grouped documents once were)."""
    from ninja import Schema

    import capabilities.schemas  # noqa: F401
    import evaluation.schemas  # noqa: F401
    import ingest.schemas  # noqa: F401
    import retrieval.schemas  # noqa: F401

    by_name: dict[str, set[str]] = {}
    todo = list(Schema.__subclasses__())
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if cls.__module__.split(".")[0] in (
            "kb",
            "retrieval",
            "ingest",
            "capabilities",
            "evaluation",
        ):
            by_name.setdefault(cls.__name__, set()).add(cls.__module__)
    assert {name: modules for name, modules in by_name.items() if len(modules) > 1} == {}
