"""Input no field can hold, sent to the JSON API and the eval suites: a lone surrogate, nesting
past any request's depth, a page past PostgreSQL's bigint. Each is a 4xx with a stable code and
a message that says what was wrong, never a 500."""

import json

import pytest

from capabilities import service as capabilities
from evaluation.errors import EvalFileError
from evaluation.suites import parse_suite
from kb import jsonbody
from kb.auth import issue_token
from kb.models import ApiToken, EvalSuite, Namespace
from tests.corpus import ingest

pytestmark = pytest.mark.django_db

HUGE_PAGES = [2**62, 2**63, 10**30]


@pytest.fixture
def public(db):
    namespace, _ = ingest("public", {"faq": ("Public FAQ", "Pumpkins are orange and public.")})
    Namespace.objects.filter(pk=namespace.pk).update(is_public=True)
    capabilities.load_definitions(
        {
            "id": "kitchen",
            "title": "Kitchen",
            "namespace": "public",
            "capabilities": [
                {
                    "name": "cook",
                    "title": "Cook",
                    "summary": "Roast pumpkins.",
                    "knowledge": [
                        {"source": "corpus", "document": "faq", "role": "howto", "locale": "en"}
                    ],
                }
            ],
        }
    )
    return namespace


def post_raw(client, path, body: bytes | str, **headers):
    return client.post(path, data=body, content_type="application/json", **headers)


@pytest.mark.parametrize(
    "body, at",
    [
        ('{"query": "\\ud800", "namespace": "public"}', "$.query"),
        ('{"query": "pumpkin \\udfff soup", "namespace": "public"}', "$.query"),
        (
            b'{"query": "\xed\xa0\x80", "namespace": "public"}',
            "$.query",
        ),  # the surrogate encoded as UTF-8 bytes
        (
            '{"query": "pumpkin", "namespace": "public", "source_ids": [], "\\ud800": 1}',
            "$ (a key)",
        ),
    ],
    ids=["escape", "inside-text", "utf8-bytes", "key"],
)
def test_a_lone_surrogate_in_a_json_body_is_a_400_naming_where(client, public, body, at):
    response = post_raw(client, "/api/search", body)
    assert response.status_code == 400, response.content
    error = response.json()
    assert error["code"] == "KB_BAD_REQUEST"
    assert (
        error["message"].startswith("The request body holds a lone surrogate")
        and at in error["message"]
    )
    assert error["details"] == {"at": at}


@pytest.mark.parametrize(
    "path, body, at",
    [
        ("/api/search", '{"query": "pumpkin\\u0000", "namespace": "public"}', "$.query"),
        (
            "/api/capabilities/retrieve",
            '{"text": "soup", "provider_ids": ["kit\\u0000chen"]}',
            "$.provider_ids[0]",
        ),
    ],
    ids=["search", "capabilities"],
)
def test_a_nul_character_in_a_json_body_is_a_400_naming_where(client, public, path, body, at):
    """PostgreSQL text cannot hold NUL; the query string's is refused by the middleware, the body's
    here."""
    response = post_raw(client, path, body)
    assert response.status_code == 400, response.content
    assert response.json() == {
        "code": "KB_BAD_REQUEST",
        "details": {"at": at},
        "message": (
            f"The request body holds a NUL character (\\u0000) at {at}; no text here may contain "
            "one."
        ),
    }


def test_a_surrogate_pair_is_a_character_and_is_searched_for(client, public):
    response = post_raw(
        client, "/api/search", '{"query": "pumpkin \\ud83c\\udf83", "namespace": "public"}'
    )
    assert response.status_code == 200, response.content
    assert response.json()["query"] == "pumpkin \U0001f383"


def test_an_invalid_utf8_query_string_is_read_with_replacement_characters(client, public):
    """Django decodes a query string's broken UTF-8 as U+FFFD, so no surrogate reaches a view."""
    response = client.get("/api/search?query=%ED%A0%80&namespace=public")
    assert response.status_code == 200, response.content
    assert response.json()["query"] == "\ufffd\ufffd\ufffd"


@pytest.mark.parametrize(
    "depth", [jsonbody.MAX_DEPTH + 1, 5000, 100_000], ids=["just-past", "5000", "100000"]
)
@pytest.mark.parametrize("opener, closer", [("[", "]"), ('{"a":', "}")], ids=["lists", "objects"])
def test_nesting_past_the_limit_is_a_400_that_says_so(client, public, depth, opener, closer):
    body = (
        '{"query": "pumpkin", "namespace": "public", "extra": '
        + opener * depth
        + "1" * (opener != "[")
        + closer * depth
        + "}"
    )
    response = post_raw(client, "/api/search", body)
    assert response.status_code == 400, response.content
    assert response.json() == {
        "code": "KB_BAD_REQUEST",
        "details": {"max_depth": jsonbody.MAX_DEPTH},
        "message": (
            f"The request body nests objects or lists more than {jsonbody.MAX_DEPTH} levels deep; "
            "no request needs that many."
        ),
    }


def test_a_body_that_is_not_json_says_where_it_breaks(client, public):
    response = post_raw(client, "/api/search", '{"query": "pumpkin",\n "namespace": }')
    assert response.status_code == 400
    assert response.json() == {
        "code": "KB_BAD_REQUEST",
        "details": {"line": 2, "column": 15},
        "message": "The request body is not valid JSON: Expecting value at line 2, column 15.",
    }


@pytest.mark.parametrize("page", HUGE_PAGES)
@pytest.mark.parametrize(
    "path",
    ["/api/documents?namespace=public&page={}", "/api/capabilities/catalog?page={}"],
    ids=["documents", "capability-catalog"],
)
def test_a_page_past_the_last_possible_one_is_a_422(client, public, path, page):
    response = client.get(path.format(page))
    assert response.status_code == 422, response.content
    assert response.json()["code"] == "KB_INVALID_INPUT"


@pytest.mark.parametrize(
    "path",
    ["/api/documents?namespace=public&page={}", "/api/capabilities/catalog?page={}"],
    ids=["documents", "capability-catalog"],
)
def test_the_last_allowed_page_is_answered_empty(client, public, path):
    response = client.get(path.format(1_000_000))
    assert response.status_code == 200, response.content
    assert response.json()["page"] == 1_000_000


SURROGATE_SUITE = (
    '{"version": 1, "cases": [{"id": "orange", "question": "\\ud800 pumpkins", '
    '"namespace": "public"}]}'
)


def test_an_eval_suite_with_a_surrogate_is_refused_naming_the_case():
    with pytest.raises(EvalFileError) as raised:
        parse_suite(json.loads(SURROGATE_SUITE))
    assert raised.value.code == "EVAL_INVALID_FILE"
    assert raised.value.details == {"at": "$.cases[0].question"}
    assert raised.value.message.startswith("The eval suite holds a lone surrogate")


def test_an_eval_case_with_a_surrogate_is_not_saved_from_the_console(admin_client, public):
    response = admin_client.post(
        "/admin/kb/evalsuite/add/",
        {"name": "surrogates", "namespace": public.pk, "definition": SURROGATE_SUITE},
    )
    assert response.status_code == 200  # the form again, with the error
    assert (
        "The definition holds a lone surrogate (an escape such as \\ud800 without its pair) at "
        "$.cases[0].question" in response.content.decode()
    )
    assert not EvalSuite.objects.exists()


def test_an_eval_suite_with_a_surrogate_sent_to_the_api_is_a_400(client, public):
    _, token = issue_token("evals", namespaces=[public], scope=ApiToken.Scope.WRITE)
    body = '{"namespace": "public", "suite": ' + SURROGATE_SUITE + "}"
    response = post_raw(client, "/api/evals/run", body, HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 400, response.content
    assert response.json()["details"] == {"at": "$.suite.cases[0].question"}


def test_a_wide_list_under_long_keys_costs_the_checker_almost_nothing():
    """The checker spells a value's path only when it refuses it: spelt for every value, 5,000
    items under 60 levels of 300-character keys (a 120 KB body) cost it about 90 MB, and a body
    at the size limit could take a web process's memory before any token is read."""
    import tracemalloc

    value = [1] * 5000
    for level in range(60):
        value = {f"{level:02d}" * 150: value}
    body = json.dumps(value)
    tracemalloc.start()
    try:
        jsonbody.parse(body)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10 * 1024**2, f"{peak / 1024**2:.0f} MB to check a {len(body) // 1024} KB body"
