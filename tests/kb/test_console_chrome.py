"""What every visitor of the console sees: the product's name in its header and title, a
favicon instead of a 404, "API tokens", and the one-time token with a copy button that runs
under the Content-Security-Policy (a static script, no inline one)."""

import pytest
from django.contrib.auth import get_user_model

from kb.models import Namespace

pytestmark = pytest.mark.django_db


def test_favicon_is_served(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 200 and response["Content-Type"] == "image/x-icon"
    assert b"".join(response.streaming_content)[:4] == b"\x00\x00\x01\x00"  # an ICO file


def test_the_console_says_the_products_name_and_api_tokens(client):
    client.force_login(
        get_user_model().objects.create_superuser("root", "r@example.com", "pw-root-12345")
    )
    index = client.get("/admin/").content.decode()
    assert "Knowledge base console" in index and "Django administration" not in index
    assert ">API tokens<" in index and "Api tokens" not in index


def test_the_one_time_token_comes_with_a_copy_button_and_no_inline_script(client):
    client.force_login(
        get_user_model().objects.create_superuser("root", "r@example.com", "pw-root-12345")
    )
    space = Namespace.objects.create(slug="docs")
    response = client.post(
        "/admin/kb/apitoken/add/",
        {
            "name": "ci",
            "scope": "read",
            "namespaces": [space.pk],
            "rate_limit_per_minute": "120",
            "revoked_at": "",
        },
        follow=True,
    )
    page = response.content.decode()
    assert '<code class="kb-token" id="kb-new-token">' in page
    assert (
        '<button type="button" class="button kb-copy" data-copy="kb-new-token">Copy</button>'
        in page
    )
    assert "kb/admin.js" in page and "<script>" not in page
    assert "script-src 'self';" in response["Content-Security-Policy"]
