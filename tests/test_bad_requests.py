"""The 400s Django answers by itself, around any view of ours (a bad Host header, too many form
fields, a malformed multipart body, a NUL in the query), say what was wrong with the request,
with DEBUG on (the `scripts/run` default) and off; none says "Server error."."""

import pytest

pytestmark = pytest.mark.django_db

TOO_MANY_FIELDS = "&".join(f"f{n}=1" for n in range(1001))
BAD_HOST = (
    "Bad request: this server does not answer for the host name the request was sent to "
    "(its Host header)."
)

CASES = {
    "bad-host": (lambda c: c.get("/", HTTP_HOST="evil.example"), BAD_HOST),
    "bad-host-api": (lambda c: c.get("/api/namespaces", HTTP_HOST="evil.example"), BAD_HOST),
    "too-many-fields": (
        lambda c: c.post(
            "/accounts/login/",
            data=TOO_MANY_FIELDS,
            content_type="application/x-www-form-urlencoded",
        ),
        "Bad request: the form sends more than 1000 fields.",
    ),
    "too-large": (
        lambda c: c.post(
            "/accounts/login/",
            data=b"a=" + b"x" * (10 * 2**20 + 1),
            content_type="application/x-www-form-urlencoded",
        ),
        "Bad request: the form's data is larger than 10 MB (files excepted).",
    ),
    "malformed-multipart": (
        lambda c: c.post(
            "/accounts/login/", data=b"--x\r\nbroken", content_type="multipart/form-data; boundary="
        ),
        "Bad request: the multipart form data is malformed and cannot be read.",
    ),
    "nul-in-query": (
        lambda c: c.get("/?q=pumpkin%00"),
        "Bad request: the path or a query parameter holds a NUL character (%00), which is never "
        "valid.",
    ),
}


@pytest.mark.parametrize("debug", [True, False], ids=["debug-on", "debug-off"])
@pytest.mark.parametrize("name", list(CASES))
def test_a_400_says_what_was_wrong(client, settings, name, debug):
    settings.DEBUG = debug
    send, text = CASES[name]
    response = send(client)
    assert response.status_code == 400
    assert response.content.decode() == text


def test_a_nul_in_an_api_query_keeps_its_text_in_the_error_shape(client):
    response = client.get("/api/search?query=pumpkin%00&namespace=public")
    assert response.status_code == 400
    assert response.json() == {
        "code": "KB_BAD_REQUEST",
        "details": {},
        "message": (
            "Bad request: the path or a query parameter holds a NUL character (%00), which is "
            "never valid."
        ),
    }


def test_staff_still_get_the_debug_page_for_a_bad_request(admin_client, settings):
    settings.DEBUG = True
    response = admin_client.post(
        "/accounts/login/", data=TOO_MANY_FIELDS, content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 400 and b"TooManyFieldsSent" in response.content
