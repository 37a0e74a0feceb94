"""Hostile input, end to end, each with its expected outcome. Cases already proven where the rule
lives (size caps, gzip bombs, redirect loops, slow drips, binary types, entity expansion, path
traversal: tests/ingest/) are not repeated; this file covers what crosses the surfaces."""

import json

import pytest
from django.test import Client

from ingest.pipeline import IngestPipeline
from kb.auth import issue_token
from kb.models import IngestRun, Namespace, Source
from tests.corpus import CORPUS, ingest
from tests.webserver import Route

pytestmark = pytest.mark.django_db


@pytest.fixture
def reader():
    namespace, _ = ingest("tenant:a", CORPUS)
    _, secret = issue_token("reader", namespaces=[namespace], rate_limit_per_minute=10**6)
    return secret


def search(reader, query, namespace="tenant:a"):
    return Client().post(
        "/api/search",
        json.dumps({"query": query, "namespace": namespace, "limit": 5}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {reader}",
    )


def titles(response):
    return [r["title"] for r in response.json()["results"]]


def test_a_10000_character_query_is_refused_with_a_stable_code_on_api_and_page(reader):
    response = search(reader, "pumpkin " * 1250)  # the same gate and code as the page's
    assert response.status_code == 413 and response.json()["code"] == "SEARCH_QUERY_TOO_LONG"
    assert response.json()["details"] == {"length": 9999, "max": 4000}  # once normalised (stripped)
    Namespace.objects.filter(slug="tenant:a").update(is_public=True)
    page = Client().get("/", {"q": "pumpkin " * 1250, "namespace": "tenant:a"})
    assert page.status_code == 413 and "characters long" in page.content.decode()


@pytest.mark.parametrize(
    "query",
    [
        "pumpkin & soup | ! :* ( ) <-> \\",
        "pumpkin soup'; DROP TABLE kb_chunk; --",
        "pumpkin soup %s %(x)s $1 ?",
        "pumpkin:A & soup:*",
    ],
)
def test_tsquery_and_sql_metacharacters_are_plain_text(reader, query):
    response = search(reader, query)
    assert response.status_code == 200, response.content
    assert titles(response)[0] == "Pumpkin soup"


@pytest.mark.parametrize(
    "query", ["ｐｕｍｐｋｉｎ ｓｏｕｐ", "pump\u200bkin so\u200dup", "\u202epumpkin soup"]
)
def test_unicode_compatibility_forms_and_invisible_characters_search_like_plain_text(reader, query):
    response = search(reader, query)
    assert response.status_code == 200 and titles(response)[0] == "Pumpkin soup"


def test_only_invisible_characters_is_an_empty_query(reader):
    response = search(reader, "\u200b\u200d\u2060")
    assert response.status_code == 422 and response.json()["code"] == "SEARCH_EMPTY_QUERY"


def test_a_lookalike_namespace_reaches_nothing(reader):
    response = search(reader, "pumpkin", namespace="tenant:\u0430")  # Cyrillic а, not Latin a
    assert response.status_code in (403, 404)
    assert response.json()["code"] in ("KB_FORBIDDEN", "SEARCH_UNKNOWN_NAMESPACE")
    assert "Pumpkin" not in response.content.decode()


def test_malformed_sitemap_xml_fails_the_run_cleanly(web, allow_loopback):
    web.routes["/sitemap.xml"] = Route(
        b"<?xml version='1.0'?><urlset><url><loc>http://x/",
        200,
        {"Content-Type": "application/xml"},
    )
    web.routes["/llms.txt"] = Route(b"", 404)
    namespace = Namespace.objects.create(slug="hostile")
    source = Source.objects.create(
        namespace=namespace,
        name="bad",
        kind="sitemap",
        location=web.url("/sitemap.xml"),
        options={"use_llms_txt": False},
    )
    run = IngestPipeline(IngestRun.objects.create(source=source)).execute()
    assert run.status == "failed" and run.error.startswith("INGEST_BAD_SITEMAP")


def test_non_utf8_page_is_decoded_by_its_declared_charset(web, allow_loopback):
    body = (
        "<html><head><title>Café crème</title></head><body><p>Crème brûlée à la "
        "française.</p></body></html>"
    )
    web.routes["/fr"] = Route(
        body.encode("latin-1"), 200, {"Content-Type": "text/html; charset=iso-8859-1"}
    )
    namespace = Namespace.objects.create(slug="latin")
    source = Source.objects.create(
        namespace=namespace, name="fr", kind="url", location=web.url("/fr")
    )
    run = IngestPipeline(IngestRun.objects.create(source=source)).execute()
    assert run.status == "succeeded"
    document = source.documents.get()
    assert document.title == "Café crème" and "Crème brûlée à la française." in document.content


def test_script_in_a_title_is_data_in_json_and_escaped_on_the_page(reader, db):
    from django.contrib.auth import get_user_model

    ingest(
        "tenant:a",
        {"xss": ("<script>alert('t')</script> Pumpkin", "pumpkin <img src=x onerror=alert(1)>")},
        source_name="hostile",
    )
    response = search(reader, "pumpkin img onerror")
    assert "<script>alert('t')</script> Pumpkin" in titles(
        response
    )  # JSON carries it as plain data
    client = Client()
    client.force_login(get_user_model().objects.create_user("s", is_staff=True, is_superuser=True))
    page = client.get("/", {"q": "pumpkin img onerror", "namespace": "tenant:a"}).content.decode()
    assert (
        "<script>alert('t')</script>" not in page
        and "&lt;script&gt;alert(&#x27;t&#x27;)&lt;/script&gt;" in page
    )
    assert "<img src=x" not in page
