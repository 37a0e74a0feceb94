"""Scale-out: gunicorn with two workers and two django-q2 clusters, all on an external PostgreSQL
through DATABASE_URL, ingesting several sources at once: each item processed exactly once, every
document searchable through the web server."""

import json
import sys
import time
import urllib.request

import pytest

from tests.cluster import Cluster
from tests.pgserver import free_port
from tests.webserver import Route

SOURCES, PAGES = 4, 8


def _sitemaps(web):
    for s in range(SOURCES):
        urls = "".join(f"<url><loc>{web.url(f'/s{s}/p{i}')}</loc></url>" for i in range(PAGES))
        web.routes[f"/s{s}/sitemap.xml"] = Route(
            f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'.encode(),
            200,
            {"Content-Type": "application/xml"},
        )
        for i in range(PAGES):
            web.page(
                f"/s{s}/p{i}",
                f"<title>Source {s} page {i}</title><h1>Page {i}</h1>"
                f"<p>Marker word qx{s}x{i}q appears only here.</p>",
            )


def _call(url, token, body=None):
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST" if body is not None else "GET",
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.status, json.loads(response.read())


@pytest.mark.slow
def test_web_and_two_workers_on_external_postgres_process_each_item_once(
    web, tcp_postgres, tmp_path
):
    cluster = Cluster(tcp_postgres.url, KB_WORKERS="1")
    assert cluster.manage("migrate", "--noinput").returncode == 0
    _sitemaps(web)
    token = cluster.shell(
        "from kb.models import ApiToken, Namespace, Source; from kb.auth import issue_token; "
        "ns = Namespace.objects.create(slug='shared'); "
        + "".join(
            f"Source.objects.create(namespace=ns, name='s{s}', kind='sitemap', "
            f"location={web.url(f'/s{s}/sitemap.xml')!r}); "
            for s in range(SOURCES)
        )
        + "print(issue_token('ops', namespaces=[ns], scope=ApiToken.Scope.WRITE, "
        "rate_limit_per_minute=10000)[1])"
    )
    source_ids = [row[0] for row in cluster.sql("SELECT id FROM kb_source ORDER BY id")]

    port = free_port()
    gunicorn = cluster.start_command(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "config.wsgi",
            "--workers",
            "2",
            "--bind",
            f"127.0.0.1:{port}",
        ],
        log=tmp_path / "gunicorn.log",
    )
    for n in (1, 2):
        cluster.start("qcluster", log=tmp_path / f"worker-{n}.log")
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{base}/healthz", timeout=5)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        run_ids = []
        for source_id in source_ids:
            status, run = _call(f"{base}/api/sources/{source_id}/ingest", token, {})
            assert status == 202
            run_ids.append(run["id"])
        cluster.wait_for(
            "SELECT count(*) FROM kb_ingestrun WHERE status IN ('succeeded', 'partial', 'failed')",
            lambda rows: rows[0][0] == SOURCES,
            timeout=240,
        )

        statuses = cluster.sql(
            "SELECT status, items_done, items_changed FROM kb_ingestrun ORDER BY id"
        )
        assert statuses == [("succeeded", PAGES, PAGES)] * SOURCES
        for s in range(SOURCES):
            for i in range(PAGES):
                assert web.hits[f"/s{s}/p{i}"] == 1, (
                    f"/s{s}/p{i} fetched {web.hits[f'/s{s}/p{i}']} times"
                )
        items = cluster.sql("SELECT run_id, ref, count(*) FROM kb_ingestitem GROUP BY run_id, ref")
        assert len(items) == SOURCES * PAGES and {n for _, _, n in items} == {1}
        assert cluster.sql("SELECT count(*) FROM kb_document")[0][0] == SOURCES * PAGES
        # django-q2's monitor records a task after its worker returns, a moment after the run's own
        # status
        cluster.wait_for(
            "SELECT count(*) FROM django_q_task WHERE success",
            lambda rows: rows[0][0] >= SOURCES,
            timeout=60,
        )
        assert (
            cluster.sql("SELECT count(*) FROM django_q_task WHERE success")[0][0] == SOURCES
        )  # once each

        query_ids = []
        for s, i in ((0, 0), (2, 5), (3, 7)):
            status, body = _call(
                f"{base}/api/search?query=qx{s}x{i}q&namespace=shared&limit=3", token
            )
            assert status == 200 and body["results"][0]["title"] == f"Source {s} page {i}", body[
                "results"
            ][:1]
            query_ids.append(body["query_id"])
        # searches logged after their responses, by both workers: a graceful stop writes every row
        for n in range(40):
            query_ids.append(
                _call(f"{base}/api/search?query=marker+word+{n}&namespace=shared", token)[1][
                    "query_id"
                ]
            )
        cluster.stop(gunicorn)
        logged = cluster.sql("SELECT id FROM kb_querylog WHERE id = ANY(%s)", (query_ids,))
        assert len(set(query_ids)) == 43 and len(logged) == 43
    finally:
        cluster.stop_all()
