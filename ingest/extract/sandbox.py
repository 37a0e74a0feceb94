"""The parser child's sandbox: what a parser exploited by a hostile file may still do.

Entered before the untrusted bytes are read, layer by layer:
- `no_new_privs`: nothing it execs gains privileges; the kernel requires it for the two below.
- `network`: new user and network namespaces with a loopback that is down: nothing is reachable.
- `landlock`: reads only of `readable_roots` and its own temporary directory, writes only there (and
  `/dev/null`), exec only of `tesseract` and `ruby`, no TCP bind or connect (ABI 4), no signals or
  abstract sockets outside the child (ABI 6). The data folder, uploads, `$HOME`, `/proc` and `/etc`
  stay unreadable.
- `seccomp`: `socket()` fails with EACCES (a Unix socket reaches a local database), io_uring is
  refused, a syscall of another ABI (x32, i386) kills the child.

Each layer is best effort: one the kernel refuses leaves the others on, and `enter` says per layer
"on" or why not; the worker logs it and /healthz shows it (`parser_sandbox`), so a weaker sandbox is
never silent. Landlock rather than a mount namespace, as it needs no privilege or user namespace.
Stdlib ctypes rather than libseccomp, whose Python module is LGPL.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import glob
import json
import mimetypes
import os
import platform
import shutil
import signal
import site
import struct
import sys
import sysconfig
import time
from importlib.util import find_spec

LAYERS = ("no_new_privs", "network", "landlock", "seccomp")
ON = "on"

PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
CLONE_NEWUSER, CLONE_NEWNET = 0x10000000, 0x40000000
# What a parser reads besides Python and the product's packages; each is skipped where absent.
SYSTEM_READABLE = (
    "/usr/lib",
    "/usr/lib64",
    "/lib",
    "/lib64",
    "/usr/share/tesseract-ocr",
    "/usr/share/fonts",
    "/etc/fonts",
    "/etc/ld.so.cache",
    "/etc/localtime",
    "/usr/share/zoneinfo",
    "/dev/urandom",
    *mimetypes.knownfiles,
)  # Python's mimetypes reads every one of these that exists
OWN_PACKAGES = ("ingest", "kb")
# where Debian (and `gem install`) put Asciidoctor's library, which `ruby` runs for AsciiDoc
ASCIIDOCTOR_LIBRARIES = (
    "/usr/share/rubygems-integration/all/gems/asciidoctor-*/lib",
    "/var/lib/gems/*/gems/asciidoctor-*/lib",
    "/usr/lib/ruby/vendor_ruby",
)
# What a kernel whose Landlock is older than each ABI leaves open: said in the layer's state, so
# /healthz and every document's log show the weaker sandbox.
LANDLOCK_GAPS = (
    (4, "no limit on TCP bind and connect (Landlock ABI 4, Linux 6.7)"),
    (
        6,
        "no limit on signals to the product's processes or their abstract sockets "
        "(Landlock ABI 6, Linux 6.12)",
    ),
)  # the packages the child's code is imported from

# Landlock (include/uapi/linux/landlock.h); its syscall numbers are the same on every architecture.
SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
LANDLOCK_CREATE_RULESET_VERSION, LANDLOCK_RULE_PATH_BENEATH = 1, 1
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FS_READS = FS_READ_FILE | FS_READ_DIR
FS_WRITES_V1 = sum(
    1 << bit for bit in (1, 4, 5, 6, 7, 8, 9, 10, 11, 12)
)  # write, remove and make anything
FS_REFER, FS_TRUNCATE = 1 << 13, 1 << 14  # ABI 2, ABI 3
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6

# seccomp-bpf: per architecture, its AUDIT_ARCH and the syscall numbers the filter looks at.
ARCHES = {
    "x86_64": (0xC000003E, 41, 425),
    "aarch64": (0xC00000B7, 198, 425),
}  # (arch, socket, io_uring_setup)
X32_SYSCALL_BIT = 0x40000000
SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO, SECCOMP_RET_KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000
BPF_LD_W_ABS, BPF_JEQ_K, BPF_JGE_K, BPF_RET_K = 0x20, 0x15, 0x35, 0x06

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(parent: int) -> None:
    """SIGKILL this process when the process that started it (`parent`) dies. The parser child's
    own session keeps it and what it starts (Asciidoctor's ruby) out of the worker's process
    group, so a kill of the worker's group (kb_run restarting it, a stop) does not reach them, and
    they would parse on, up to their CPU limit, for nobody. Linux only."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # it died before the request took effect
        os._exit(1)


def enter(writable: str, layers: tuple[str, ...] = LAYERS) -> dict[str, str]:
    """Enter every layer of `layers` the kernel grants; `writable` is the one directory the child
    may write (and, with `readable_roots`, read). Answers each layer's state ("on", or why not)
    and `ms`, what entering cost."""
    started = time.perf_counter()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    state = {}
    for layer, step in (
        ("no_new_privs", _no_new_privs),
        ("network", _network),
        ("landlock", lambda lib: _landlock(lib, writable)),
        ("seccomp", _seccomp),
    ):
        if layer not in layers:
            continue
        try:
            missing = step(libc)
            state[layer] = f"on, but {missing} ({layer})" if missing else ON
        except OSError as exc:
            state[layer] = f"refused by the kernel: {exc.strerror or exc} ({layer})"
        except Unsupported as exc:
            state[layer] = str(exc)
    state["ms"] = f"{(time.perf_counter() - started) * 1000:.1f}"
    return state


def refused(state: dict[str, str]) -> dict[str, str]:
    """The layers of `state` that are not on, with why."""
    return {layer: state.get(layer, "not entered") for layer in LAYERS if state.get(layer) != ON}


class Unsupported(Exception):
    """This machine has no such layer (an architecture or kernel without it)."""


def _check(result: int) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result


def _no_new_privs(libc) -> None:
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))


def _network(libc) -> None:
    """Own user and network namespaces; as root without user namespaces, a network namespace
    alone."""
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0:
        # The same ids inside, so files keep their owners; setgroups must be denied before gid_map.
        for name, line in (
            ("setgroups", "deny"),
            ("uid_map", f"{uid} {uid} 1"),
            ("gid_map", f"{gid} {gid} 1"),
        ):
            with open(f"/proc/self/{name}", "w") as proc:
                proc.write(line)
        return
    _check(libc.unshare(CLONE_NEWNET))


def _landlock(libc, writable: str) -> str:
    """Enter Landlock; what this kernel's Landlock cannot hold ("" when it holds everything)."""
    abi = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, 0, LANDLOCK_CREATE_RULESET_VERSION)
    if abi < 0:
        raise Unsupported(
            f"Landlock is not available: {os.strerror(ctypes.get_errno())} (landlock)"
        )
    writes = FS_WRITES_V1 | (FS_REFER if abi >= 2 else 0) | (FS_TRUNCATE if abi >= 3 else 0)
    net = NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
    attr = struct.pack("=QQQ", writes | FS_EXECUTE | FS_READS, net, scoped)[
        : 8 if abi < 4 else 16 if abi < 6 else 24
    ]
    ruleset = _check(libc.syscall(SYS_LANDLOCK_CREATE_RULESET, attr, len(attr), 0))
    try:
        _allow(libc, ruleset, writable, writes | FS_READS)
        _allow(
            libc,
            ruleset,
            os.devnull,
            FS_READ_FILE | FS_WRITE_FILE | (FS_TRUNCATE if abi >= 3 else 0),
        )
        for root in readable_roots():
            _allow(libc, ruleset, root, FS_READS if os.path.isdir(root) else FS_READ_FILE)
        for program in _ocr_programs() + _asciidoc_programs():
            _allow(libc, ruleset, program, FS_EXECUTE | FS_READ_FILE)
        _check(libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0))
    finally:
        os.close(ruleset)
    return landlock_gaps(abi)


def landlock_gaps(abi: int) -> str:
    """What Landlock of ABI `abi` cannot hold, in words ("" for none)."""
    return "; ".join(gap for need, gap in LANDLOCK_GAPS if abi < need)


def readable_roots() -> list[str]:
    """What the child may read: Python's own folders (the standard library and site-packages,
    wherever this interpreter keeps them), the product's packages, and `SYSTEM_READABLE`; never
    a folder that holds one of these, so neither the repository root nor `$HOME` as a whole."""
    paths = sysconfig.get_paths()
    roots = [paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")]
    roots += site.getsitepackages() + list(SYSTEM_READABLE)
    for package in OWN_PACKAGES:
        spec = find_spec(package)
        roots += list(spec.submodule_search_locations or []) if spec else []
    roots += _asciidoc_library()
    found = []
    for root in roots:
        real = os.path.realpath(root)
        if os.path.exists(real) and real not in found:
            found.append(real)
    return found


@functools.cache
def asciidoctor_paths() -> tuple[str, str]:
    """(ruby, Asciidoctor's library folder), resolved, or ("", "") when either is missing.
    Cached: the sandbox asks first, before it takes away the listing of these folders."""
    ruby = shutil.which("ruby")
    for pattern in ASCIIDOCTOR_LIBRARIES:
        for library in sorted(glob.glob(pattern), reverse=True):
            if ruby and os.path.isfile(os.path.join(library, "asciidoctor.rb")):
                return os.path.realpath(ruby), os.path.realpath(library)
    return "", ""


def _asciidoc_library() -> list[str]:
    """Asciidoctor's Ruby library, where Debian keeps it outside /usr/lib (rubygems-integration)."""
    _, library = asciidoctor_paths()
    return [library] if library else []


def _allow(libc, ruleset: int, path: str, access: int) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        rule = struct.pack("=Qi", access, fd)
        _check(libc.syscall(SYS_LANDLOCK_ADD_RULE, ruleset, LANDLOCK_RULE_PATH_BENEATH, rule, 0))
    finally:
        os.close(fd)


def _ocr_programs() -> list[str]:
    """Tesseract and the ELF interpreter the kernel loads with it (exec needs both)."""
    found = shutil.which("tesseract")
    if not found:
        return []
    program = os.path.realpath(found)
    interpreter = _elf_interpreter(program)
    return [program] + ([os.path.realpath(interpreter)] if interpreter else [])


def _asciidoc_programs() -> list[str]:
    """Ruby and its ELF interpreter, which run Asciidoctor for AsciiDoc files (`asciidoc.py`)."""
    ruby, _ = asciidoctor_paths()
    interpreter = _elf_interpreter(ruby) if ruby else ""
    return ([ruby] if ruby else []) + ([os.path.realpath(interpreter)] if interpreter else [])


def _elf_interpreter(path: str) -> str:
    """The PT_INTERP of a 64-bit little-endian ELF file ("" for anything else)."""
    with open(path, "rb") as elf:
        header = elf.read(64)
        if header[:6] != b"\x7fELF\x02\x01":
            return ""
        (phoff,) = struct.unpack_from("<Q", header, 32)
        phentsize, phnum = struct.unpack_from("<HH", header, 54)
        for index in range(phnum):
            elf.seek(phoff + index * phentsize)
            kind, _, offset, _, _, size = struct.unpack("<IIQQQQ", elf.read(40))
            if kind == 3:  # PT_INTERP
                elf.seek(offset)
                return elf.read(size).rstrip(b"\0").decode()
    return ""


def _seccomp(libc) -> None:
    machine = platform.machine()
    if machine not in ARCHES:
        raise Unsupported(f"no seccomp filter is written for the {machine} architecture (seccomp)")
    arch, socket_nr, io_uring_setup = ARCHES[machine]
    eacces = SECCOMP_RET_ERRNO | errno.EACCES
    program = [
        (BPF_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
        (BPF_JEQ_K, 1, 0, arch),
        (BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS),
        (BPF_LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
        (BPF_JGE_K, 0, 1, X32_SYSCALL_BIT),
        (BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS),
        (BPF_JEQ_K, 0, 1, io_uring_setup),
        (BPF_RET_K, 0, 0, eacces),
        (BPF_JEQ_K, 0, 1, socket_nr),  # socket() of any family, AF_UNIX included
        (BPF_RET_K, 0, 0, eacces),
        (BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW),
    ]
    filters = ctypes.create_string_buffer(b"".join(struct.pack("=HBBI", *op) for op in program))
    fprog = struct.pack("=HxxxxxxQ", len(program), ctypes.addressof(filters))
    _check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.c_char_p(fprog), 0, 0))


def probe(timeout: float = 30.0) -> dict[str, str]:
    """Enter the sandbox in a throwaway child, as the parser child does, and answer what the
    kernel granted (for /healthz)."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kb-sandbox-probe-") as writable:
        try:
            done = subprocess.run(
                [sys.executable, "-m", "ingest.extract.sandbox", writable],
                capture_output=True,
                timeout=timeout,
                check=True,
            )
            return json.loads(done.stdout)
        except (OSError, subprocess.SubprocessError, ValueError) as exc:
            return {layer: f"the probe failed: {exc}" for layer in LAYERS}


def main() -> int:
    """`python -m ingest.extract.sandbox DIR`: enter the sandbox (DIR writable) and print what
    the kernel granted, as JSON."""
    sys.stdout.write(json.dumps(enter(sys.argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
