"""The git CLI as a git source uses it (ingest/connectors/git.py): which remotes it may reach
(`check_remote`: the SSRF guard, curl pinned to the vetted address), and one bare mirror per
source, fetched with no system or user configuration, no hooks, submodules, LFS filters or
prompts, within a time and size budget (KB_GIT_TIMEOUT, KB_GIT_MAX_BYTES); files are read from
the object store, nothing is checked out."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterable
from urllib.parse import urlsplit

from ingest.errors import LocationRefused, SourceUnreachable, SyncBudgetExceeded
from ingest.ssrf import AllowRule, Resolver, check_unresolved, resolve_target, system_resolver

HEAD_REF = "refs/kb/head"
# every git command: no hooks, no submodules, no LFS, no redirects, no credential helper
SAFE_CONFIG = (
    "core.hooksPath=/dev/null",
    "submodule.recurse=false",
    "fetch.recurseSubmodules=false",
    "http.followRedirects=false",
    "credential.helper=",
    "core.askPass=",
    "protocol.file.allow=never",
    "protocol.ext.allow=never",
    "filter.lfs.process=",
    "filter.lfs.smudge=",
    "filter.lfs.required=false",
    "core.fsmonitor=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "http.proxy=",
)
MAX_FILES_TO_LIST = 100_000  # a tree larger than this is no documentation tree


def check_remote(
    location: str,
    *,
    allowed: Iterable[AllowRule] = (),
    allow_local: bool = False,
    resolve: bool = False,
    resolver: Resolver = system_resolver,
) -> tuple[str, tuple[str, ...]]:
    """What the worker decides about a repository address: ("http(s)", curl's resolve entries
    `host:port:address`, () before DNS) for a remote, ("local", ()) for an ssh:// URL or a path
    the operator allows; else LocationRefused or the guard's FetchBlocked. `resolve`: ask DNS
    and check the address (the run); without, only what can be told without DNS (a save)."""
    parts = urlsplit(location)
    scheme = parts.scheme.lower()
    if scheme in ("http", "https"):
        if parts.username or parts.password:
            raise LocationRefused(
                "A repository URL must not hold credentials; name a token instead (option "
                "'token', the operator's KB_GIT_TOKEN_<NAME>)."
            )
        if not resolve:
            check_unresolved(location, allowed=allowed)
            return scheme, ()
        target = resolve_target(location, allowed=allowed, resolver=resolver)
        address = f"[{target.address}]" if ":" in target.address else target.address
        # the guard reads `docs.example.` as `docs.example`; curl looks the name up as written, so
        # both spellings are pinned: a pin curl does not match would let it ask DNS itself
        hosts = dict.fromkeys((parts.hostname or "", target.host))
        return scheme, tuple(f"{host}:{target.port}:{address}" for host in hosts if host)
    scp_like = re.match(r"^[\w.-]+@[\w.-]+:", location)  # git@host:group/repo.git
    local = scheme in ("ssh", "file") or (not scheme and location.startswith("/")) or bool(scp_like)
    if local and allow_local:
        return "local", ()
    if local:
        raise LocationRefused(
            f"{location!r} is an ssh or local repository; this server takes https ones only "
            "(the operator allows the others with KB_GIT_ALLOW_LOCAL).",
            details={"setting": "KB_GIT_ALLOW_LOCAL"},
        )
    raise LocationRefused(
        f"{location!r} is no repository address this server reads: give an https URL such as "
        "'https://github.com/psf/requests.git'."
    )


class Git:
    """The git CLI over one bare mirror, run safely (see the module's docstring)."""

    def __init__(
        self,
        location: str,
        cache_dir: Path,
        *,
        timeout: float,
        max_bytes: int,
        token: str = "",
        mirror_key: str = "",
    ):
        self.location, self.timeout, self.max_bytes, self.token = (
            location,
            timeout,
            max_bytes,
            token,
        )
        # one mirror per repository, branch and token: sources that differ in any never share a ref
        # or objects fetched with another's credentials
        key = hashlib.sha256((mirror_key or location).encode()).hexdigest()[:32]
        self.mirror = Path(cache_dir) / key
        self.home = Path(cache_dir) / "home"  # an empty HOME: no ~/.gitconfig, no credentials
        self.protocols = (
            "http:https"  # GIT_ALLOW_PROTOCOL: what git may speak, redirects and helpers included
        )

    def fetch(
        self, branch: str, *, allowed, allow_local: bool, resolver: Resolver = system_resolver
    ) -> str:
        """Fetch the branch's tip (the remote's default branch when "") and return its commit."""
        kind, pins = check_remote(
            self.location, allowed=allowed, allow_local=allow_local, resolve=True, resolver=resolver
        )
        if not (self.mirror / "HEAD").exists():
            shutil.rmtree(self.mirror, ignore_errors=True)
            self.mirror.mkdir(parents=True)
            self._run(["init", "--bare", "--quiet"], check=True)
        extra, secret = [], {}
        for pin in pins:
            extra += ["-c", f"http.curloptResolve={pin}"]
        if kind == "local":
            extra += ["-c", "protocol.file.allow=always"]
            self.protocols = "ssh:file"
        if (
            self.token
        ):  # through the environment: a command line is readable by every user (ps, /proc)
            basic = base64.b64encode(f"x-access-token:{self.token}".encode()).decode()
            secret = {
                "GIT_CONFIG_COUNT": "1",
                "GIT_CONFIG_KEY_0": "http.extraHeader",
                "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
            }
        source = f"refs/heads/{branch}" if branch else "HEAD"
        result = self._run(
            [
                *extra,
                "fetch",
                "--quiet",
                "--no-tags",
                "--no-write-fetch-head",
                "--depth",
                "1",
                "--no-recurse-submodules",
                "--",
                self.location,
                f"+{source}:{HEAD_REF}",
            ],
            budget=True,
            env=secret,
        )
        if _size(self.mirror) > self.max_bytes:  # a fetch quicker than the watch's first look
            shutil.rmtree(self.mirror, ignore_errors=True)
            raise SyncBudgetExceeded(
                f"Fetching {self.location!r} brought more than {self.max_bytes} bytes "
                "(KB_GIT_MAX_BYTES); nothing was removed.",
                details={"location": self.location},
            )
        if result.returncode != 0:
            message = _last_lines(result.stderr)
            if self.token:
                message = message.replace(self.token, "***")
            raise SourceUnreachable(
                f"git could not fetch {branch or 'the default branch'!r} of {self.location!r}: "
                f"{message}; nothing was removed.",
                details={"location": self.location},
            )
        return self._run(
            ["rev-parse", "--verify", f"{HEAD_REF}^{{commit}}"], check=True
        ).stdout.strip()

    def tree(self, commit: str) -> list[tuple[str, str, int]]:
        """(path, blob id, size) of every regular file of the commit's tree (no links, no
        submodules)."""
        out = self._run(
            ["ls-tree", "-r", "-z", "-l", "--full-tree", commit], check=True, text=False
        ).stdout
        files = []
        for record in out.split(b"\0"):
            if not record:
                continue
            meta, _, path = record.partition(b"\t")
            mode, kind, blob, size = meta.split()
            if kind == b"blob" and mode in (b"100644", b"100755"):
                files.append((path.decode("utf-8", errors="replace"), blob.decode(), int(size)))
            if len(files) > MAX_FILES_TO_LIST:
                raise SyncBudgetExceeded(
                    f"The repository holds more than {MAX_FILES_TO_LIST} files; narrow it "
                    "with include patterns."
                )
        return files

    def blob(self, blob: str) -> bytes:
        return self._run(["cat-file", "blob", blob], check=True, text=False).stdout

    def has_commit(self, commit: str) -> bool:
        return self._run(["cat-file", "-e", f"{commit}^{{commit}}"]).returncode == 0

    def renames(self, old: str, new: str) -> list[tuple[str, str]]:
        out = self._run(
            ["diff", "--name-status", "-z", "-M", "--no-ext-diff", "--no-textconv", old, new],
            check=True,
        ).stdout
        fields, pairs = out.split("\0"), []
        index = 0
        while index < len(fields) and fields[index]:
            status = fields[index]
            if status.startswith(("R", "C")):
                if status.startswith("R"):
                    pairs.append((fields[index + 1], fields[index + 2]))
                index += 3
            else:
                index += 2
        return pairs

    def _env(self) -> dict[str, str]:
        self.home.mkdir(parents=True, exist_ok=True)
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "LANG": "C",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_ASKPASS": "/bin/false",
            "SSH_ASKPASS": "/bin/false",
            "GIT_LFS_SKIP_SMUDGE": "1",
            "GIT_ALLOW_PROTOCOL": self.protocols,
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_SSH_COMMAND": "ssh -o BatchMode=yes -o StrictHostKeyChecking=yes",
        }

    def _run(
        self,
        args: list[str],
        *,
        check: bool = False,
        text: bool = True,
        budget: bool = False,
        env: dict[str, str] | None = None,
    ):
        command = [
            "git",
            *[part for pair in SAFE_CONFIG for part in ("-c", pair)],
            "-C",
            str(self.mirror),
            *args,
        ]
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            process = subprocess.Popen(
                command,
                stdout=out,
                stderr=err,
                env={**self._env(), **(env or {})},
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            self._wait(process, budget)
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read(), err.read().decode("utf-8", errors="replace")
        result = subprocess.CompletedProcess(
            command,
            process.returncode,
            stdout.decode("utf-8", errors="replace") if text else stdout,
            stderr,
        )
        if check and result.returncode != 0:
            raise SourceUnreachable(
                f"git {args[0]} failed in the mirror of {self.location!r}: {_last_lines(stderr)}",
                details={"location": self.location},
            )
        return result

    def _wait(self, process: subprocess.Popen, budget: bool) -> None:
        """Wait for git, killing it (and its children: curl, ssh) past the time budget or, for a
        fetch, when the mirror outgrows the size budget."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                process.wait(timeout=0.2)
                return
            except subprocess.TimeoutExpired:
                pass
            over = time.monotonic() > deadline
            large = budget and _size(self.mirror) > self.max_bytes
            if over or large:
                os.killpg(process.pid, 9)
                process.wait()
                if large:  # a partial pack is no use: the next run starts the mirror afresh
                    shutil.rmtree(self.mirror, ignore_errors=True)
                what = (
                    f"more than {self.max_bytes} bytes (KB_GIT_MAX_BYTES)"
                    if large
                    else f"more than {self.timeout:g} s (KB_GIT_TIMEOUT)"
                )
                raise SyncBudgetExceeded(
                    f"Fetching {self.location!r} took {what}; nothing was removed.",
                    details={"location": self.location},
                )


def _size(folder: Path) -> int:
    total = 0
    for directory, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(directory, name)).st_size
            except OSError:
                continue
    return total


def _last_lines(stderr: str) -> str:
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    return " / ".join(lines[-3:])[:500] or "no message"
