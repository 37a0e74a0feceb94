"""The console's source pages: one form per kind with options as fields, a URL the SSRF guard
would refuse refused at save with the allow-list entry it needs, "Ingest now" on the source's
page, a new or changed source queued on save (never run in the request), run pages titled by
source and run, a failed run that looks failed, and a crawl's broken link naming its referrer."""

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils import timezone
from django_q.models import OrmQ

from ingest.service import start_ingest
from kb.conf import kb_settings
from kb.models import IngestRun, Source

pytestmark = pytest.mark.django_db


@pytest.fixture
def curator(client, db):
    user = get_user_model().objects.create_superuser("curator", "c@example.com", "pw-123456789")
    client.force_login(user)
    return client


def _fields(page: str) -> set[str]:
    return set(re.findall(r'<(?:input|textarea|select)[^>]*\bname="([a-z_]+)"', page)) - {
        "csrfmiddlewaretoken"
    }


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


def test_adding_a_source_first_asks_its_kind(curator):
    page = curator.get("/admin/kb/source/add/").content.decode()
    assert set(re.findall(r'href="\?kind=(\w+)"', page)) == {
        "url",
        "sitemap",
        "crawl",
        "llms",
        "file",
        "text",
        "folder",
        "git",
    }
    assert "Same-origin crawl" in page and "Pages reached breadth-first" in page


@pytest.mark.parametrize(
    "kind, expected",
    [
        ("url", {"location", "keep_removed"}),
        (
            "sitemap",
            {"location", "max_pages", "include", "exclude", "use_llms_txt", "keep_removed"},
        ),
        (
            "crawl",
            {
                "location",
                "max_depth",
                "max_pages",
                "allowed_domains",
                "include",
                "exclude",
                "use_llms_txt",
                "respect_robots",
                "keep_removed",
            },
        ),
        ("llms", {"location", "max_pages", "include", "exclude", "keep_removed"}),
        ("file", {"files", "keep_removed"}),
        ("text", {"text", "keep_removed"}),
        ("folder", {"location", "include", "exclude", "keep_removed"}),
        ("git", {"location", "branch", "include", "exclude", "token", "web_url", "keep_removed"}),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_each_kind_has_only_its_fields_and_no_json_box(curator, kind, expected):
    page = curator.get(f"/admin/kb/source/add/?kind={kind}").content.decode()
    assert (
        _fields(page)
        == {
            "namespace",
            "name",
            "enabled",
            "priority",
            "refresh_interval",
            "audience_groups",  # who may read its documents (docs/identity.md)
            "_save",
            "_addanother",
            "_continue",
        }
        | expected
    )
    assert 'name="options"' not in page and 'name="indexed_revision"' not in page


def test_a_location_whose_name_does_not_resolve_is_saved_without_a_word(
    curator, namespace, unresolvable
):
    """A name is resolved when fetched, not at save: a save that said whether a name resolves would
    tell internal names from missing ones (tests/hostile/test_oracles.py)."""
    saved = _post(curator, "url", namespace, location="https://no-such-host.invalid/docs")
    assert (
        saved.status_code == 302
        and Source.objects.filter(location="https://no-such-host.invalid/docs").exists()
    )
    shown = [str(m) for m in saved.wsgi_request._messages]
    assert not any("resolve" in m for m in shown), shown


def test_only_a_file_source_shows_a_table_of_files(curator, namespace):
    text = Source.objects.create(namespace=namespace, name="notes", kind="text", text="x")
    files = Source.objects.create(namespace=namespace, name="files", kind="file")
    assert (
        'name="files-TOTAL_FORMS"'
        not in curator.get(f"/admin/kb/source/{text.pk}/change/").content.decode()
    )
    assert (
        'name="files-TOTAL_FORMS"'
        in curator.get(f"/admin/kb/source/{files.pk}/change/").content.decode()
    )
    assert (
        'name="files-TOTAL_FORMS"'
        not in curator.get("/admin/kb/source/add/?kind=crawl").content.decode()
    )


def test_options_are_stored_where_the_api_stores_them_and_checked_at_save(
    curator, namespace, monkeypatch
):
    response = _post(
        curator,
        "crawl",
        namespace,
        location="https://docs.python.org/3/",
        max_depth="3",
        max_pages="",
        include="/3/library/*\n\n/3/tutorial/*",
        exclude="",
        use_llms_txt="on",
        respect_robots="on",
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    source = Source.objects.get(name="a crawl")
    # defaults left unstated (max_pages, use_llms_txt, respect_robots), so they follow the product's
    assert source.kind == "crawl" and source.options == {
        "max_depth": 3,
        "include": ["/3/library/*", "/3/tutorial/*"],
    }
    page = curator.get(f"/admin/kb/source/{source.pk}/change/").content.decode()
    assert "/3/library/*\n/3/tutorial/*</textarea>" in page
    assert (
        "Indexed revision" in page and 'name="indexed_revision"' not in page
    )  # shown, not editable

    too_deep = _post(
        curator,
        "crawl",
        namespace,
        name="deep",
        location="https://docs.python.org/",
        max_depth="11",
    )
    assert too_deep.status_code == 200 and "less than or equal to 10" in too_deep.content.decode()
    assert not Source.objects.filter(name="deep").exists()


def test_a_loopback_url_is_refused_at_save_with_the_entry_it_needs(curator, namespace, no_private):
    response = _post(curator, "crawl", namespace, location="http://127.0.0.1:8042/manual/")
    page = response.content.decode()
    assert response.status_code == 200 and not Source.objects.exists()
    assert "INGEST_FETCH_BLOCKED" in page and "loopback" in page
    assert "add &#x27;127.0.0.1:8042&#x27; to KB_FETCH_ALLOWED_PRIVATE" in page
    assert (
        "add &#x27;[::1]&#x27; to"
        in _post(curator, "url", namespace, location="http://[::1]/").content.decode()
    )
    metadata = _post(
        curator, "url", namespace, location="http://169.254.169.254/latest/"
    ).content.decode()
    assert (
        "never fetched" in metadata and "KB_FETCH_ALLOWED_PRIVATE" not in metadata
    )  # no entry allows it


def test_the_entry_it_names_is_the_one_that_lets_it_through(curator, namespace, settings):
    settings.KB_FETCH_ALLOWED_PRIVATE = ["127.0.0.1:8042"]
    kb_settings.cache_clear()
    try:
        assert (
            _post(curator, "url", namespace, location="http://127.0.0.1:8042/manual/").status_code
            == 302
        )
    finally:
        kb_settings.cache_clear()


def test_a_new_web_source_is_queued_on_save_and_a_changed_one_again(curator, namespace):
    response = _post(curator, "url", namespace, location="https://docs.python.org/3/")
    assert response.status_code == 302
    source = Source.objects.get()
    run = IngestRun.objects.get(source=source)
    assert (
        run.status == "queued" and run.task_id and OrmQ.objects.count() == 1
    )  # the worker's, not the request's
    listing = curator.get(reverse("admin:kb_source_changelist")).content.decode()
    assert '<td class="field-run_status">queued</td>' in listing  # not "-", as if it had never run
    change = reverse("admin:kb_source_change", args=[source.pk])
    data = {
        "namespace": namespace.pk,
        "name": source.name,
        "location": source.location,
        "enabled": "on",
        "priority": "0.5",
        "refresh_interval": "",
        "files-TOTAL_FORMS": "0",
        "files-INITIAL_FORMS": "0",
        "runs-TOTAL_FORMS": "0",
        "runs-INITIAL_FORMS": "0",
    }
    IngestRun.objects.update(status="succeeded", started_at=run.queued_at)
    assert curator.post(change, data).status_code == 302
    assert IngestRun.objects.count() == 1  # the priority is not what it ingests
    Source.objects.filter(pk=source.pk).update(last_run_status="succeeded")
    listing = curator.get(reverse("admin:kb_source_changelist")).content.decode()
    assert (
        '<td class="field-run_status">succeeded</td>' in listing
    )  # with no run live, the last one's
    assert curator.post(change, {**data, "keep_removed": "on"}).status_code == 302
    assert IngestRun.objects.count() == 2 and Source.objects.get().options == {"keep_removed": True}


def test_ingest_now_on_the_source_page(curator, namespace):
    source = Source.objects.create(
        namespace=namespace, name="notes", kind="text", text="# Notes\n\nSome."
    )
    page = curator.get(reverse("admin:kb_source_change", args=[source.pk])).content.decode()
    assert reverse("admin:kb_source_ingest", args=[source.pk]) in page and "Ingest now" in page
    response = curator.post(reverse("admin:kb_source_ingest", args=[source.pk]), follow=True)
    run = IngestRun.objects.get(source=source)
    assert run.status == "queued" and f"run #{run.pk}" in response.content.decode()
    assert curator.get(reverse("admin:kb_source_ingest", args=[source.pk])).status_code == 405


def test_a_run_page_is_titled_by_source_and_run_and_a_failed_run_looks_failed(
    curator, namespace, no_private
):
    source = Source.objects.create(
        namespace=namespace, name="Intranet wiki", kind="url", location="http://127.0.0.1:9/wiki"
    )
    run = start_ingest(source, sync=True)
    assert run.status == "failed"
    page = curator.get(reverse("admin:kb_ingestrun_change", args=[run.pk])).content.decode()
    assert (
        f"<title>Run #{run.pk} of Intranet wiki" in page
        and f"Run #{run.pk} of {source.pk}" not in page
    )
    bar = re.search(r'<progress[^>]*class="run-progress[^"]*"[^>]*>', page).group(0)
    assert "kb-failed" in bar and 'value="0"' in bar  # red and empty, not a full blue bar
    assert 'class="kb-run-error"' in page and "KB_FETCH_ALLOWED_PRIVATE" in page
    listing = curator.get(reverse("admin:kb_ingestrun_changelist")).content.decode()
    assert re.search(r'<progress class="kb-run-progress kb-failed"[^>]*value="0"', listing)
    run.refresh_from_db()
    assert (
        '<td class="field-queued_at '
        f'nowrap">{timezone.localtime(run.queued_at):%Y-%m-%d %H:%M:%S}</td>' in listing
    )
    assert '<td class="field-items">1 failed</td>' in listing
    IngestRun.objects.filter(pk=run.pk).update(finished_at=run.started_at + timedelta(seconds=98))
    listing = curator.get(reverse("admin:kb_ingestrun_changelist")).content.decode()
    assert '<td class="field-took">1 min 38 s</td>' in listing  # to the second, from start to end
    page = curator.get(reverse("admin:kb_ingestrun_change", args=[run.pk])).content.decode()
    assert re.search(r'<div class="readonly">1 min 38 s</div>', page)
    assert (
        f'<div class="readonly">{timezone.localtime(run.started_at):%Y-%m-%d %H:%M:%S}</div>'
        in page
    )
    assert (
        'name="_save"' not in page and 'name="_continue"' not in page
    )  # nothing on it can be edited
    assert (
        f"<h2>Run #{run.pk} of Intranet wiki" not in page
    )  # the heading says it: no subtitle repeating it
    for name in ("heartbeat_at", "attempts", "items_total", "status"):
        assert f'name="{name}"' not in page


def test_a_crawls_broken_link_names_the_pages_that_linked_to_it(namespace, web, allow_loopback):
    web.page(
        "/",
        '<main><h1>Home</h1><p>Start here.</p><a href="/a">a</a> <a href="/gone">gone</a></main>',
    )
    web.page("/a", '<main><h1>A</h1><p>Page a text.</p><a href="/gone">gone again</a></main>')
    source = Source.objects.create(
        namespace=namespace, name="site", kind="crawl", location=web.url("/")
    )
    run = start_ingest(source, sync=True)
    broken = run.items.get(ref=web.url("/gone"))
    assert broken.status == "failed" and broken.error_code == "INGEST_HTTP_STATUS"
    assert broken.error_message.endswith(f"Linked from {web.url('/')}, {web.url('/a')}.")


def test_an_action_on_nothing_it_may_touch_says_nothing_was_queued(admin_client):
    response = admin_client.post(
        "/admin/kb/source/", {"action": "ingest_now", "_selected_action": [10**9]}, follow=True
    )
    messages = [str(m) for m in response.context["messages"]]
    assert messages == ["Nothing was queued: no selected source may be ingested by you."], messages
