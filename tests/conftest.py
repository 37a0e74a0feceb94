import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import shlex
import sys
from pathlib import Path

import pytest

from tests.pgserver import TcpPostgres

# the `corpus` fixture; the model's document embeddings remembered per batch for the session
pytest_plugins = ["tests.corpus", "tests.embedding_memo"]

# What a test needs, read from where it is and what it uses, so a new test is classified without
# being marked by hand. `scripts/test` runs the fast tier, `-m "not slow and not child_process"`:
# every test that needs no extra process, browser or second database; `scripts/test --all` runs
# them all. A test not marked slow that starts a process all the same fails and names it
# (`_watch_processes`); one whose code under test starts a child process of the product is
# marked child_process by hand, since that happens inside the product's code.
SLOW_DIRECTORIES = {"e2e"}  # the product's own processes, driven from outside
SERVER_FIXTURES = {
    "live_server"
}  # a server on a real port (and a committed, transactional database)
BROWSER_FIXTURES = {"browser"}
SECOND_DATABASE_FIXTURES = {"tcp_postgres", "replica_server"}
PROCESS_MODULES = {"subprocess", "multiprocessing"}  # a test that uses them starts a process itself
PROCESS_HELPERS = {
    "tests.cluster",
    "tests.e2e.processes",
    "tests.pgcopy",
}  # modules whose helpers start processes
PROCESS_FUNCTIONS = {
    "run_manage",
    "current_database_url",
    "StreamingReplica",
    "TcpPostgres",
    "chromium",
}
# commands that start processes when a test calls them: kb_bench and kb_site_bench time a fresh
# process's memory (kb_bench also serves MCP on a live server), kb_run starts the web server and worker  # noqa: E501
PROCESS_COMMANDS = {"kb_bench", "kb_site_bench", "kb_run"}
PROCESS_NAMES = PROCESS_MODULES | PROCESS_HELPERS | PROCESS_FUNCTIONS | PROCESS_COMMANDS
# child processes the code under test starts: the parser's child, the sandbox probe, OCR, git. A
# test that starts one is marked `child_process`: CI's parallel pass runs it, the quick
# `scripts/test` leaves it out. The test database's own embedded server is allowed to every test.
CHILD_COMMANDS = {"tesseract", "git"}
CHILD_MODULES = (
    "ingest.extract.",
    "tests.ingest.hostile_parser",
)  # the last: a parser child the test plants


def needs_of(item) -> set[str]:
    """The markers a test's place, fixtures and helpers imply: browser, second_database, and slow
    for both and for every test that starts a server or a process."""
    fixtures = set(getattr(item, "fixturenames", ()))
    helpers = _process_helpers(item)
    needs = set()
    if fixtures & BROWSER_FIXTURES or "chromium" in helpers:
        needs.add("browser")
    if fixtures & SECOND_DATABASE_FIXTURES:
        needs.add("second_database")
    if (
        needs
        or helpers
        or fixtures & SERVER_FIXTURES
        or SLOW_DIRECTORIES & set(Path(item.path).parts)
    ):
        needs.add("slow")
    return needs


def _process_helpers(item) -> set[str]:
    """What starts processes among the names the test, the fixtures it uses (those of tests/) and
    the test helpers they call read: `subprocess` or `multiprocessing`, or a process helper."""
    definitions = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {}).values()
    stack = [getattr(item, "function", None), *(d.func for defs in definitions for d in defs)]
    seen, found = set(), set()
    while stack:
        function = stack.pop()
        if function in seen or not (getattr(function, "__module__", None) or "").startswith(
            "tests."
        ):
            continue
        seen.add(function)
        for name in _names(getattr(function, "__code__", None)):
            value = getattr(function, "__globals__", {}).get(name)
            origin = getattr(value, "__module__", None) or getattr(value, "__name__", "") or ""
            if (
                name in PROCESS_NAMES  # by name too: imported inside the test
                or origin in PROCESS_HELPERS
                or origin.split(".")[0] in PROCESS_MODULES
            ):
                found.add(name)
            elif callable(value) and origin.startswith("tests."):
                stack.append(value)  # a helper of the tests: what it calls counts too
    return found


def _names(code) -> set[str]:
    """The global names a code object and the functions, lambdas and comprehensions in it read,
    and the names of the process-starting commands it calls (`call_command("kb_bench", ...)`)."""
    if code is None:
        return set()
    commands = {c for c in code.co_consts if isinstance(c, str) and c in PROCESS_COMMANDS}
    return (
        set(code.co_names)
        | commands
        | set().union(*(_names(c) for c in code.co_consts if hasattr(c, "co_names")))
    )


def pytest_collection_modifyitems(items):
    for item in items:
        for marker in sorted(needs_of(item) - {m.name for m in item.iter_markers()}):
            item.add_marker(marker)


_WATCHED: list = []  # the fast-tier test running now, watched for processes it starts


def _allowed(argv: list[str], item) -> bool:
    """Whether a test not marked slow may start this process: the test database's own server,
    and a child process of the code under test when the test is marked child_process."""
    child = item.get_closest_marker("child_process") is not None
    if argv and argv[0] == sys.executable and len(argv) > 2 and argv[1] == "-m":
        return child and argv[2].startswith(CHILD_MODULES)
    from django.conf import settings

    primary = settings.DATABASES["default"].get("EMBEDDED_PGDATA")  # the test database's own server
    return bool(argv) and (
        (child and Path(argv[0]).name in CHILD_COMMANDS) or bool(primary and primary in argv)
    )


def _watch_processes(event: str, args: tuple) -> None:
    if not _WATCHED or not event.startswith(
        ("subprocess.Popen", "os.posix_spawn", "os.exec", "os.fork", "os.system")
    ):
        return
    if event == "subprocess.Popen":
        argv = [str(a) for a in (args[1] if isinstance(args[1], (list, tuple)) else [args[1]])]
    elif event in ("os.posix_spawn", "os.exec"):
        argv = [str(a) for a in args[1]]
    else:
        argv = [event, *map(str, args)]
    if not _allowed(argv, _WATCHED[0]):
        _WATCHED[0].user_properties.append(("started", shlex.join(argv)[:300]))


sys.addaudithook(_watch_processes)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if item.get_closest_marker("slow") is None:
        # the health page's sandbox probe, which it keeps for the process, is taken before the
        # first watched test: a test that reads /healthz then starts no process, and one that
        # runs the probe itself is marked child_process like any other
        from config.health import _parser_sandbox_status

        _parser_sandbox_status()
        _WATCHED.append(item)
    try:
        return (yield)
    finally:
        _WATCHED.clear()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    started = [command for key, command in item.user_properties if key == "started"]
    if started and report.when == "teardown" and item.get_closest_marker("slow") is None:
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} is in the fast tier (not marked slow) but started "
            f"{len(started)} process(es), first: {started[0]}\nA test whose code under test "
            "starts the parser child, tesseract or git is marked child_process; for any other "
            "process, use a fixture or helper that implies `slow` (tests/conftest.py), or mark "
            "the test slow."
        )
    return report


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test database, with the query-log writer's connection closed before it is
    dropped (the writer outlives the tests that started it, as in a web process).

    Its commits do not wait for the WAL to reach the disk (`synchronous_commit = off`, for this
    throwaway database only): a commit's visibility and every constraint are the same, and only a
    crash of the test server itself could lose the last ones. 11 % off the wall time of the
    ingest-heavy tests on two workers."""
    from django.db import connection

    with django_db_blocker.unblock():
        with connection.cursor() as cursor:
            cursor.execute(
                f"ALTER DATABASE {connection.ops.quote_name(connection.settings_dict['NAME'])} "
                "SET synchronous_commit = off"
            )
        connection.close()  # the sessions opened from now on take it
    yield
    from retrieval.querylog import stop_writer

    with django_db_blocker.unblock():
        stop_writer()


@pytest.fixture(autouse=True)
def _quick_password_hashes(request):
    """Passwords of the fast tier's users hashed with Django's MD5 hasher, as Django's testing docs
    advise: the default PBKDF2 costs 0.38 CPU-s a hash here, paid for every user made with a
    password and every sign-in. The product's own processes (the slow tier's servers) verify
    passwords with the configured hashers, so slow tests keep them."""
    if request.node.get_closest_marker("slow") is not None:
        yield
        return
    from django.conf import settings
    from django.test import override_settings

    with override_settings(
        PASSWORD_HASHERS=[
            "django.contrib.auth.hashers.MD5PasswordHasher",
            *settings.PASSWORD_HASHERS,
        ]
    ):
        yield


@pytest.fixture(autouse=True)
def _query_log_written_before_flush(request):
    """A test whose database is emptied by TRUNCATE afterwards (a live server's, a transactional
    one's) writes the searches it queued first: the query-log writer thread inserting them while
    TRUNCATE takes its locks is a deadlock, which fails the teardown."""
    marker = request.node.get_closest_marker("django_db")
    if not (
        "live_server" in request.fixturenames
        or "transactional_db" in request.fixturenames
        or (marker is not None and marker.kwargs.get("transaction"))
    ):
        yield
        return
    request.getfixturevalue("transactional_db")  # set up first, so emptied after this writes
    yield
    from retrieval.querylog import stop_writer

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
