"""A Python agent using the knowledge base over MCP: search, then read the cited passage whole.

    KB_MCP_URL=https://kb.example.com/mcp KB_TOKEN=kb_... python examples/mcp_agent.py "how do I
    roast a pumpkin"

Prints one JSON object: the passage's id, its text as stored (quote it as is) and the URL to cite.
Needs only the official MCP SDK (`pip install mcp`); tests/mcp/test_examples.py runs it against
the live product.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError


async def ask(url: str, token: str, question: str) -> dict | None:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http)) as kb:
            found = await kb.call_tool("search", {"query": question, "limit": 3})
            if found.is_error:
                raise SystemExit(
                    found.content[0].text
                )  # {"code": ..., "message": ..., "details": ...}
            documents = found.structured_content["documents"]
            if not documents:
                return None
            best = documents[0]["sections"][0]
            passage = await kb.call_tool("fetch", {"id": best["id"]})
            return {
                "id": best["id"],
                "quote": passage.structured_content["text"],
                "cite": best["citation_url"],
            }


def refusal(exc: BaseException) -> dict | None:
    """The server's own error body ({code, message, details}) inside what the SDK raised, which
    wraps it in its task groups' exception groups."""
    if isinstance(exc, MCPError):
        return (
            exc.error.data if isinstance(exc.error.data, dict) else {"message": exc.error.message}
        )
    for inner in getattr(exc, "exceptions", ()):
        found = refusal(inner)
        if found:
            return found
    return None


if __name__ == "__main__":
    try:
        answer = asyncio.run(
            ask(os.environ["KB_MCP_URL"], os.environ.get("KB_TOKEN", ""), " ".join(sys.argv[1:]))
        )
    except Exception as exc:  # a refused token, an unreachable server: say what the server said
        body = refusal(exc)
        if body is None:
            raise
        sys.exit(json.dumps(body, ensure_ascii=False))
    print(json.dumps(answer, ensure_ascii=False))
