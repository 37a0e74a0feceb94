"""Console rules with a test of their own (the walk in test_console_walk.py covers them too,
among everything else): a read-only member runs no action of any admin; another tenant's run's
`progress.json` and `retry/` answer exactly like a missing run's and queue nothing; members
create and delete no namespace; other apps' admins are superusers'. Each has a control that
shows the same request does act where it may."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.test import Client, RequestFactory
from django.urls import reverse
from django_q.models import OrmQ

from kb.admin_access import NamespaceScoped, namespace_of
from kb.models import EvalRun, IngestItem, IngestRun, Namespace
from tests.hostile.console_walk import MISSING_ID, snapshot
from tests.hostile.test_console_walk import _member, tenants  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db


def _every_action():
    """(model, admin, action name) for every action of every scoped admin, as a superuser is
    offered them: read from the registry, so a new action is covered without editing this."""
    found = []
    for model, model_admin in admin.site._registry.items():
        if isinstance(model_admin, NamespaceScoped):
            found += [(model, model_admin, name) for _, name, _ in model_admin._get_base_actions()]
    return found


def _changes():
    rows = snapshot()
    for noisy in ("auth.User",):  # the member's own login
        rows.pop(noisy)
    return rows


def test_the_registry_offers_the_actions_this_test_must_cover():
    names = {name for _, _, name in _every_action()}
    assert {
        "ingest_now",
        "reembed_all",
        "reindex_capabilities",
        "run_now",
        "delete_selected",
    } <= names


def test_a_read_only_member_runs_no_action_of_any_admin(tenants):  # noqa: F811
    ours, _ = tenants
    user, client = _member(ours, can_write=False)
    before, queued, runs, evals = (
        _changes(),
        OrmQ.objects.count(),
        IngestRun.objects.count(),
        EvalRun.objects.count(),
    )
    ran = []
    for model, model_admin, action in _every_action():
        own = [obj.pk for obj in model._default_manager.all() if namespace_of(obj) == ours.slug][:2]
        if not own:
            continue
        changelist = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        response = client.post(
            changelist, {"action": action, "_selected_action": own, "post": "yes"}
        )
        ran.append(f"{model._meta.label}.{action}")
        assert response.status_code in (200, 302, 403), (action, response.status_code)
        request = RequestFactory().get("/")
        request.user = user
        assert action not in model_admin.get_actions(request), (
            f"{action} is offered to a read-only member"
        )
    assert len(ran) >= 5, ran
    assert (OrmQ.objects.count(), IngestRun.objects.count(), EvalRun.objects.count()) == (
        queued,
        runs,
        evals,
    )
    assert _changes() == before


def test_a_writing_member_does_run_them(tenants):  # noqa: F811
    """The control: the same post by a member who may write queues an ingest."""
    ours, _ = tenants
    _, client = _member(ours, can_write=True)
    source = ours.sources.get(name="apple-files")
    runs = IngestRun.objects.filter(source=source).count()
    client.post(
        reverse("admin:kb_source_changelist"),
        {"action": "ingest_now", "_selected_action": [source.pk]},
    )
    assert IngestRun.objects.filter(source=source).count() == runs + 1


def _failed_run(namespace) -> IngestRun:
    return IngestRun.objects.get(
        source__namespace=namespace, items__status=IngestItem.Status.FAILED
    )


def _same(response, missing, foreign_id: int) -> tuple:
    return (
        response.status_code,
        response.content.replace(str(foreign_id).encode(), str(MISSING_ID).encode()),
        response.get("Location"),
    ) == (missing.status_code, missing.content, missing.get("Location"))


@pytest.mark.parametrize(
    "view, method", [("kb_ingestrun_progress", "get"), ("kb_ingestrun_retry", "post")]
)
def test_another_tenants_run_answers_like_a_missing_one_and_queues_nothing(tenants, view, method):  # noqa: F811
    ours, theirs = tenants
    _, client = _member(ours, can_write=True)
    foreign = _failed_run(theirs)
    queued, runs = OrmQ.objects.count(), IngestRun.objects.count()
    call = getattr(client, method)
    missing = call(reverse(f"admin:{view}", args=[MISSING_ID]))
    response = call(reverse(f"admin:{view}", args=[foreign.pk]))
    assert missing.status_code == 404
    assert _same(response, missing, foreign.pk), (response.status_code, response.content[:300])
    assert (OrmQ.objects.count(), IngestRun.objects.count()) == (queued, runs)


def test_the_members_own_run_answers_both(tenants):  # noqa: F811
    """The control: on the member's own failed run, progress answers and retry queues a run."""
    ours, _ = tenants
    _, client = _member(ours, can_write=True)
    own = _failed_run(ours)
    progress = client.get(reverse("admin:kb_ingestrun_progress", args=[own.pk]))
    assert progress.status_code == 200 and progress.json()["id"] == own.pk
    runs = IngestRun.objects.count()
    assert client.post(reverse("admin:kb_ingestrun_retry", args=[own.pk])).status_code == 302
    assert (
        IngestRun.objects.filter(retry_of=own).count() == 1
        and IngestRun.objects.count() == runs + 1
    )


def test_a_member_creates_and_deletes_no_namespace(tenants):  # noqa: F811
    ours, _ = tenants
    _, client = _member(ours, can_write=True)
    namespaces = set(Namespace.objects.values_list("slug", flat=True))
    assert client.get(reverse("admin:kb_namespace_add")).status_code == 403
    client.post(reverse("admin:kb_namespace_add"), {"slug": "tenant:new", "title": "new"})
    client.post(reverse("admin:kb_namespace_delete", args=[ours.pk]), {"post": "yes"})
    client.post(
        reverse("admin:kb_namespace_changelist"),
        {"action": "delete_selected", "_selected_action": [ours.pk], "post": "yes"},
    )
    assert set(Namespace.objects.values_list("slug", flat=True)) == namespaces


def test_every_admin_of_another_app_is_a_superusers(tenants):  # noqa: F811
    """Read from the registry: every admin that is not namespace-scoped (users, groups, django-q's,
    and any added later) refuses a member and opens for a superuser (the control)."""
    ours, _ = tenants
    _, member = _member(ours, can_write=True)
    superuser = Client()
    superuser.force_login(get_user_model().objects.create_superuser("root", password="pw"))
    others = [
        model
        for model, model_admin in admin.site._registry.items()
        if not isinstance(model_admin, NamespaceScoped)
    ]
    assert len(others) >= 3, others
    for model in others:
        changelist = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        assert member.get(changelist).status_code == 403, changelist
        assert superuser.get(changelist).status_code == 200, changelist
