"""What a request may cost and what its answer may tell: eval runs pay per case and need a caller,
guessing tokens is rate-limited, an IPv6 client is its /64, NUL in a query is a 400, a foreign
capability id reads as unknown, runs queue once per source, debug pages stay with staff."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.http import HttpResponse
from django.test import Client, RequestFactory
from django.urls import path

from capabilities import service as capability_service
from ingest.service import start_ingest
from kb.auth import client_address, issue_token
from kb.conf import kb_settings
from kb.models import Source
from tests.corpus import CORPUS, ingest

pytestmark = pytest.mark.django_db


@pytest.fixture
def tenants():
    a, _ = ingest("tenant:a", CORPUS)
    b, _ = ingest(
        "tenant:b", {"secret": ("Pumpkin secret", "The secret pumpkin recipe of tenant B.")}
    )
    return a, b


@pytest.fixture
def limits(settings):
    settings.KB_RATE_LIMIT_ANONYMOUS = 3
    kb_settings.cache_clear()
    yield
    kb_settings.cache_clear()


def _suite(cases: int) -> dict:
    return {
        "version": 1,
        "defaults": {"namespace": "tenant:a", "topK": 1},
        "cases": [
            {"id": f"c{i}", "question": "pumpkin soup", "expect": {"relevant": ["pumpkin"]}}
            for i in range(cases)
        ],
    }


def test_eval_runs_need_a_caller_and_pay_for_every_case(tenants):
    a, _ = tenants
    anonymous = Client().post(
        "/api/evals/run", data=json.dumps({"suite": _suite(1)}), content_type="application/json"
    )
    assert anonymous.status_code == 401
    _, secret = issue_token("evals", namespaces=[a], rate_limit_per_minute=10)
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    first = client.post(
        "/api/evals/run", data=json.dumps({"suite": _suite(8)}), content_type="application/json"
    )
    assert first.status_code == 200  # 8 searches of the 10 a minute
    second = client.post(
        "/api/evals/run", data=json.dumps({"suite": _suite(8)}), content_type="application/json"
    )
    assert second.status_code == 429 and second.json()["code"] == "KB_RATE_LIMITED"


def test_unknown_tokens_are_rate_limited_per_address(tenants, limits):
    client = Client(HTTP_AUTHORIZATION="Bearer kb_guess_000", REMOTE_ADDR="203.0.113.9")
    codes = [
        client.get("/api/search", {"query": "x", "namespace": "tenant:a"}).status_code
        for _ in range(5)
    ]
    assert codes[:3] == [401, 401, 401] and codes[3:] == [429, 429]


def test_an_ipv6_client_is_counted_per_64():
    factory = RequestFactory()
    first = client_address(factory.get("/", REMOTE_ADDR="2001:db8:1:2::1"))
    other_host = client_address(factory.get("/", REMOTE_ADDR="2001:db8:1:2:ffff:ffff:ffff:fffe"))
    other_net = client_address(factory.get("/", REMOTE_ADDR="2001:db8:1:3::1"))
    assert first == other_host == "2001:db8:1:2::/64" and other_net != first
    assert client_address(factory.get("/", REMOTE_ADDR="::ffff:198.51.100.7")) == "198.51.100.7"
    assert client_address(factory.get("/", REMOTE_ADDR="198.51.100.7")) == "198.51.100.7"


@pytest.mark.parametrize(
    "url",
    [
        "/?q=soup&namespace=demo%00",
        "/api/search?query=soup&namespace=demo%00",
        "/?q=so%00up",
        "/documents/1?x=%00",
    ],
)
def test_nul_in_a_query_answers_400(tenants, url):
    response = Client(raise_request_exception=False).get(url)
    assert response.status_code == 400


def test_a_foreign_capability_id_answers_like_a_missing_one(tenants):
    a, b = tenants
    capability_service.load_definitions(
        {
            "id": "theirs",
            "namespace": "tenant:b",
            "capabilities": [
                {"name": "cook", "title": "Cook", "knowledge": [{"source": "corpus"}]}
            ],
        },
        reindex=False,
    )
    _, secret = issue_token("reader", namespaces=[a])
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    answers = [
        client.post(
            "/api/knowledge/retrieve",
            data=json.dumps({"selected": [cid], "text": "soup"}),
            content_type="application/json",
        )
        for cid in ("theirs/cook", "nobody/nothing")
    ]
    foreign, missing = answers
    assert foreign.status_code == missing.status_code
    assert foreign.json()["code"] == missing.json()["code"] == "CG_UNKNOWN_CAPABILITY"
    ids = ("theirs/cook", "nobody/nothing")
    said = [
        answer.json()["message"].replace(cid, "X") for answer, cid in zip(answers, ids, strict=True)
    ]
    assert said[0] == said[1]


def test_a_source_has_one_queued_run_however_often_it_is_asked(tenants):
    source = Source.objects.get(namespace__slug="tenant:a", name="corpus")
    runs = {start_ingest(source).pk for _ in range(5)}
    assert len(runs) == 1
    assert start_ingest(source, mode="reembed").pk not in runs  # another mode queues its own


def _boom(request):
    raise RuntimeError("the SECRET_DETAIL of a crash")


urlpatterns = [path("boom/", _boom), path("ok/", lambda request: HttpResponse("ok"))]


@pytest.mark.parametrize("url", ["/boom/", "/no-such-page/"])
def test_debug_pages_reach_only_superusers(settings, url, db):
    settings.DEBUG = True
    settings.ROOT_URLCONF = __name__
    anonymous = Client(raise_request_exception=False).get(url)
    assert anonymous.status_code in (404, 500)
    body = anonymous.content.decode()
    assert "Traceback" not in body and "SECRET_DETAIL" not in body and "URLconf" not in body
    # a tenant's curator is staff: a traceback's frames could hold another tenant's rows
    curator = get_user_model().objects.create_user("curator", password="pw", is_staff=True)
    client = Client(raise_request_exception=False)
    client.force_login(curator)
    body = client.get(url).content.decode()
    assert "Traceback" not in body and "SECRET_DETAIL" not in body and "URLconf" not in body
    superuser = get_user_model().objects.create_superuser("dev", password="pw")
    client.force_login(superuser)
    technical = client.get(url).content.decode()
    assert "SECRET_DETAIL" in technical or "URLconf" in technical


def test_pdfs_are_served_under_the_tightest_policy_the_viewer_allows():
    from retrieval.views import PDF_POLICY, STORED_FILE_POLICY

    assert STORED_FILE_POLICY.startswith("sandbox;")
    for directive in (
        "default-src 'none'",
        "frame-ancestors 'none'",
        "form-action 'none'",
        "base-uri 'none'",
    ):
        assert directive in PDF_POLICY
