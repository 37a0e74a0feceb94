"""The MCP endpoint through the official MCP SDK's client, against the live product on loopback:
tools, scoping, fetch in pieces, error shapes, authorisation, Origin, rate limits, the query log."""

from __future__ import annotations

import httpx2
import pytest
from mcp.shared.exceptions import MCPError

from kb.auth import issue_token
from kb.models import ApiToken, Chunk, Document, QueryLog, Source
from retrieval import querylog
from tests.mcp.conftest import LEGACY, MODERN, run_agent, tool_error

pytestmark = pytest.mark.slow

TOOLS = {
    "search",
    "fetch",
    "context",
    "list_namespaces",
    "list_sources",
    "capability_catalog",
    "retrieve_capabilities",
    "retrieve_knowledge",
    "answer",
}


@pytest.mark.parametrize("mode", [MODERN, LEGACY], ids=["2026-07-28", "2025-handshake"])
def test_lists_read_only_tools_and_calls_each_one(world, mode):
    async def script(client):
        listed = (await client.list_tools()).tools
        results = {
            "search": await client.call_tool(
                "search", {"query": "roast pumpkin soup", "explain": True}
            ),
            "context": await client.call_tool(
                "context", {"query": "roast pumpkin soup", "namespaces": ["tenant:a"]}
            ),
            "list_namespaces": await client.call_tool("list_namespaces", {}),
            "list_sources": await client.call_tool("list_sources", {}),
            "capability_catalog": await client.call_tool("capability_catalog", {}),
            "retrieve_capabilities": await client.call_tool(
                "retrieve_capabilities", {"text": "make pumpkin soup", "provider_ids": ["kitchen"]}
            ),
            "retrieve_knowledge": await client.call_tool(
                "retrieve_knowledge", {"selected": ["kitchen/cook"], "text": "roast the pumpkin"}
            ),
        }
        top = results["search"].structured_content["documents"][0]["sections"][0]["id"]
        results["fetch"] = await client.call_tool("fetch", {"id": top})
        return listed, results

    listed, results = run_agent(world["url"], world["a"], script, mode=mode)
    assert {tool.name for tool in listed} == TOOLS
    for tool in listed:
        assert (
            tool.annotations.read_only_hint is True and tool.annotations.destructive_hint is False
        ), tool.name
        assert tool.output_schema["type"] == "object" and "Cost:" in tool.description, tool.name
    for name, result in results.items():
        assert not result.is_error, (name, result.content)
        assert isinstance(result.structured_content, dict) and result.content[0].text, name

    found = results["search"].structured_content
    assert found["namespaces"] == ["tenant:a"]
    top = found["documents"][0]
    assert top["title"] == "Pumpkin soup" and top["id"] == f"d{top['document_id']}"
    section = top["sections"][0]
    assert section["citation_url"].startswith(world["root"] + "/documents/")  # absolute
    assert section["explanation"]["relevance"] > 0 and "<mark>" in section["snippet"]
    assert section["id"] in results["search"].content[0].text  # the rendering names the passage ids

    assert world["root"] + "/documents/" in results["context"].structured_content["context"]
    assert results["context"].structured_content["delimiter"].startswith("kb-passage-")
    namespaces = results["list_namespaces"].structured_content["namespaces"]
    assert [n["slug"] for n in namespaces] == ["tenant:a"]
    assert (
        namespaces[0]["documents"] == 8
        and namespaces[0]["sources"] == 3
        and namespaces[0]["last_success_at"]
    )
    sources = results["list_sources"].structured_content["sources"]
    assert {s["name"] for s in sources} == {"corpus", "guide", "manual"} and all(
        s["last_success_at"] for s in sources
    )
    assert [c["id"] for c in results["capability_catalog"].structured_content["capabilities"]] == [
        "kitchen/cook"
    ]
    assert (
        results["retrieve_capabilities"].structured_content["candidates"][0]["id"] == "kitchen/cook"
    )
    hit = results["retrieve_knowledge"].structured_content["hits"][0]
    assert hit["title"] == "Pumpkin soup" and hit["citation_url"].startswith(world["root"])
    assert (
        results["fetch"].structured_content["text"]
        == Chunk.objects.get(pk=int(section["id"][1:])).text
    )


def test_a_token_for_one_namespace_sees_nothing_of_another_through_any_tool(world):
    secret = Document.objects.get(ref="secret")
    secret_chunk = secret.chunks.first()
    missing_id = Document.objects.order_by("-pk").first().pk + 1000
    missing_chunk = Chunk.objects.order_by("-pk").first().pk + 1000
    foreign_and_missing = {
        "search": (
            {"query": "secret pumpkin recipe", "namespaces": ["tenant:b"]},
            {"query": "secret pumpkin recipe", "namespaces": ["tenant:nope"]},
        ),
        "context": (
            {"query": "secret pumpkin recipe", "namespaces": ["tenant:b"]},
            {"query": "secret pumpkin recipe", "namespaces": ["tenant:nope"]},
        ),
        "list_sources": ({"namespaces": ["tenant:b"]}, {"namespaces": ["tenant:nope"]}),
        "fetch": ({"id": f"d{secret.pk}"}, {"id": f"d{missing_id}"}),
        "fetch passage": ({"id": f"c{secret_chunk.pk}"}, {"id": f"c{missing_chunk}"}),
        "capability_catalog": ({"provider_ids": ["bkitchen"]}, {"provider_ids": ["nokitchen"]}),
        "retrieve_capabilities": (
            {"text": "secret soup", "provider_ids": ["bkitchen"]},
            {"text": "secret soup", "provider_ids": ["nokitchen"]},
        ),
        "retrieve_knowledge": (
            {"selected": ["bkitchen/cook"], "text": "secret soup"},
            {"selected": ["nokitchen/cook"], "text": "secret soup"},
        ),
    }
    names = {
        "tenant:b": "tenant:nope",
        str(secret.pk): str(missing_id),
        str(secret_chunk.pk): str(missing_chunk),
        "bkitchen": "nokitchen",
    }

    async def script(client):
        answers = {}
        for label, (foreign, missing) in foreign_and_missing.items():
            tool = label.split()[0]
            answers[label] = (
                await client.call_tool(tool, foreign),
                await client.call_tool(tool, missing),
            )
        answers["search everything"] = await client.call_tool(
            "search", {"query": "secret pumpkin recipe of tenant B"}
        )
        answers["namespaces"] = await client.call_tool("list_namespaces", {})
        answers["sources"] = await client.call_tool("list_sources", {})
        return answers

    answers = run_agent(world["url"], world["a"], script)
    for label in foreign_and_missing:
        foreign, missing = (tool_error(result) for result in answers[label])
        for seen, unseen in names.items():  # the same answer, but for the name asked about
            foreign = _replace(foreign, seen, unseen)
        assert foreign == missing, label
    everything = answers["search everything"].structured_content
    assert everything["namespaces"] == ["tenant:a"]
    assert secret.pk not in {d["document_id"] for d in everything["documents"]}
    assert "tenant:b" not in str(answers["namespaces"].structured_content)
    assert "tenant:b" not in str(answers["sources"].structured_content)

    # the same calls with tenant B's token do reach B: the checks above are not vacuous
    def reach(client):
        return client.call_tool("fetch", {"id": f"c{secret_chunk.pk}"})

    assert "secret pumpkin" in run_agent(world["url"], world["b"], reach).structured_content["text"]


def _replace(value, old: str, new: str):
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, list):
        return [_replace(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: _replace(v, old, new) for k, v in value.items()}
    return value


def test_fetch_reads_a_long_document_in_pieces_and_one_section_by_anchor(world):
    manual = Document.objects.get(ref="manual.md")

    async def script(client):
        pieces, offset = [], 0
        while offset is not None:
            piece = await client.call_tool(
                "fetch", {"id": f"d{manual.pk}", "max_chars": 1000, "offset": offset}
            )
            pieces.append(piece)
            offset = piece.structured_content["next_offset"]
        section = await client.call_tool("fetch", {"id": f"d{manual.pk}", "anchor": "step-7"})
        past_end = await client.call_tool("fetch", {"id": f"d{manual.pk}", "offset": 10**7})
        no_section = await client.call_tool("fetch", {"id": f"d{manual.pk}", "anchor": "step-99"})
        return pieces, section, past_end, no_section

    pieces, section, past_end, no_section = run_agent(world["url"], world["a"], script)
    assert len(pieces) == -(-len(manual.content) // 1000) >= 5
    for piece in pieces[:-1]:
        data = piece.structured_content
        assert data["truncated"] and data["returned_chars"] == 1000
        marker = (
            f"[… truncated: characters {data['offset']}–{data['next_offset']} "
            f"of {len(manual.content)} shown; "
            f"continue with offset={data['next_offset']} …]"
        )
        assert data["text"].endswith(marker) and piece.content[0].text.endswith(marker)
    assert (
        not pieces[-1].structured_content["truncated"]
        and pieces[-1].structured_content["next_offset"] is None
    )
    rebuilt = "".join(
        p.structured_content["text"][: p.structured_content["returned_chars"]] for p in pieces
    )
    assert (
        rebuilt == manual.content
    )  # character offsets across multi-byte text: nothing lost or doubled

    data = section.structured_content
    stored = manual.content.encode("utf-8")[data["start_byte"] : data["end_byte"]].decode("utf-8")
    assert (
        data["text"] == stored and "Step 7 of the café routine" in stored and "Step 8" not in stored
    )
    assert data["heading_path"][-1] == "Step 7" and data["citation_url"].endswith(
        f"/documents/{manual.pk}/#step-7"
    )
    assert tool_error(past_end)["code"] == "KB_INVALID_INPUT"
    assert tool_error(no_section) == {
        "code": "KB_NOT_FOUND",
        "message": f"Document {manual.pk} has no section 'step-99'.",
        "details": {"document_id": manual.pk, "anchor": "step-99"},
    }


def test_an_agent_searches_fetches_the_cited_section_and_quotes_it_byte_for_byte(world):
    async def script(client):
        found = await client.call_tool(
            "search",
            {
                "query": "when should I harvest pumpkins and cure them",
                "namespaces": ["tenant:a"],
                "limit": 3,
            },
        )
        section = found.structured_content["documents"][0]["sections"][0]
        read = await client.call_tool("fetch", {"id": section["id"]})
        return section, read

    section, read = run_agent(world["url"], world["a"], script)
    chunk = Chunk.objects.get(pk=section["chunk_id"])
    assert chunk.anchor == "harvest"
    quoted = read.structured_content
    assert quoted["text"].encode("utf-8") == chunk.text.encode(
        "utf-8"
    )  # the quote is the stored chunk
    assert quoted["citation_url"] == section["citation_url"]  # and cites what search cited
    body = chunk.document.content.encode("utf-8")[quoted["start_byte"] : quoted["end_byte"]].decode(
        "utf-8"
    )
    assert (
        body.strip() and body.strip().split()[0] in chunk.text
    )  # the byte range locates it in the document


def test_a_misspelt_search_that_finds_nothing_clear_offers_the_correction_the_page_would(world):
    guide = Source.objects.get(namespace__slug="tenant:a", name="guide")  # no nutmeg in it

    async def script(client):
        return [
            (await client.call_tool("search", {"query": query, "source_ids": sources}))
            for query, sources in (
                ("nutmg", []),
                ("nutmg", [guide.pk]),
                ("pumpkin soup with nutmeg", []),
            )
        ]

    misspelt, elsewhere, clear = run_agent(world["url"], world["a"], script)
    assert misspelt.structured_content["weak_titles"]  # nothing clearly relevant
    assert misspelt.structured_content["correction"] == "nutmeg"
    assert "Did you mean 'nutmeg'?" in misspelt.content[0].text
    assert (
        elsewhere.structured_content["correction"] is None
    )  # its words would find nothing in that source
    assert clear.structured_content["documents"] and clear.structured_content["correction"] is None

    async def foreign(client):
        return await client.call_tool("search", {"query": "recipy"})

    # "recipe" is a word of tenant B alone: B's reader is offered it, A's reader learns nothing of
    # it
    assert run_agent(world["url"], world["b"], foreign).structured_content["correction"] == "recipe"
    assert run_agent(world["url"], world["a"], foreign).structured_content["correction"] is None


def test_bad_arguments_and_retriever_errors_are_tool_errors_with_stable_codes(world):
    async def script(client):
        return {
            "limit": await client.call_tool("search", {"query": "pumpkin", "limit": 0}),
            "unknown": await client.call_tool("search", {"query": "pumpkin", "colour": "orange"}),
            "empty": await client.call_tool("search", {"query": "   "}),
            "id": await client.call_tool("fetch", {"id": "x12"}),
            "revision": await client.call_tool(
                "retrieve_knowledge",
                {
                    "selected": [{"id": "kitchen/cook", "static_revision": "not-the-current-one"}],
                    "text": "soup",
                },
            ),
        }

    errors = {
        name: tool_error(result)
        for name, result in run_agent(world["url"], world["a"], script).items()
    }
    assert errors["limit"]["code"] == "KB_INVALID_INPUT"
    assert errors["limit"]["details"]["errors"][0]["loc"] == ["limit"]
    assert errors["unknown"] == {
        "code": "KB_INVALID_INPUT",
        "message": "Unknown argument(s): colour.",
        "details": {"unknown": ["colour"]},
    }
    assert errors["empty"]["code"] == "SEARCH_EMPTY_QUERY"
    assert errors["id"]["code"] == "KB_INVALID_INPUT"
    assert errors["revision"]["code"] == "CG_REVISION_MISMATCH"


def test_anonymous_callers_read_public_namespaces_only(world):
    async def script(client):
        return (
            await client.call_tool("list_namespaces", {}),
            await client.call_tool("search", {"query": "orange pumpkins"}),
            await client.call_tool(
                "search", {"query": "orange pumpkins", "namespaces": ["tenant:a"]}
            ),
        )

    namespaces, found, private = run_agent(world["url"], None, script)
    assert [n["slug"] for n in namespaces.structured_content["namespaces"]] == ["public"]
    assert {d["namespace"] for d in found.structured_content["documents"]} == {"public"}
    assert tool_error(private) == {
        "code": "SEARCH_UNKNOWN_NAMESPACE",
        "message": "No namespace 'tenant:a'.",
        "details": {"namespace": "tenant:a"},
    }


def post(url: str, headers: dict | None = None, method: str = "tools/list"):
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": method,
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        },
    }
    headers = {
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": method,
        "Accept": "application/json, text/event-stream",
        **(headers or {}),
    }
    return httpx2.post(url, json=body, headers=headers, timeout=60)


def test_401_challenges_point_at_truthful_protected_resource_metadata(world):
    revoked = post(world["url"], {"Authorization": f"Bearer {world['revoked']}"})
    assert revoked.status_code == 401
    metadata_url = f"{world['root']}/.well-known/oauth-protected-resource/mcp"
    assert revoked.headers["WWW-Authenticate"] == (
        f'Bearer realm="kb", resource_metadata="{metadata_url}", error="invalid_token", '
        'error_description="The API token is unknown or revoked."'
    )
    # a JSON-RPC error whose data is the API's error body, which the official SDK hands its caller
    assert revoked.json()["error"]["data"]["code"] == "KB_TOKEN_INVALID"
    assert post(world["url"], {"Authorization": "Basic dXNlcjpwdw=="}).status_code == 401

    metadata = httpx2.get(metadata_url, timeout=30).json()
    assert metadata == {
        "resource": world["url"],
        "resource_name": "Knowledge base (kb)",
        "bearer_methods_supported": ["header"],
        "resource_documentation": world["root"] + "/api/docs",
    }
    assert "authorization_servers" not in metadata  # none exists yet: tokens come from the admin

    with pytest.raises(ExceptionGroup) as raised:  # the SDK's client refuses to go on after a 401
        run_agent(world["url"], world["revoked"], lambda client: client.list_tools())
    assert raised.group_contains(
        MCPError, match="unknown or revoked"
    )  # the server's words reach the caller

    from kb.models import Namespace

    Namespace.objects.update(is_public=False)
    anonymous = post(world["url"])
    assert (
        anonymous.status_code == 401
        and anonymous.json()["error"]["data"]["code"] == "KB_AUTH_REQUIRED"
    )
    assert (
        anonymous.headers["WWW-Authenticate"]
        == f'Bearer realm="kb", resource_metadata="{metadata_url}"'
    )
    assert post(world["url"], {"Authorization": f"Bearer {world['a']}"}).status_code == 200


def test_origin_is_validated_and_session_cookies_are_ignored(world, admin_client):
    assert post(world["url"], {"Origin": "https://evil.example"}).status_code == 403
    assert post(world["url"], {"Origin": "http://localhost"}).status_code == 200
    cookie = admin_client.cookies["sessionid"].value  # a signed-in superuser's browser
    response = post(world["url"], {"Cookie": f"sessionid={cookie}"}, method="tools/call")
    assert response.status_code in (200, 400)
    body = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {
            "name": "list_namespaces",
            "arguments": {},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    listed = httpx2.post(
        world["url"],
        json=body,
        timeout=60,
        headers={
            "MCP-Protocol-Version": MODERN,
            "Mcp-Method": "tools/call",
            "Mcp-Name": "list_namespaces",
            "Cookie": f"sessionid={cookie}",
        },
    ).json()
    slugs = [n["slug"] for n in listed["result"]["structuredContent"]["namespaces"]]
    assert slugs == ["public"]  # anonymous, not the superuser the cookie belongs to


def test_rate_limits_are_the_tokens_own(world):
    token, secret = issue_token("slow", namespaces=[], rate_limit_per_minute=2)
    statuses = [post(world["url"], {"Authorization": f"Bearer {secret}"}) for _ in range(3)]
    assert [r.status_code for r in statuses] == [200, 200, 429]
    assert int(statuses[2].headers["Retry-After"]) >= 1
    assert statuses[2].json()["error"]["data"]["code"] == "KB_RATE_LIMITED"
    ApiToken.objects.filter(pk=token.pk).delete()


def test_the_search_log_records_the_caller_kind(world, client):
    querylog.flush()  # what earlier tests searched, written before the log is emptied
    QueryLog.objects.all().delete()
    run_agent(world["url"], world["a"], lambda c: c.call_tool("search", {"query": "pumpkin soup"}))
    client.get(
        "/api/search",
        {"query": "pumpkin soup", "namespace": "tenant:a"},
        HTTP_AUTHORIZATION=f"Bearer {world['a']}",
    )
    client.get("/", {"q": "pumpkin soup", "namespace": "public"})
    querylog.flush()  # the live server's searches are logged by this process's writer, within 0.2 s
    assert sorted(QueryLog.objects.values_list("caller", flat=True)) == ["api", "mcp", "page"]


def test_context_takes_namespaces_as_search_does_and_refuses_the_old_argument(world):
    """`context` and `search` name their namespaces alike (a list; empty: every readable one),
    and a client still sending `namespace` is told so rather than searched everywhere."""

    async def script(client):
        both = await client.call_tool("context", {"query": "roast pumpkin soup"})
        old = await client.call_tool(
            "context", {"query": "roast pumpkin soup", "namespace": "tenant:a"}
        )
        return both, old

    both, old = run_agent(world["url"], world["a"], script)
    assert not both.is_error and both.structured_content["citations"]
    assert "namespace" in tool_error(old)["message"] + str(tool_error(old)["details"])
