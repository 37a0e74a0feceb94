import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest

from tests.pgserver import TcpPostgres


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test database, with the query-log writer's connection closed before it is
    dropped (the writer outlives the tests that started it, as in a web process)."""
    yield
    from kb.querylog import stop_writer

    with django_db_blocker.unblock():
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
def allow_loopback(settings):
    """Let fetches reach the loopback test server, as an intranet allow-list would."""
    from kb.conf import kb_settings

    settings.KB_FETCH_ALLOWED_PRIVATE = ["127.0.0.0/8:*"]
    kb_settings.cache_clear()
    yield
    kb_settings.cache_clear()
