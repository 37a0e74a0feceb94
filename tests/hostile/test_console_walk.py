"""The whole console walked as a member of one namespace while another tenant's objects of every
kind exist: no page, filter, form, action or custom view shows a name or id of the other tenant
or changes anything of it (`tests/hostile/console_walk.py` says how). A read-only member changes
nothing at all. A planted admin that does not scope is caught."""

from __future__ import annotations

import re
import sys
import types

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.files.base import ContentFile
from django.test import Client
from django.urls import path
from django.utils import timezone

from capabilities import service as capability_service
from ingest.uploads import add_files
from kb.admin_access import NamespaceScoped
from kb.auth import issue_token
from kb.models import (
    Document,
    EvalRun,
    EvalSuite,
    FusionCalibration,
    GroupRule,
    IngestItem,
    IngestRun,
    Namespace,
    NamespaceMembership,
    QueryLog,
    Source,
)
from tests.corpus import ingest
from tests.hostile.console_walk import (
    FOREIGN_ID_START,
    LOCAL_ID_START,
    bump_ids,
    cross_references,
    snapshot,
    walk,
)

pytestmark = pytest.mark.django_db


def _tenant(slug: str, word: str) -> Namespace:
    """A namespace holding one object of every kind, each named after `word`."""
    namespace, text_source = ingest(
        slug,
        {f"{word}-doc": (f"{word} title", f"The {word} passage about {word}s.")},
        source_name=f"{word}-text",
    )
    files = Source.objects.create(namespace=namespace, name=f"{word}-files", kind="file")
    add_files(
        files,
        [
            (f"{word}-kept.txt", ContentFile(f"{word} kept".encode())),
            (f"{word}-removed.txt", ContentFile(f"{word} never ingested".encode())),
        ],
    )
    run = IngestRun.objects.create(source=files, status="partial", items_failed=1)
    IngestItem.objects.create(
        run=run, ref=f"{word}-removed.txt", status="failed", error_code="INGEST_CORRUPT"
    )
    capability_service.load_definitions(
        {
            "id": f"{word}-provider",
            "namespace": slug,
            "capabilities": [
                {
                    "name": "cook",
                    "title": f"{word} capability",
                    "knowledge": [
                        {"source": f"{word}-text", "document": f"{word}-doc"},
                        {"source": f"{word}-files"},
                    ],
                }
            ],
        },
        reindex=False,
    )
    suite = EvalSuite.objects.create(
        name=f"{word}-suite",
        namespace=namespace,
        definition={
            "version": 1,
            "cases": [
                {"id": f"{word}-case", "question": word, "expect": {"relevant": [f"{word}-doc"]}}
            ],
        },
    )
    EvalRun.objects.create(
        suite=suite,
        namespace=namespace,
        passed=1,
        total=1,
        results={"cases": [{"id": f"{word}-case", "passed": True, "checks": [], "duration_ms": 1}]},
    )
    QueryLog.objects.create(namespace=namespace, query=f"{word} query")
    FusionCalibration.objects.create(
        namespace=namespace,
        lexical_weight=0.4,
        fitted_on=f"{word} bench",
        queries=3,
        cross_validated_ndcg=0.5,
        default_ndcg=0.4,
        fitted_at=timezone.now(),
    )
    issue_token(f"{word}-token", namespaces=[namespace])
    GroupRule.objects.create(provider="oidc", group=f"{word}-group", namespace=namespace)
    owner = get_user_model().objects.create_user(f"{word}-owner", password="pw", is_staff=True)
    NamespaceMembership.objects.create(user=owner, namespace=namespace, can_write=True)
    assert text_source.pk and Document.objects.filter(namespace=namespace).exists()
    return namespace


@pytest.fixture
def tenants(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    ours = _tenant("tenant:a", "apple")
    bump_ids(FOREIGN_ID_START)
    theirs = _tenant("tenant:b", "zebra")
    bump_ids(LOCAL_ID_START)
    return ours, theirs


def _member(namespace: Namespace, *, can_write: bool):
    user = get_user_model().objects.create_user(
        "walker" + ("-w" if can_write else "-r"), password="pw", is_staff=True
    )
    user.user_permissions.add(
        *Permission.objects.all()
    )  # every model permission: only scoping stands in the way
    NamespaceMembership.objects.create(user=user, namespace=namespace, can_write=can_write)
    client = Client()
    client.force_login(user)
    return user, client


def test_a_writing_member_sees_and_touches_nothing_of_another_tenant(tenants):
    ours, theirs = tenants
    before = snapshot({theirs.slug})
    user, client = _member(ours, can_write=True)
    seen = walk(client, user, admin.site, frozenset({ours.slug}))
    assert seen.violations == []
    assert seen.visited > 200  # the walk reached every admin, not just a login page
    assert seen.autocompleted >= 5  # the autocomplete view answered, not only refused
    assert snapshot({theirs.slug}) == before
    assert cross_references() == []


def test_a_read_only_member_changes_nothing(tenants):
    ours, _ = tenants
    user, client = _member(ours, can_write=False)
    before = snapshot()
    runs = IngestRun.objects.count()
    seen = walk(client, user, admin.site, frozenset({ours.slug}))
    assert seen.violations == []
    assert IngestRun.objects.count() == runs  # no Ingest now, Re-embed or retry
    after = snapshot()
    after.pop("auth.User"), before.pop("auth.User")  # the walker's own login is recorded
    after.pop("django_q.OrmQ", None), before.pop("django_q.OrmQ", None)
    assert after == before


class UnscopedSourceAdmin(admin.ModelAdmin):
    """What a new admin written without the base classes looks like."""

    list_display = ["name", "namespace"]
    list_filter = ["namespace"]


@pytest.fixture
def planted(settings):
    """The console with the Source admin replaced by one that does not scope."""
    from config import urls

    site = admin.AdminSite(name="admin")
    for model, model_admin in admin.site._registry.items():
        site.register(model, type(model_admin))
    site.unregister(Source)
    site.register(Source, UnscopedSourceAdmin)
    module = types.ModuleType("tests_planted_urls")
    module.urlpatterns = [
        path("admin/", site.urls),
        *[p for p in urls.urlpatterns if "admin" not in str(getattr(p, "pattern", ""))],
    ]
    sys.modules[module.__name__] = module
    settings.ROOT_URLCONF = module.__name__
    yield site
    del sys.modules[module.__name__]


def test_the_walk_catches_a_planted_unscoped_admin(tenants, planted):
    ours, _ = tenants
    user, client = _member(ours, can_write=True)
    # the planted admin's pages (the whole walk of the others is the first test's)
    seen = walk(client, user, planted, frozenset({ours.slug}), models={Source})
    assert seen.visited > 5
    assert any("kb_source" in v or "kb/source" in v for v in seen.violations), seen.violations
    assert all("source" in v.lower() for v in seen.violations), seen.violations


def test_a_document_pointing_at_another_tenants_source_opens_none_of_its_files(tenants):
    """A document row of namespace A naming B's file source and the ref of one of B's files
    (a file never ingested, say) serves nothing."""
    ours, theirs = tenants
    their_files = Source.objects.get(namespace=theirs, name="zebra-files")
    planted = Document.objects.create(
        namespace=ours, source=their_files, ref="zebra-removed.txt", title="x"
    )
    _, client = _member(ours, can_write=True)
    response = client.get(f"/documents/{planted.pk}/original")
    assert response.status_code == 404
    assert b"never ingested" not in response.content
    assert (
        client.get("/admin/kb/document/add/").status_code == 403
    )  # documents are the pipeline's to write


def test_the_provider_form_authorises_before_it_looks_anything_up(tenants):
    """Naming another tenant's namespace and its real source answers exactly like naming a
    namespace and source that do not exist."""
    ours, _ = tenants
    _, client = _member(ours, can_write=True)
    answers = []
    for namespace, source in (("tenant:b", "zebra-text"), ("tenant:none", "nothing")):
        definition = (
            '{"namespace": "%s", "capabilities": [{"name": "c", "title": "t", '
            '"knowledge": [{"source": "%s"}]}]}' % (namespace, source)
        )
        page = client.post("/admin/kb/provider/add/", {"slug": "probe", "definition": definition})
        body = page.content.decode()
        answers.append((page.status_code, "KB_FORBIDDEN" in body, "does not exist" in body))
    assert answers[0] == answers[1] == (200, True, False)


@pytest.mark.django_db(transaction=True)
def test_over_real_http_the_member_sees_no_other_tenant(live_server, settings, tmp_path):
    """The same console served by a live server: the session cookie of a member of one
    namespace opens every changelist, and none names the other tenant."""
    from urllib.error import HTTPError
    from urllib.request import Request, urlopen

    settings.MEDIA_ROOT = str(tmp_path / "media")
    ours = _tenant("tenant:a", "apple")
    _tenant("tenant:b", "zebra")
    _, client = _member(ours, can_write=True)
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    signed_in = 0
    for model in admin.site._registry:
        url = f"{live_server.url}/admin/{model._meta.app_label}/{model._meta.model_name}/"
        try:
            with urlopen(Request(url, headers={"Cookie": cookie}), timeout=30) as response:
                body = response.read().decode()
        except HTTPError as refused:  # another app's admin: a superuser's
            assert refused.code == 403, url
            body = refused.read().decode()
        signed_in += (
            "walker-w" in body
        )  # the page greets the member: a real console page, not a login form
        assert "zebra" not in body.lower(), url
    assert signed_in == len(
        [a for a in admin.site._registry.values() if isinstance(a, NamespaceScoped)]
    )


def test_an_eval_suite_name_taken_by_another_tenant_neither_captures_its_cases_nor_shows(tenants):
    """Suite names are unique per namespace: naming a suite after another tenant's (its
    curated "· reader queries" suite, or any other) is accepted, says nothing of theirs, and that
    tenant's readers' questions still go to its own suite."""
    from evaluation.cases import curated_suite_name, make_eval_case

    ours, theirs = tenants
    _, client = _member(ours, can_write=True)
    definition = (
        '{"version": 1, "cases": [{"id": "c", "question": "apple", "expect": '
        '{"relevant": ["apple-doc"]}}]}'
    )
    for name in (
        curated_suite_name(theirs.slug),
        "zebra-suite",
    ):  # their future suite, their existing one
        response = client.post(
            "/admin/kb/evalsuite/add/",
            {
                "name": name,
                "namespace": ours.pk,
                "definition": definition,
                "runs-TOTAL_FORMS": 0,
                "runs-INITIAL_FORMS": 0,
            },
        )
        assert response.status_code == 302, re.findall(
            r"errorlist[^>]*>(.*?)</ul>", response.content.decode(), re.S
        )
    suite, _ = make_eval_case(theirs, "how do zebras sleep", ["zebra-doc"], [])
    assert suite.namespace == theirs
    planted = EvalSuite.objects.get(namespace=ours, name=curated_suite_name(theirs.slug))
    assert [case["id"] for case in planted.definition["cases"]] == [
        "c"
    ]  # their reader's question is not here
