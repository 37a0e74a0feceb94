"""What a search through MCP costs the server beyond /api/search's: no extra database round trip
for the same search (the token already carries the namespaces it reads)."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from kb.auth import issue_token
from retrieval import querylog
from tests.corpus import CORPUS, ingest

pytestmark = pytest.mark.django_db
PROTOCOL = "2026-07-28"


def mcp_search(client: Client, query: str, namespace: str) -> dict:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "search",
            "arguments": {"query": query, "namespaces": [namespace], "limit": 10},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": PROTOCOL,
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    response = client.post(
        "/mcp",
        json.dumps(body),
        content_type="application/json",
        HTTP_MCP_PROTOCOL_VERSION=PROTOCOL,
        HTTP_MCP_METHOD="tools/call",
        HTTP_MCP_NAME="search",
    )
    assert response.status_code == 200, response.content
    return response.json()["result"]


def api_search(client: Client, query: str, namespace: str) -> dict:
    response = client.post(
        "/api/search",
        json.dumps({"query": query, "namespace": namespace, "limit": 10, "group": "document"}),
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    return response.json()


def test_mcp_search_makes_no_more_queries_than_api_search():
    namespace, _ = ingest("cost", CORPUS)
    _, token = issue_token("cost", namespaces=[namespace])
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    query = "roast pumpkin soup"
    (
        api_search(client, query, "cost"),
        mcp_search(client, query, "cost"),
    )  # warm: the token's last use is recorded
    querylog.flush()
    with CaptureQueriesContext(connection) as api_queries:
        api = api_search(client, query, "cost")
        querylog.flush()
    with CaptureQueriesContext(connection) as mcp_queries:
        found = mcp_search(client, query, "cost")
        querylog.flush()
    assert (
        api["cited"] and found["structuredContent"]["correction"] is None
    )  # cited: no "did you mean" to compute
    assert len(statements(mcp_queries)) <= len(statements(api_queries)), "\n".join(
        statements(mcp_queries)
    )


def statements(captured: CaptureQueriesContext) -> list[str]:
    """The queries, less the savepoints django-mcpz wraps a tool in inside the test's transaction
    (a request outside one, as served, has none)."""
    return [q["sql"][:200] for q in captured if "SAVEPOINT" not in q["sql"]]
