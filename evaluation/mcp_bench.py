"""Compare each MCP tool's server time with its JSON API twin's, for `kb_bench --mcp`.

Both run in-process through Django's whole stack with one temporary read token, in alternating order
so neither always meets a warmer cache. The MCP overhead is the difference of the two surfaces' p95
overheads (request time minus the search's own, from its query-log row). A temporary provider is
made for the capability tools and deleted afterwards. Then the same searches go through the official
MCP SDK's client against a live WSGI server on loopback, wire and SDK included.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator

from django.core.servers.basehttp import WSGIRequestHandler, WSGIServer
from django.core.wsgi import get_wsgi_application
from django.db import connections
from django.test import Client

from capabilities import service
from evaluation.metrics import percentiles
from kb.auth import issue_token
from kb.conf import kb_settings
from kb.models import ApiToken, Document, Namespace, Provider, QueryLog
from retrieval import querylog

PROTOCOL = "2026-07-28"
SEARCH_LIMIT = (
    10  # documents, as the MCP search tool counts them; /api/search is asked with group=document
)
PROVIDER = "kb-bench-mcp"
PROVIDER_DOCUMENTS = 10
NO_ANSWER_MODEL = (
    "answers are off here (KB_ANSWER_URL unset): the answer tool's time is its model's"
)


class Surfaces:
    """One in-process client calling the API and the MCP endpoint with one token."""

    def __init__(self, token: str):
        self.client = Client(HTTP_HOST="localhost", HTTP_AUTHORIZATION=f"Bearer {token}")
        self.weak = (
            0  # MCP searches with nothing clearly relevant: each also computed a "did you mean"
        )

    def api(self, method: str, path: str, body: dict | None = None) -> tuple[float, dict]:
        started = time.perf_counter()
        if method == "get":
            response = self.client.get(path, body or {})
        else:
            response = self.client.post(path, json.dumps(body), content_type="application/json")
        elapsed = (time.perf_counter() - started) * 1000
        if response.status_code != 200:
            raise RuntimeError(
                f"{method.upper()} {path} "
                f"answered {response.status_code}: {response.content[:300]!r}"
            )
        return elapsed, response.json()

    def tool(self, name: str, arguments: dict) -> tuple[float, dict]:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": name,
                "arguments": arguments,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": PROTOCOL,
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        }
        started = time.perf_counter()
        response = self.client.post(
            "/mcp",
            json.dumps(body),
            content_type="application/json",
            HTTP_MCP_PROTOCOL_VERSION=PROTOCOL,
            HTTP_MCP_METHOD="tools/call",
            HTTP_MCP_NAME=name,
        )
        elapsed = (time.perf_counter() - started) * 1000
        result = response.json().get("result", {}) if response.status_code == 200 else {}
        if result.get("isError", True):
            raise RuntimeError(
                f"MCP tool {name} failed: {response.status_code} {response.content[:300]!r}"
            )
        return elapsed, result["structuredContent"]


def last_search_ms() -> float:
    querylog.flush()  # the search just made may still be queued
    return QueryLog.objects.order_by("-id").values_list("timings", flat=True).first()["total_ms"]


def mcp_latency(
    namespace: str, texts: list[str], progress: Callable[[str, int, int], None]
) -> dict:
    """p50/p95/p99 of every MCP tool and of its API twin, and each search request's overhead."""
    ns = Namespace.objects.get(slug=namespace)
    token, secret = issue_token("kb_bench --mcp", namespaces=[ns], rate_limit_per_minute=10**9)
    samples: dict[str, list[float]] = {}

    def record(name: str, ms: float) -> None:
        samples.setdefault(name, []).append(ms)

    try:
        with temporary_provider(ns) as capability_ids:
            surfaces = Surfaces(secret)
            calls = _calls(namespace, capability_ids)
            for _, call in calls(surfaces, texts[0]):  # warm-up, and a check every surface answers
                call()
            surfaces.weak = 0
            for done, text in enumerate(texts, 1):
                for name, call in calls(surfaces, text, swap=done % 2 == 0):
                    ms = call()
                    record(name, ms)
                    if name.endswith("search"):
                        record(f"{name} overhead", ms - last_search_ms())
                progress("MCP and API server time", done, len(texts))
        client_samples = sdk_latency(namespace, secret, texts, progress)
    finally:
        ApiToken.objects.filter(pk=token.pk).delete()
    report = {name: percentiles(values) for name, values in sorted(samples.items())}
    if "mcp answer" not in report:
        report["mcp answer"] = {"not_measured": NO_ANSWER_MODEL}
    report["mcp_overhead_over_api_search_p95_ms"] = round(
        report["mcp search overhead"]["p95_ms"] - report["api search overhead"]["p95_ms"], 2
    )
    report["mcp_search_minus_api_search_p95_ms"] = round(
        report["mcp search"]["p95_ms"] - report["api search"]["p95_ms"], 2
    )
    report["mcp_searches_weak"] = surfaces.weak
    report["client"] = {
        name: percentiles(values) for name, values in sorted(client_samples.items())
    }
    report["queries"] = len(texts)
    return report


def sdk_latency(
    namespace: str, secret: str, texts: list[str], progress: Callable[[str, int, int], None]
) -> dict:
    """Each query's search through the official SDK's client and through /api/search (the same
    httpx client, token and live server), in alternating order: the times an agent sees."""
    import anyio
    import httpx2
    from mcp import Client as SdkClient
    from mcp.client.streamable_http import streamable_http_client

    samples: dict[str, list[float]] = {
        "sdk mcp search": [],
        "http api search": [],
        "http api search chunks": [],
    }
    api_body = {"namespace": namespace, "limit": SEARCH_LIMIT}

    async def main(root: str) -> None:
        async with httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {secret}"}, timeout=120
        ) as http:
            async with SdkClient(
                streamable_http_client(f"{root}/mcp", http_client=http), mode=PROTOCOL
            ) as client:

                async def mcp_search(text: str) -> None:
                    result = await client.call_tool(
                        "search", {"query": text, "namespaces": [namespace], "limit": SEARCH_LIMIT}
                    )
                    if result.is_error:
                        raise RuntimeError(f"MCP search failed through the SDK: {result.content!r}")

                async def api_search(text: str, group: str = "document") -> None:
                    body = {"query": text, "group": group, **api_body}
                    (await http.post(f"{root}/api/search", json=body)).raise_for_status()

                async def api_chunks(text: str) -> None:
                    await api_search(text, "chunk")

                pair = [
                    ("http api search", api_search),
                    ("sdk mcp search", mcp_search),
                    ("http api search chunks", api_chunks),
                ]
                for (
                    _,
                    call,
                ) in pair:  # warm-up: the SDK lists the tools once, for their output schemas
                    await call(texts[0])
                for done, text in enumerate(texts, 1):
                    for name, call in reversed(pair) if done % 2 == 0 else pair:
                        started = time.perf_counter()
                        await call(text)
                        samples[name].append((time.perf_counter() - started) * 1000)
                    progress("MCP and API through the SDK client", done, len(texts))

    with live_server() as root:
        anyio.run(main, root)
    return samples


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, *args) -> None:  # one line per request would drown the progress bars
        pass


@contextlib.contextmanager
def live_server() -> Iterator[str]:
    """The product's WSGI application on a free loopback port, served by one thread (which sees
    only committed rows: the benchmark's token is committed before the server is asked)."""
    server = WSGIServer(("127.0.0.1", 0), _QuietHandler, allow_reuse_address=False)
    server.set_app(get_wsgi_application())

    def serve() -> None:
        try:
            server.serve_forever()
        finally:
            connections.close_all()  # the serving thread's own, which would hold the database open

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _calls(namespace: str, capability_ids: list[str]):
    """Per query, the (name, timed call) pairs: each MCP tool beside its API twin."""

    def calls(s: Surfaces, text: str, swap: bool = False):
        found: dict = {}

        def mcp_search() -> float:
            ms, found["search"] = s.tool(
                "search", {"query": text, "namespaces": [namespace], "limit": SEARCH_LIMIT}
            )
            s.weak += bool(found["search"]["weak_titles"] or found["search"]["correction"])
            return ms

        def api_search() -> float:
            return s.api(
                "post",
                "/api/search",
                {"query": text, "namespace": namespace, "limit": SEARCH_LIMIT, "group": "document"},
            )[0]

        def passage() -> str:
            documents = found["search"]["documents"]
            return documents[0]["sections"][0]["id"] if documents else "c0"

        def document_id() -> int:
            documents = found["search"]["documents"]
            return documents[0]["document_id"] if documents else 0

        def api_chunks() -> (
            float
        ):  # /api/search as a reader calls it (group=chunk), beside the like-for-like
            return s.api(
                "post",
                "/api/search",
                {"query": text, "namespace": namespace, "limit": SEARCH_LIMIT},
            )[0]

        pair = [
            ("api search", api_search),
            ("mcp search", mcp_search),
            ("api search chunks", api_chunks),
        ]
        chosen = capability_ids[:1]
        yield from (reversed(pair) if swap else pair)
        yield "mcp fetch passage", lambda: s.tool("fetch", {"id": passage()})[0]
        yield "mcp fetch document", lambda: s.tool("fetch", {"id": f"d{document_id()}"})[0]
        yield (
            "api document text",
            lambda: s.api("get", f"/api/documents/{document_id()}/text", {"max_chars": 8000})[0],
        )
        yield (
            "mcp context",
            lambda: s.tool("context", {"query": text, "namespaces": [namespace]})[0],
        )
        yield (
            "api context",
            lambda: s.api("post", "/api/context", {"query": text, "namespace": namespace})[0],
        )
        yield "mcp list_namespaces", lambda: s.tool("list_namespaces", {})[0]
        yield "api namespaces", lambda: s.api("get", "/api/namespaces")[0]
        yield "mcp list_sources", lambda: s.tool("list_sources", {})[0]
        yield "api sources", lambda: s.api("get", "/api/sources")[0]
        yield "mcp capability_catalog", lambda: s.tool("capability_catalog", {})[0]
        yield "api capability catalog", lambda: s.api("get", "/api/capabilities/catalog")[0]
        capabilities = {"text": text, "provider_ids": [PROVIDER]}
        yield "mcp retrieve_capabilities", lambda: s.tool("retrieve_capabilities", capabilities)[0]
        yield (
            "api capabilities retrieve",
            lambda: s.api("post", "/api/capabilities/retrieve", capabilities)[0],
        )
        knowledge = {"selected": chosen, "text": text}
        yield "mcp retrieve_knowledge", lambda: s.tool("retrieve_knowledge", knowledge)[0]
        yield (
            "api knowledge retrieve",
            lambda: s.api("post", "/api/knowledge/retrieve", knowledge)[0],
        )
        if (
            kb_settings().answer_url
        ):  # an answer's time is mostly the model's: timed only where one answers
            question = {"q": text, "namespaces": [namespace]}
            yield "mcp answer", lambda: s.tool("answer", question)[0]
            yield (
                "api answer",
                lambda: s.api("post", "/api/answer", {**question, "stream": False})[0],
            )

    return calls


@contextlib.contextmanager
def temporary_provider(namespace: Namespace):
    """A provider with one capability per document of the namespace's first few, deleted after."""
    documents = list(
        Document.objects.filter(namespace=namespace)
        .select_related("source")
        .order_by("id")[:PROVIDER_DOCUMENTS]
    )
    definition = {
        "id": PROVIDER,
        "title": "Benchmark provider",
        "namespace": namespace.slug,
        "capabilities": [
            {
                "name": f"doc-{d.pk}",
                "title": (d.title or d.ref)[:200],
                "summary": d.content[:300] or d.ref,
                "knowledge": [
                    {
                        "source": d.source.name,
                        "document": d.ref,
                        "role": "reference",
                        "locale": "en",
                    }
                ],
            }
            for d in documents
        ],
    }
    try:
        service.load_definitions(definition)
        yield [f"{PROVIDER}/doc-{d.pk}" for d in documents]
    finally:
        Provider.objects.filter(slug=PROVIDER).delete()
