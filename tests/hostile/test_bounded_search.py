"""Search cost the caller cannot inflate: length measured after NFKC, capped identifiers and
name keys in one statement per channel, capped eval suites, and rate limits for every caller."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from kb import ratelimit
from kb.errors import RateLimited
from kb.models import Namespace
from retrieval.errors import QueryTooLong
from retrieval.query import MAX_IDENTIFIERS, MAX_QUERY_CHARS, analyse, validate_query
from retrieval.service import search
from tests.corpus import CORPUS, ingest

pytestmark = pytest.mark.django_db


def test_query_length_is_checked_after_normalisation():
    expanding = "\u3316" * 4000  # one character, six after NFKC
    assert len(expanding) == MAX_QUERY_CHARS
    with pytest.raises(QueryTooLong, match="once normalised"):
        validate_query(expanding, 10)


def test_identifiers_are_capped_and_searched_in_one_statement():
    ingest("tenant:a", CORPUS)
    query = " ".join(f"a{n:05d}" for n in range(500))
    features = analyse(query)
    assert len(features.identifiers) == MAX_IDENTIFIERS and features.capped
    with CaptureQueriesContext(connection) as queries:
        result = search(query, "tenant:a", log=False)
    assert len(queries) < 20  # was 510: one statement per identifier
    assert result.features.capped == features.capped


def test_api_summary_says_when_a_cap_applied(client):
    namespace, _ = ingest("tenant:a", CORPUS)
    Namespace.objects.filter(pk=namespace.pk).update(is_public=True)
    body = client.get(
        "/api/search",
        {"query": " ".join(f"llama{n:05d}" for n in range(40)), "namespace": "tenant:a"},
    ).json()
    assert body["summary"]["query_caps"] == [
        f"identifiers: the first {MAX_IDENTIFIERS} of 40 were used",
        "name keys: the first 16 of 40 were used",
    ]


def test_a_name_in_too_many_titles_costs_a_bounded_read_and_the_summary_says_so(
    client, monkeypatch
):
    from retrieval import channels

    documents = {f"v{i}": (f"Release 2024 volume {i}", f"Notes of volume {i}.") for i in range(6)}
    namespace, _ = ingest("tenant:a", {**CORPUS, **documents})
    Namespace.objects.filter(pk=namespace.pk).update(is_public=True)
    monkeypatch.setattr(channels, "NAMES_READ_PER_KEY", 5)
    body = client.get("/api/search", {"query": "release 2024", "namespace": "tenant:a"}).json()
    assert body["summary"]["query_caps"] == [
        f"name key {key!r}: in more than 5 document names, too common to name one; not used"
        for key in ("2024", "release2024")
    ]
    assert body["results"]  # the words still find the volumes


def test_eval_runs_are_capped_per_request(client):
    namespace, _ = ingest("tenant:a", CORPUS)
    Namespace.objects.filter(pk=namespace.pk).update(is_public=True)
    suite = {
        "version": 1,
        "cases": [
            {
                "id": f"c{i}",
                "query": "pumpkin",
                "namespace": "tenant:a",
                "expect": {"minResults": 1},
            }
            for i in range(201)
        ],
    }
    from kb.auth import issue_token

    _, token = issue_token(
        "evals", namespaces=[namespace], rate_limit_per_minute=10_000
    )  # runs need a caller
    response = client.post(
        "/api/evals/run",
        json.dumps({"suite": suite}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 422 and "at most 200" in response.json()["message"]


def test_the_counter_is_atomic_and_slides():
    for _ in range(5):
        ratelimit.hit("test:slide", 5, now=600.0)
    with pytest.raises(RateLimited) as caught:
        ratelimit.hit("test:slide", 5, now=601.0)
    assert caught.value.details["retry_after_s"] == 59
    with pytest.raises(RateLimited):  # 15 s into the next window, 3/4 of the last one still counts
        ratelimit.hit("test:slide", 5, now=675.0)
    ratelimit.hit("test:slide", 5, now=735.0)  # a whole window later: free again


def test_anonymous_and_staff_callers_are_rate_limited_with_retry_after(settings):
    from kb.conf import kb_settings

    namespace, _ = ingest("tenant:a", CORPUS)
    Namespace.objects.filter(pk=namespace.pk).update(is_public=True)
    settings.KB_RATE_LIMIT_ANONYMOUS, settings.KB_RATE_LIMIT_STAFF = 3, 4
    kb_settings.cache_clear()
    try:
        anonymous = Client(REMOTE_ADDR="203.0.113.7")
        statuses = [
            anonymous.get("/api/search", {"query": "pumpkin", "namespace": "tenant:a"}).status_code
            for _ in range(4)
        ]
        assert statuses == [200, 200, 200, 429]
        limited = anonymous.get("/api/search", {"query": "pumpkin", "namespace": "tenant:a"})
        assert limited.json()["code"] == "KB_RATE_LIMITED" and int(limited["Retry-After"]) >= 1
        assert (
            anonymous.get("/", {"q": "pumpkin", "namespace": "tenant:a"}).status_code == 429
        )  # the page too
        other = Client(REMOTE_ADDR="203.0.113.8")  # counted per address
        assert (
            other.get("/api/search", {"query": "pumpkin", "namespace": "tenant:a"}).status_code
            == 200
        )

        staff = Client()
        staff.force_login(
            get_user_model().objects.create_user(
                "s", password="pw", is_staff=True, is_superuser=True
            )
        )
        statuses = [
            staff.get("/api/search", {"query": "pumpkin", "namespace": "tenant:a"}).status_code
            for _ in range(5)
        ]
        assert statuses[-1] == 429 and statuses[:4] == [200] * 4
    finally:
        kb_settings.cache_clear()
