"""The answer log in the console: each curator sees the answers of its own namespaces, and turns
answers off for a namespace with its switch."""

import pytest
from django.contrib.auth import get_user_model

from kb.models import AnswerLog, Namespace, NamespaceMembership, QueryLog

pytestmark = pytest.mark.django_db


def answer(slug, question):
    namespace, _ = Namespace.objects.get_or_create(slug=slug)
    log = QueryLog.objects.create(namespace=namespace, query=question)
    return AnswerLog.objects.create(
        query_log=log, namespaces=[slug], question=question, answered=True, gate_rule="strong-match"
    )


def curator(client, slug):
    user = get_user_model().objects.create_user(
        "curator", "c@example.org", "pw-curator-123", is_staff=True
    )
    NamespaceMembership.objects.create(
        user=user, namespace=Namespace.objects.get(slug=slug), can_write=True
    )
    client.force_login(user)


def test_a_curator_sees_only_its_namespaces_answers(client):
    own, other = (
        answer("team:own", "how do we deploy"),
        answer("team:other", "what is the payroll secret"),
    )
    curator(client, "team:own")
    listing = client.get("/admin/kb/answerlog/")
    assert listing.status_code == 200
    assert b"how do we deploy" in listing.content and b"payroll" not in listing.content
    assert client.get(f"/admin/kb/answerlog/{own.pk}/change/").status_code == 200
    assert client.get(f"/admin/kb/answerlog/{other.pk}/change/").status_code in (302, 404)


def test_a_curator_turns_answers_off_for_its_namespace(client):
    answer("team:own", "q")
    curator(client, "team:own")
    namespace = Namespace.objects.get(slug="team:own")
    form = client.get(f"/admin/kb/namespace/{namespace.pk}/change/")
    assert b'name="answers"' in form.content
    response = client.post(
        f"/admin/kb/namespace/{namespace.pk}/change/",
        {"title": "Own", "description": "", "language": namespace.language},
    )
    assert response.status_code == 302, response.content[:2000]
    namespace.refresh_from_db()
    assert namespace.answers is False  # an unticked box: off


def test_an_answer_over_several_namespaces_is_seen_only_by_a_curator_of_every_one(client):
    """The answer's log row names its first namespace's search; a curator of that namespace alone
    must not read what the other namespace's documents answered."""
    both = answer("tenant:b", "what does the merger memo say")
    both.namespaces = ["tenant:b", "tenant:a"]
    both.text = "The merger closes in May [1]."
    both.sources = [{"n": 1, "title": "Merger memo", "namespace": "tenant:a"}]
    both.save()
    Namespace.objects.get_or_create(slug="tenant:a")
    curator(client, "tenant:b")
    listing = client.get("/admin/kb/answerlog/")
    assert listing.status_code == 200 and b"merger" not in listing.content
    assert client.get(f"/admin/kb/answerlog/{both.pk}/change/").status_code in (302, 404)
    user = get_user_model().objects.get(username="curator")
    NamespaceMembership.objects.create(user=user, namespace=Namespace.objects.get(slug="tenant:a"))
    assert b"merger" in client.get("/admin/kb/answerlog/").content
    assert client.get(f"/admin/kb/answerlog/{both.pk}/change/").status_code == 200
