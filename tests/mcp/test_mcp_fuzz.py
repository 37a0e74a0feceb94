"""A fuzzer for /mcp, through the real WSGI stack in process: JSON-RPC calls of every tool with
hostile arguments (lone surrogates, integers past 64 bits, nesting thousands of levels deep),
and hostile bodies around them. No answer may be a 5xx, and no tool may fail "unexpectedly":
django-mcpz answers a tool's uncaught exception with a 200 and that text, a 500 in disguise."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capabilities import service as capabilities
from config.mcp import TOOLS
from kb import jsonbody
from kb.auth import issue_token
from kb.models import Namespace
from tests.corpus import CORPUS, ingest
from tests.mcp.conftest import MODERN

pytestmark = pytest.mark.django_db
MAX_EXAMPLES = 60
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}


@pytest.fixture
def token(db):
    tenant, _ = ingest("tenant:a", CORPUS)
    public, _ = ingest("public", {"faq": ("Public FAQ", "Pumpkins are orange and public.")})
    Namespace.objects.filter(pk=public.pk).update(is_public=True)
    capabilities.load_definitions(
        {
            "id": "kitchen",
            "title": "Kitchen",
            "namespace": "tenant:a",
            "capabilities": [
                {
                    "name": "cook",
                    "title": "Cook",
                    "summary": "Roast and blend pumpkins into soup.",
                    "knowledge": [
                        {"source": "corpus", "document": "pumpkin", "role": "howto", "locale": "en"}
                    ],
                }
            ],
        }
    )
    _, secret = issue_token("fuzz", namespaces=[tenant], rate_limit_per_minute=10**6)
    return secret


def call(client, token: str | None, body: str, name: str = "", method: str = "tools/call"):
    headers = {
        "HTTP_MCP_PROTOCOL_VERSION": MODERN,
        "HTTP_MCP_METHOD": method,
        "HTTP_ACCEPT": "application/json, text/event-stream",
    }
    if name:
        headers["HTTP_MCP_NAME"] = name
    if token:
        headers["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    return client.post("/mcp", data=body, content_type="application/json", **headers)


def tool_call(name: str, arguments, request_id=1) -> str:
    """The body as a client would send it: ASCII, so a lone surrogate travels as its escape."""
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": META},
        }
    )


def assert_answered(response) -> dict:
    """Not a 5xx; JSON; a JSON-RPC error that says something, or a result whose tool error is
    the product's {code, message, details}."""
    assert response.status_code < 500, response.content[:500]
    body = response.json()
    if "error" in body:
        assert response.status_code >= 400 and body["error"]["message"], body
        return body
    result = body["result"]
    if result.get("isError"):
        text = result["content"][0]["text"]
        assert "failed unexpectedly" not in text, text
        if not text.startswith("Invalid arguments"):  # django-mcpz's own check of the input schema
            assert set(json.loads(text)) == {"code", "message", "details"}, text
    return body


# --- the regressions the audit found, one each ---------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        "[" * 100_000 + "]" * 100_000,
        '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search", '
        '"arguments": {"query": ' + '{"a": ' * 5000 + "1" + "}" * 5000 + "}}}",
        '{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"x": '
        + "[" * 65
        + "]" * 65
        + "}}",
    ],
    ids=["bare-lists", "deep-arguments", "just-past-the-limit"],
)
def test_a_deeply_nested_body_is_a_json_rpc_parse_error(client, token, body):
    response = call(client, token, body, name="search")
    assert response.status_code == 400, response.content[:300]
    error = response.json()["error"]
    assert error["code"] == -32700
    assert error["message"] == (
        f"The request body nests objects or lists more than {jsonbody.MAX_DEPTH} levels "
        "deep; no request needs that many."
    )
    assert error["data"]["code"] == "KB_BAD_REQUEST"


def test_a_lone_surrogate_is_a_parse_error_that_names_where(client, token):
    response = call(client, token, tool_call("search", {"query": "\ud800 pumpkin"}), name="search")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == -32700 and error["data"]["code"] == "KB_BAD_REQUEST"
    assert error["message"].startswith("The request body holds a lone surrogate")
    assert error["data"]["details"] == {"at": "$.params.arguments.query"}


@pytest.mark.parametrize("page", [2**62, 2**63, 10**30])
def test_the_catalog_tool_refuses_a_page_past_the_last_possible_one(client, token, page):
    body = assert_answered(
        call(
            client,
            token,
            tool_call("capability_catalog", {"page": page}),
            name="capability_catalog",
        )
    )
    error = json.loads(body["result"]["content"][0]["text"])
    assert error["code"] == "KB_INVALID_INPUT" and error["details"]["errors"][0]["loc"] == [
        "page"
    ], error


# --- the fuzzer
# ------------------------------------------------------------------------------------

WORDS = st.sampled_from(
    [
        "pumpkin soup",
        "roast the pumpkin",
        "c1",
        "d1",
        "d2",
        "tenant:a",
        "tenant:b",
        "public",
        "kitchen/cook",
        "kitchen",
        "corpus",
        "pumpkin",
        "howto",
        "en",
        "chunk",
        "document",
    ]
)
SURROGATE = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
TEXT = st.one_of(
    WORDS,
    st.text(max_size=20),
    st.tuples(st.text(max_size=5), SURROGATE, st.text(max_size=5)).map("".join),
    st.sampled_from(["d" + "9" * 30, "c-1", "x" * 5000, "\x00", "%00", "' OR 1=1 --"]),
)
HUGE = st.sampled_from([0, -1, 2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**64, 10**30, -(2**63) - 1])
NUMBER = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    HUGE,
    st.floats(allow_nan=False, allow_infinity=False),
)
SCALAR = st.one_of(TEXT, NUMBER, st.booleans(), st.none())
# a placeholder the body's text replaces with that many nested lists
DEEP = st.integers(min_value=2, max_value=3000).map(lambda depth: f"<deep {depth}>")
VALUE = st.one_of(
    DEEP,
    st.recursive(
        SCALAR,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=3),
        max_leaves=8,
    ),
)
PLACEHOLDER = re.compile(r'"<deep (\d+)>"')


def deepened(body: str) -> str:
    return PLACEHOLDER.sub(lambda m: "[" * int(m.group(1)) + "]" * int(m.group(1)), body)


def plausible(field: dict) -> st.SearchStrategy:
    """A value of the field's own JSON type (bounds included, and 64-bit edges past them), so
    most calls get past validation into the tool; VALUE where the type is not simple."""
    kinds = [field] + [option for option in field.get("anyOf", []) if option.get("type") != "null"]
    kind = next((k for k in kinds if "type" in k), {})
    if "enum" in kind:
        return st.sampled_from(kind["enum"])
    if kind.get("type") == "string":
        return WORDS
    if kind.get("type") == "integer":
        return st.one_of(st.integers(kind.get("minimum", -5), kind.get("maximum", 1000)), HUGE)
    if kind.get("type") == "number":
        return st.floats(allow_nan=False, allow_infinity=False)
    if kind.get("type") == "boolean":
        return st.booleans()
    if kind.get("type") == "array":
        return st.lists(plausible(kind.get("items", {})), max_size=3)
    return VALUE


@st.composite
def arguments_for(draw, tool) -> dict:
    """Plausible arguments with, half the time, one of them (or an unknown one) made hostile."""
    schema = tool.input.model_json_schema()
    fields = schema.get("properties", {})
    required = set(schema.get("required", []))
    arguments = draw(
        st.fixed_dictionaries(
            {name: plausible(fields[name]) for name in required},
            optional={
                name: plausible(field) for name, field in fields.items() if name not in required
            },
        )
    )
    if draw(st.booleans()):
        arguments[draw(st.sampled_from(sorted(fields) + ["unknown"]))] = draw(VALUE)
    return arguments


@pytest.mark.slow
@pytest.mark.parametrize("tool", TOOLS, ids=[t.name for t in TOOLS])
def test_no_tool_answers_a_hostile_call_with_a_server_error(client, token, tool):
    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(
        arguments=arguments_for(tool), request_id=st.integers(1, 9)
    )  # hostile ids: the envelope test
    def fuzz(arguments, request_id):
        assert_answered(
            call(
                client, token, deepened(tool_call(tool.name, arguments, request_id)), name=tool.name
            )
        )

    fuzz()


@pytest.mark.slow
def test_no_hostile_envelope_is_answered_with_a_server_error(client, token):
    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(
        envelope=st.fixed_dictionaries(
            {},
            optional={
                "jsonrpc": st.one_of(st.just("2.0"), VALUE),
                "id": VALUE,
                "method": st.one_of(
                    st.sampled_from(["tools/call", "tools/list", "server/discover", "initialize"]),
                    VALUE,
                ),
                "params": st.one_of(
                    VALUE,
                    st.fixed_dictionaries(
                        {"_meta": st.just(META)},
                        optional={
                            "name": st.one_of(st.sampled_from([t.name for t in TOOLS]), VALUE),
                            "arguments": VALUE,
                        },
                    ),
                ),
            },
        ),
        anonymous=st.booleans(),
    )
    def fuzz(envelope, anonymous):
        method = envelope.get("method") if isinstance(envelope.get("method"), str) else "tools/call"
        params = envelope.get("params")
        name = (
            params.get("name")
            if isinstance(params, dict) and isinstance(params.get("name"), str)
            else ""
        )
        response = call(
            client,
            None if anonymous else token,
            deepened(json.dumps(envelope)),
            name=name.encode("ascii", "ignore").decode(),
            method=method.encode("ascii", "ignore").decode(),
        )
        assert_answered(response)

    fuzz()
