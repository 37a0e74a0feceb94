"""Answers that must not tell another tenant's objects from missing ones: the console's "view on
site" shortcut, a vote on another tenant's logged search, a provider id, and a web source's
address at save time. Each compares the foreign case with the missing one, and has a control
showing the request does work where it may."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.test import Client

from kb.models import Namespace, NamespaceMembership, Source

pytestmark = pytest.mark.django_db

MISSING_ID = 10**9


@pytest.fixture
def tenants():
    return Namespace.objects.create(slug="tenant:ours"), Namespace.objects.create(slug="tenant:theirs")


def _member(namespace: Namespace, *, can_write: bool = True) -> Client:
    user = get_user_model().objects.create_user("member", password="pw", is_staff=True)
    NamespaceMembership.objects.create(user=user, namespace=namespace, can_write=can_write)
    client = Client()
    client.force_login(user)
    return client


def _without(response, path: str) -> str:
    """The page with the path it answers left out."""
    return response.content.decode().replace(path, "<path>")


@pytest.mark.parametrize("debug", [True, False], ids=["debug", "production"])
def test_view_on_site_answers_another_tenants_object_like_a_missing_one(tenants, settings, debug):
    settings.DEBUG = debug
    ours, theirs = tenants
    foreign = Source.objects.create(namespace=theirs, name="theirs", kind="text", text="x")
    client = _member(ours)
    content_type = ContentType.objects.get_for_model(Source).pk
    found_path, missing_path = f"r/{content_type}/{foreign.pk}/", f"r/{content_type}/{MISSING_ID}/"
    found, missing = client.get(f"/admin/{found_path}"), client.get(f"/admin/{missing_path}")
    assert found.status_code == missing.status_code == 404
    assert _without(found, found_path) == _without(missing, missing_path)
    assert b"Not Found" in found.content or b"not found" in found.content.lower()  # a page, not an empty body


def test_view_on_site_refuses_an_unknown_content_type_like_a_missing_object(tenants, settings):
    settings.DEBUG = True
    ours, _ = tenants
    client = _member(ours)
    own = Source.objects.create(namespace=ours, name="ours", kind="text", text="x")
    unknown = client.get(f"/admin/r/{MISSING_ID}/{own.pk}/")
    missing = client.get(f"/admin/r/{ContentType.objects.get_for_model(Source).pk}/{own.pk}/")
    assert unknown.status_code == missing.status_code == 404
    assert b"No page on the site for this object." in unknown.content
