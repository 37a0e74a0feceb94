"""A hostile 'parser' for the sandbox tests: run in the parser child instead of the real
parsers (`isolated.CHILD`), it tries what an exploited parser would and reports, as the
document's text, what each attempt got.

`python -m tests.ingest.hostile_parser [no-unshare]`; the document is JSON: `outside`, a path
outside the child's temporary directory to try to write, `port`, a TCP port listening on
127.0.0.1 to try to connect to, and optionally `secrets` (paths the worker can read: another
tenant's original, the data folder, the database's credentials, `$HOME`), `socket` (the
database's Unix socket), `worker` (the worker's pid, whose environment it tries to read) and
`secret_names` (variables it looks for in its own environment). With `no-unshare` the child
first loses the right to `unshare` (a seccomp filter answering EPERM, as a container's profile
does), so the sandbox must go on without its network layer.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import platform
import socket
import stat
import struct
import subprocess
import sys
import tempfile

import ingest.extract
from ingest.extract import isolated, sandbox
from ingest.extract.result import Extracted

UNSHARE = {"x86_64": 272, "aarch64": 97}
PR_GET_NO_NEW_PRIVS = 39


def attempts(
    outside: str,
    port: int,
    secrets: dict[str, str] | None = None,
    database: str = "",
    worker: int = 0,
) -> dict[str, str]:
    results = {}

    def attempt(name, action):
        try:
            action()
            results[name] = "allowed"
        except OSError as exc:
            results[name] = f"refused: {errno.errorcode.get(exc.errno, exc.errno)}"

    attempt("inet socket", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM).close())
    attempt("tcp connect", lambda: socket.create_connection(("127.0.0.1", port), timeout=5).close())
    attempt("udp socket", lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).close())
    attempt("write outside", lambda: open(outside, "w").close())
    attempt("exec", lambda: subprocess.run(["/bin/sh", "-c", "true"], check=True))
    attempt("write own temp", lambda: tempfile.NamedTemporaryFile().close())
    attempt(
        "exec tesseract",
        lambda: subprocess.run(["tesseract", "--version"], capture_output=True, check=True),
    )
    for name, path in (secrets or {}).items():
        attempt(
            f"read {name}",
            lambda path=path: os.listdir(path) if os.path.isdir(path) else open(path).read(),
        )
    if database:
        attempt("database socket", lambda: _connect_unix(database))
    if worker:
        attempt("worker environment", lambda: open(f"/proc/{worker}/environ", "rb").read())
    attempt(
        "shell", lambda: subprocess.run(["/bin/sh", "-c", "id"], check=True, capture_output=True)
    )
    results["inherited sockets"] = str(sum(_is_socket(fd) for fd in range(3, 1024)))
    results["no_new_privs"] = str(ctypes.CDLL(None).prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0))
    return results


def _connect_unix(path: str) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.connect(path)


def _is_socket(fd: int) -> bool:
    try:
        return stat.S_ISSOCK(os.fstat(fd).st_mode)
    except OSError:
        return False


def hostile_extract(body, media_type, **_):
    target = json.loads(body)
    got = attempts(
        target["outside"],
        target["port"],
        target.get("secrets"),
        target.get("socket", ""),
        target.get("worker", 0),
    )
    got["environment"] = sorted(
        name for name in os.environ if name in target.get("secret_names", ())
    )
    return Extracted(title="hostile", content=json.dumps(got), media_type="text/plain")


def forbid_unshare() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    arch, _, _ = sandbox.ARCHES[platform.machine()]
    program = [
        (sandbox.BPF_LD_W_ABS, 0, 0, 4),
        (sandbox.BPF_JEQ_K, 1, 0, arch),
        (sandbox.BPF_RET_K, 0, 0, sandbox.SECCOMP_RET_ALLOW),
        (sandbox.BPF_LD_W_ABS, 0, 0, 0),
        (sandbox.BPF_JEQ_K, 0, 1, UNSHARE[platform.machine()]),
        (sandbox.BPF_RET_K, 0, 0, sandbox.SECCOMP_RET_ERRNO | errno.EPERM),
        (sandbox.BPF_RET_K, 0, 0, sandbox.SECCOMP_RET_ALLOW),
    ]
    filters = ctypes.create_string_buffer(b"".join(struct.pack("=HBBI", *op) for op in program))
    libc.prctl(sandbox.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    if libc.prctl(
        sandbox.PR_SET_SECCOMP,
        sandbox.SECCOMP_MODE_FILTER,
        ctypes.c_char_p(struct.pack("=HxxxxxxQ", len(program), ctypes.addressof(filters))),
        0,
        0,
    ):
        raise OSError(ctypes.get_errno(), "seccomp")


if __name__ == "__main__":
    if "no-unshare" in sys.argv[1:]:
        forbid_unshare()
    ingest.extract.extract = (
        hostile_extract  # what isolated.main() calls once the sandbox is entered
    )
    sys.exit(isolated.main())
