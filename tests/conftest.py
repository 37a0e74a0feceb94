import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest

from tests.pgserver import TcpPostgres

pytest_plugins = ["tests.corpus"]  # the `corpus` fixture


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test database, with the query-log writer's connection closed before it is
    dropped (the writer outlives the tests that started it, as in a web process)."""
    yield
    from kb.querylog import stop_writer

    with django_db_blocker.unblock():
        stop_writer()


@pytest.fixture(autouse=True)
def _query_log_written_before_flush(request):
    """A test whose database is emptied by TRUNCATE afterwards (a live server's, a transactional
    one's) writes the searches it queued first: the query-log writer thread inserting them while
    TRUNCATE takes its locks is a deadlock, which fails the teardown."""
    marker = request.node.get_closest_marker("django_db")
    if not ("live_server" in request.fixturenames or "transactional_db" in request.fixturenames
            or (marker is not None and marker.kwargs.get("transaction"))):
        yield
        return
    request.getfixturevalue("transactional_db")  # set up first, so emptied after this writes
    yield
    from kb.querylog import stop_writer

    stop_writer()


@pytest.fixture
def tcp_postgres(tmp_path):
    """A second, separate PostgreSQL server listening on a TCP port on loopback."""
    server = TcpPostgres(tmp_path / "tcp-pgdata")
    server.start()
    yield server
    server.stop()


@pytest.fixture
def namespace(db):
    from kb.models import Namespace

    return Namespace.objects.create(slug="tenant:test", title="Test")


@pytest.fixture
def web():
    from tests.webserver import WebServer

    with WebServer() as server:
        yield server


@pytest.fixture
def unresolvable(monkeypatch):
    """Names under the reserved `.invalid` domain fail as the system resolver fails them, at once,
    whatever the machine's DNS (an offline one may wait for a timeout instead)."""
    import socket

    lookup = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        if isinstance(host, str) and host.endswith(".invalid"):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return lookup(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.fixture
def no_private(settings):
    """No private address allowed, whatever the environment's KB_FETCH_ALLOWED_PRIVATE."""
    from kb.conf import kb_settings

    settings.KB_FETCH_ALLOWED_PRIVATE = []
    kb_settings.cache_clear()
    yield
    kb_settings.cache_clear()


@pytest.fixture
def allow_loopback(settings):
    """Let fetches reach the loopback test server, as an intranet allow-list would."""
    from kb.conf import kb_settings

    settings.KB_FETCH_ALLOWED_PRIVATE = ["127.0.0.0/8:*"]
    kb_settings.cache_clear()
    yield
    kb_settings.cache_clear()
