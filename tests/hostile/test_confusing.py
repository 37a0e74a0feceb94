"""Saves that did something other than what they said: an eval suite naming another namespace
than its own is refused (in the same words for another tenant's and a missing one), and an
uploaded file keeps the name it was given, encoded once on the way back."""

from __future__ import annotations

import json
from urllib.parse import unquote

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from kb.auth import issue_token
from kb.models import (
    ApiToken,
    Document,
    EvalSuite,
    Namespace,
    NamespaceMembership,
    Source,
    SourceFile,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def tenants():
    return Namespace.objects.create(slug="tenant:ours"), Namespace.objects.create(
        slug="tenant:theirs"
    )


def _member(namespace: Namespace) -> Client:
    user = get_user_model().objects.create_user("member", password="pw", is_staff=True)
    NamespaceMembership.objects.create(user=user, namespace=namespace, can_write=True)
    client = Client()
    client.force_login(user)
    return client


def _save_suite(client: Client, namespace: Namespace, name: str, definition: dict):
    return client.post(
        "/admin/kb/evalsuite/add/",
        {
            "name": name,
            "namespace": namespace.pk,
            "definition": json.dumps(definition),
            "runs-TOTAL_FORMS": 0,
            "runs-INITIAL_FORMS": 0,
            "runs-MIN_NUM_FORMS": 0,
            "runs-MAX_NUM_FORMS": 0,
        },
    )


def _suite(defaults: dict, case: dict | None = None) -> dict:
    return {
        "version": 1,
        "defaults": defaults,
        "cases": [{"id": "c1", "question": "apples?", **(case or {})}],
    }


def _errors(response) -> str:
    return " ".join(str(error) for error in response.context["adminform"].form.non_field_errors())


@pytest.mark.parametrize("where", ["defaults", "case"])
def test_a_suite_naming_another_tenants_namespace_is_refused_like_an_unknown_one(tenants, where):
    ours, theirs = tenants
    client = _member(ours)

    def naming(slug):
        return (
            _suite({"namespace": slug}) if where == "defaults" else _suite({}, {"namespace": slug})
        )

    foreign = _save_suite(client, ours, "foreign", naming(theirs.slug))
    unknown = _save_suite(client, ours, "unknown", naming("tenant:nowhere"))
    assert foreign.status_code == unknown.status_code == 200  # the form again, with its error
    assert _errors(foreign)
    assert _errors(foreign).replace(theirs.slug, "X") == _errors(unknown).replace(
        "tenant:nowhere", "X"
    )
    assert f"its own namespace ('{ours.slug}') only" in _errors(foreign)
    assert not EvalSuite.objects.exists()


def test_a_suite_naming_its_own_namespace_or_none_is_saved(tenants):
    ours, _ = tenants
    client = _member(ours)
    assert _save_suite(client, ours, "named", _suite({"namespace": ours.slug})).status_code == 302
    assert _save_suite(client, ours, "unnamed", _suite({})).status_code == 302
    assert set(EvalSuite.objects.values_list("name", flat=True)) == {"named", "unnamed"}


def _browser_upload(name_as_sent: str, body: bytes, fields: dict[str, str]) -> tuple[bytes, str]:
    """A multipart body as a browser (or curl, or urllib3) sends a form with one file: a quote in
    the file's name escaped as %22, as the HTML standard's form-data encoding says."""
    boundary = "kb-test-boundary"
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"\r\n\r\n{value}\r\n'.encode()
        for key, value in fields.items()
    ]
    parts.append(
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="files"; '
            f'filename="{name_as_sent}"\r\n'
            f"Content-Type: text/plain\r\n\r\n"
        ).encode()
        + body
        + b"\r\n"
    )
    return b"".join(
        parts
    ) + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def _upload_through_the_api(namespace: Namespace, name_as_sent: str) -> Source:
    source = Source.objects.create(namespace=namespace, name="files", kind="file")
    _, token = issue_token("writer", namespaces=[namespace], scope=ApiToken.Scope.WRITE)
    data, content_type = _browser_upload(name_as_sent, b"hello there, a plain text file", {})
    response = Client().post(
        f"/api/sources/{source.pk}/files",
        data=data,
        content_type=content_type,
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 201, response.content
    return source


def _upload_through_the_console(namespace: Namespace, name_as_sent: str) -> Source:
    data, content_type = _browser_upload(
        name_as_sent,
        b"hello there, a plain text file",
        {
            "namespace": str(namespace.pk),
            "name": "files",
            "kind": "file",
            "enabled": "on",
            "priority": "0",
            "refresh_interval": "",
            "files-TOTAL_FORMS": "0",
            "files-INITIAL_FORMS": "0",
            "runs-TOTAL_FORMS": "0",
            "runs-INITIAL_FORMS": "0",
        },
    )
    response = _member(namespace).post(
        "/admin/kb/source/add/?kind=file", data=data, content_type=content_type
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    return Source.objects.get(name="files")


@pytest.mark.parametrize(
    "upload", [_upload_through_the_api, _upload_through_the_console], ids=["api", "console"]
)
@pytest.mark.parametrize(
    "given, sent",
    [
        ('say "hi".txt', "say %22hi%22.txt"),
        ("plain name.txt", "plain name.txt"),
        ("déjà vu.txt", "déjà vu.txt"),
    ],
    ids=["quotes", "plain", "accents"],
)
def test_an_uploaded_name_is_kept_as_given_and_served_encoded_once(
    tenants, settings, tmp_path, upload, given, sent
):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    ours, _ = tenants
    source = upload(ours, sent)
    assert list(SourceFile.objects.filter(source=source).values_list("path", flat=True)) == [given]

    document = Document.objects.create(source=source, namespace=ours, ref=given, title=given)
    reader = Client()
    reader.force_login(get_user_model().objects.create_superuser("root", password="pw"))
    download = reader.get(f"/documents/{document.pk}/original")
    assert download.status_code == 200
    disposition = download["Content-Disposition"]
    assert disposition.startswith("inline; filename*=UTF-8''")
    assert (
        unquote(disposition.split("''", 1)[1], errors="strict") == given
    )  # one decoding gives the name back
