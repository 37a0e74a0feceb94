"""Pages without surprises: a Content-Security-Policy with no inline script on every page,
Swagger UI served from this server, admin sign-in throttled, secrets hidden from debug pages."""

from __future__ import annotations

import pytest
from django.test import Client, RequestFactory

from config.middleware import SecretHidingFilter

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", ["/", "/api/docs", "/admin/login/", "/healthz", "/documents/1/"])
def test_every_page_forbids_inline_script_and_other_origins(client, path):
    response = client.get(path)
    policy = response["Content-Security-Policy"]
    assert (
        "script-src 'self'" in policy
        and "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0]
    )
    assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy
    if path == "/":
        assert "style-src 'self';" in policy  # the product's own pages: no inline style either
        assert 'style="' not in response.content.decode()


def test_api_docs_load_nothing_from_another_origin(client):
    html = client.get("/api/docs").content.decode()
    assert "swagger-ui-bundle.js" in html and "cdn." not in html and "https://" not in html


def test_admin_sign_in_is_throttled_per_address():
    client = Client(REMOTE_ADDR="198.51.100.20")
    statuses = [
        client.post("/admin/login/", {"username": "admin", "password": f"guess{i}"}).status_code
        for i in range(11)
    ]
    assert statuses[:10] == [200] * 10 and statuses[10] == 429
    other_address = Client(REMOTE_ADDR="198.51.100.21")
    assert (
        other_address.post("/admin/login/", {"username": "a", "password": "b"}).status_code == 200
    )


def test_debug_pages_hide_the_database_url_and_other_secrets(settings):
    settings.DATABASE_URL = "postgresql://kb:hunter2@db/kb"
    request = RequestFactory().get("/", HTTP_X_PLAIN="shown")
    request.META["DATABASE_URL"] = "postgresql://kb:hunter2@db/kb"
    reporter = SecretHidingFilter()
    safe_settings = reporter.get_safe_settings()
    assert "hunter2" not in str(safe_settings.get("DATABASE_URL")) and "hunter2" not in str(
        safe_settings["DATABASES"]
    )
    meta = reporter.get_safe_request_meta(request)
    assert "hunter2" not in str(meta["DATABASE_URL"]) and meta["HTTP_X_PLAIN"] == "shown"
