"""The console's forms say what this form's field means (not what the model's field means for
every kind), and a crawl pattern written as a regular expression is refused with the glob it
means, where it used to be stored and match nothing."""

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError

from kb.models import ApiToken, Source
from kb.validators import validate_source_options

pytestmark = pytest.mark.django_db
MODEL_LOCATION_HELP = "URL for web kinds; empty for files and text"
MODEL_REFRESH_HELP = "Re-ingest this often"


@pytest.fixture
def curator(client, db):
    user = get_user_model().objects.create_superuser("curator", "c@example.com", "pw-123456789")
    client.force_login(user)
    return client


def _post(curator, kind, namespace, **fields):
    data = {
        "namespace": namespace.pk,
        "name": fields.pop("name", f"a {kind}"),
        "enabled": "on",
        "priority": "0",
        "refresh_interval": "",
        "files-TOTAL_FORMS": "0",
        "files-INITIAL_FORMS": "0",
        "runs-TOTAL_FORMS": "0",
        "runs-INITIAL_FORMS": "0",
        **fields,
    }
    return curator.post(f"/admin/kb/source/add/?kind={kind}", data)


@pytest.mark.parametrize(
    "kind, says",
    [
        pytest.param("crawl", "The page the crawl starts from", id="crawl"),
        pytest.param("sitemap", "sitemap.xml", id="sitemap"),
        pytest.param("url", "The page's http(s) address", id="url"),
        pytest.param("llms", "llms.txt file", id="llms"),
    ],
)
def test_a_web_form_explains_its_own_address(curator, kind, says):
    page = curator.get(f"/admin/kb/source/add/?kind={kind}").content.decode()
    assert says in page and MODEL_LOCATION_HELP not in page
    assert "Fetch it again this often" in page and MODEL_REFRESH_HELP not in page


@pytest.mark.parametrize(
    "kind, says",
    [
        pytest.param("file", "Uploaded files change only when you upload again", id="file"),
        pytest.param("text", "The text changes only when you edit it", id="text"),
    ],
)
def test_a_file_or_text_form_says_a_refresh_interval_is_not_needed(curator, kind, says):
    page = curator.get(f"/admin/kb/source/add/?kind={kind}").content.decode()
    assert says in page and MODEL_REFRESH_HELP not in page and MODEL_LOCATION_HELP not in page


def test_a_new_token_is_not_asked_when_it_was_revoked(curator, namespace):
    page = curator.get("/admin/kb/apitoken/add/").content.decode()
    assert 'name="name"' in page and 'name="revoked_at' not in page and "Revoked at" not in page
    token = ApiToken.objects.create(name="t", prefix="p", key_hash="h")
    page = curator.get(f"/admin/kb/apitoken/{token.pk}/change/").content.decode()
    assert 'name="revoked_at' in page and "When the token stopped working" in page


def test_a_regex_include_pattern_is_refused_with_the_glob_it_means(curator, namespace):
    refused = _post(
        curator,
        "crawl",
        namespace,
        location="https://docs.python.org/3/",
        include="^/3/library/.*$\n/3/tutorial/*",
        exclude="/genindex.*",
    )
    page = refused.content.decode()
    assert refused.status_code == 200 and not Source.objects.filter(name="a crawl").exists()
    assert "not regular expressions" in page and "(write &#x27;/3/library/*&#x27;)" in page, page[
        :3000
    ]
    assert "(write &#x27;/genindex*&#x27;)" in page  # the exclude field's own error
    saved = _post(
        curator,
        "crawl",
        namespace,
        location="https://docs.python.org/3/",
        include="/3/library/*\n/3/tutorial/*",
        exclude="/genindex*",
    )
    assert saved.status_code == 302
    options = Source.objects.get(name="a crawl").options
    assert (options["include"], options["exclude"]) == (
        ["/3/library/*", "/3/tutorial/*"],
        ["/genindex*"],
    )


@pytest.mark.parametrize(
    "pattern, hint",
    [
        pytest.param("^/docs/.*$", "write '/docs/*'", id="anchored"),
        pytest.param("/api/v[0-9]+/.*", "one glob per line", id="class"),
        pytest.param("\\/blog\\/", "write '/blog/*'", id="escaped"),
    ],
)
def test_the_api_refuses_a_regex_pattern_too(pattern, hint):
    with pytest.raises(ValidationError) as raised:
        validate_source_options("crawl", {"include": [pattern]})
    assert hint in str(raised.value) and "not regular expressions" in str(raised.value)


@pytest.mark.parametrize("pattern", ["/docs/*", "/wiki/Foo_(bar)", "/docs/?lang=*", "/a+b/*.html"])
def test_a_glob_is_a_glob(pattern):
    validate_source_options("crawl", {"include": [pattern], "exclude": [pattern]})
