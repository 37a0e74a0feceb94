"""A live product on loopback (Django's live server: the real WSGI stack on a real port) with two
tenants, a public namespace and a capability provider, and the official MCP SDK's client."""

from __future__ import annotations

import json

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from capabilities import service
from ingest.loaders import LoadedItem
from ingest.pipeline import IngestPipeline
from kb.auth import issue_token
from kb.models import ApiToken, IngestRun, Namespace, Source
from tests.corpus import CORPUS, ingest
from tests.retrieval.test_grouping_and_fusion import guide

MODERN = "2026-07-28"
LEGACY = "legacy"  # the initialize handshake of the 2025 revisions


def provider(slug: str, namespace: str, document: str) -> dict:
    return {
        "id": slug,
        "title": slug.title(),
        "namespace": namespace,
        "capabilities": [
            {
                "name": "cook",
                "title": "Cook a pumpkin",
                "summary": "Roast and blend pumpkins into soup.",
                "knowledge": [
                    {"source": "corpus", "document": document, "role": "howto", "locale": "en"}
                ],
            }
        ],
    }


def manual(namespace) -> str:
    """A long markdown page (about 6,000 characters, some of them multi-byte) in twelve sections."""
    source = Source.objects.create(namespace=namespace, name="manual", kind="text", text="x")
    body = "# Café manual\n\n" + "\n\n".join(
        f"## Step {n} {{#step-{n}}}\n\n"
        + f"Step {n} of the café routine: grind, tamp, pull the shot — "
        f"crème first, then the body (退款 {n}). " * 4
        for n in range(1, 13)
    )
    run = IngestPipeline(IngestRun.objects.create(source=source)).execute(
        [
            LoadedItem(
                ref="manual.md", body=body.encode(), media_type="text/markdown", path="manual.md"
            )
        ]
    )
    assert run.status == "succeeded", run.error
    return body


@pytest.fixture
def world(transactional_db, live_server):
    tenant_a, _ = ingest("tenant:a", CORPUS)
    guide(tenant_a)
    manual(tenant_a)
    tenant_b, _ = ingest(
        "tenant:b", {"secret": ("Pumpkin secret", "The secret pumpkin soup recipe of tenant B.")}
    )
    public, _ = ingest("public", {"faq": ("Public FAQ", "Pumpkins are orange and public.")})
    Namespace.objects.filter(pk=public.pk).update(is_public=True)
    service.load_definitions(provider("kitchen", "tenant:a", "pumpkin"))
    service.load_definitions(provider("bkitchen", "tenant:b", "secret"))
    _, read_a = issue_token("reader a", namespaces=[tenant_a])
    _, read_b = issue_token("reader b", namespaces=[tenant_b])
    revoked, revoked_secret = issue_token("revoked", namespaces=[tenant_a])
    ApiToken.objects.filter(pk=revoked.pk).update(revoked_at="2026-01-01T00:00:00Z")
    return {
        "url": f"{live_server.url}/mcp",
        "root": live_server.url,
        "a": read_a,
        "b": read_b,
        "revoked": revoked_secret,
    }


def run_agent(url: str, token: str | None, script, mode: str = MODERN):
    """Connect the SDK's client (with the token as a bearer header) and run `script(client)`."""

    async def main():
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
            async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
                return await script(client)

    return anyio.run(main)


def tool_error(result) -> dict:
    """The product's error body a failed tool call carries: {code, message, details}."""
    assert result.is_error, result
    return json.loads(result.content[0].text)
