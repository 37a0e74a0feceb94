"""Saves that did something other than what they said: an eval suite naming another namespace
than its own is refused (in the same words for another tenant's and a missing one), and an
uploaded file keeps the name it was given, encoded once on the way back."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from kb.models import EvalSuite, Namespace, NamespaceMembership

pytestmark = pytest.mark.django_db


@pytest.fixture
def tenants():
    return Namespace.objects.create(slug="tenant:ours"), Namespace.objects.create(slug="tenant:theirs")


def _member(namespace: Namespace) -> Client:
    user = get_user_model().objects.create_user("member", password="pw", is_staff=True)
    NamespaceMembership.objects.create(user=user, namespace=namespace, can_write=True)
    client = Client()
    client.force_login(user)
    return client


def _save_suite(client: Client, namespace: Namespace, name: str, definition: dict):
    return client.post("/admin/kb/evalsuite/add/", {
        "name": name, "namespace": namespace.pk, "definition": json.dumps(definition),
        "runs-TOTAL_FORMS": 0, "runs-INITIAL_FORMS": 0, "runs-MIN_NUM_FORMS": 0, "runs-MAX_NUM_FORMS": 0})


def _suite(defaults: dict, case: dict | None = None) -> dict:
    return {"version": 1, "defaults": defaults, "cases": [{"id": "c1", "question": "apples?", **(case or {})}]}


def _errors(response) -> str:
    return " ".join(str(error) for error in response.context["adminform"].form.non_field_errors())


@pytest.mark.parametrize("where", ["defaults", "case"])
def test_a_suite_naming_another_tenants_namespace_is_refused_like_an_unknown_one(tenants, where):
    ours, theirs = tenants
    client = _member(ours)

    def naming(slug):
        return _suite({"namespace": slug}) if where == "defaults" else _suite({}, {"namespace": slug})

    foreign = _save_suite(client, ours, "foreign", naming(theirs.slug))
    unknown = _save_suite(client, ours, "unknown", naming("tenant:nowhere"))
    assert foreign.status_code == unknown.status_code == 200  # the form again, with its error
    assert _errors(foreign)
    assert _errors(foreign).replace(theirs.slug, "X") == _errors(unknown).replace("tenant:nowhere", "X")
    assert f"its own namespace ('{ours.slug}') only" in _errors(foreign)
    assert not EvalSuite.objects.exists()


def test_a_suite_naming_its_own_namespace_or_none_is_saved(tenants):
    ours, _ = tenants
    client = _member(ours)
    assert _save_suite(client, ours, "named", _suite({"namespace": ours.slug})).status_code == 302
    assert _save_suite(client, ours, "unnamed", _suite({})).status_code == 302
    assert set(EvalSuite.objects.values_list("name", flat=True)) == {"named", "unnamed"}
