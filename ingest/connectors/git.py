"""Git sources: the documentation files of one branch of a repository, through the git CLI.

Each source keeps a bare mirror under KB_GIT_CACHE_DIR. A run fetches the branch's tip into it
(`--depth 1`: the server sends only the objects the mirror lacks), lists the tip's tree
(`git ls-tree`: each file's blob id is its version, so an unchanged file is known without
reading it), reads the changed blobs, takes git's own rename detection between the commit the
last successful run indexed (`Source.indexed_commit`) and the tip, and reports as deleted the
stored files the tip no longer holds.

Safety: the remote's host is resolved and checked by the SSRF guard, and curl is pinned to that
vetted address (`http.curloptResolve`), with redirects off; ssh:// and local paths only where
the operator allows them (KB_GIT_ALLOW_LOCAL). Git runs with no system or user configuration,
no hooks, no submodules, no LFS filters, no prompts, and a time and size budget
(KB_GIT_TIMEOUT, KB_GIT_MAX_BYTES); nothing is checked out, files are read from the object store.
"""

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
from typing import Callable, Iterable
from urllib.parse import quote, urlsplit

from ingest.chunk import ChunkSpec
from ingest.connectors.base import Entry, ListingConnector, path_selected
from ingest.connectors.formats import as_markdown, source_media_type
from ingest.errors import (
    ContentTooLarge,
    GitTokenRefused,
    LocationRefused,
    SourceUnreachable,
    SyncBudgetExceeded,
)
from ingest.fetch import FetchPolicy
from ingest.filetypes import max_bytes_for
from ingest.loaders import LoadedItem
from ingest.markdown_blocks import parse_atx_heading
from ingest.ssrf import AllowRule, Resolver, check_unresolved, resolve_target, system_resolver
from kb.conf import kb_settings
from kb.validators import is_http_pattern

HEAD_REF = "refs/kb/head"
BRANCH_RE = re.compile(r"^(?!-)(?!.*\.\.)[A-Za-z0-9._/-]{1,200}$")
TOKEN_NAME_RE = re.compile(r"^[A-Z0-9_]{1,100}$")
SAFE_CONFIG = (  # every git command: no hooks, no submodules, no LFS, no redirects, no credential helper
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


class GitConnector(ListingConnector):
    kinds = ("git",)

    def listing(self) -> list[Entry]:
        conf = kb_settings()
        branch = (self.spec.option("branch") or "").strip()
        if branch and not BRANCH_RE.match(branch):
            raise LocationRefused(f"{branch!r} is not a branch name this server fetches.")
        check_web_url(self.spec.option("web_url") or "")
        token_name = (self.spec.option("token") or "").strip()
        self.git = Git(
            self.spec.location,
            conf.git_cache_dir,
            timeout=conf.git_timeout,
            max_bytes=conf.git_max_bytes,
            token=token_for(self.spec.location, token_name, conf.git_tokens),
            mirror_key=f"{self.spec.location}\0{branch}\0{token_name}",
        )
        self.head = self.git.fetch(
            branch, allowed=FetchPolicy.from_settings().allowed, allow_local=conf.git_allow_local
        )
        include, exclude = self.spec.option("include"), self.spec.option("exclude")
        self.sizes: dict[str, int] = {}
        entries = []
        for path, blob, size in self.git.tree(self.head):
            if source_media_type(path) and path_selected(path, include, exclude):
                entries.append(Entry(path, path, version=blob))
                self.sizes[path] = size
        self.previous, self.cursor = self.cursor, self.head
        return entries

    def renames(self, entries: dict[str, Entry], vanished: set[str]) -> dict[str, str]:
        """Git's own rename detection (`diff -M`, edited files too) from the indexed commit."""
        if (
            not self.previous
            or self.previous == self.head
            or not self.git.has_commit(self.previous)
        ):
            return {}
        return {
            new: old
            for old, new in self.git.renames(self.previous, self.head)
            if new in entries and old in vanished
        }

    def read(self, entry: Entry) -> bytes:
        conf = kb_settings()
        limit = max_bytes_for(
            source_media_type(entry.path),
            text_limit=conf.fetch_max_bytes,
            document_limit=conf.document_max_bytes,
        )
        if self.sizes.get(entry.path, 0) > limit:
            raise ContentTooLarge(
                f"{entry.path!r} is {self.sizes[entry.path]} bytes; the limit for its type is "
                f"{limit} (KB_FETCH_MAX_BYTES, KB_DOCUMENT_MAX_BYTES)."
            )
        return self.git.blob(entry.version)

    def make_item(self, entry: Entry, body: bytes, version: str) -> LoadedItem:
        item = super().make_item(entry, body, version)
        converted = as_markdown(body, source_media_type(entry.path), entry.path)
        item.body, item.media_type = converted.body, converted.media_type
        item.title_hint = converted.title or item.title_hint
        pattern = (self.spec.option("web_url") or "").strip()
        if pattern:
            item.url, item.anchor_of = forge_citation(
                pattern, self.head, entry.path, body, converted.heading_lines
            )
        return item

    def url_of(self, entry: Entry) -> str:
        pattern = (self.spec.option("web_url") or "").strip()
        return forge_citation(pattern, self.head, entry.path, b"")[0] if pattern else ""


def token_for(location: str, name: str, tokens: dict[str, str]) -> str:
    """The operator's token a source names ("" for none), once `location` is an https URL of a
    host the operator wrote before it (`KB_GIT_TOKEN_<NAME>=git.example.com,git2.example.com=token`):
    any curator may name a token, so it is sent only where the operator said, never in clear."""
    if not name:
        return ""
    if not TOKEN_NAME_RE.match(name) or name not in tokens:
        raise LocationRefused(
            f"No token named {name!r}: the operator sets it as KB_GIT_TOKEN_{name} in the "
            "server's environment.",
            details={"setting": f"KB_GIT_TOKEN_{name}"},
        )
    hosts, _, token = tokens[name].partition("=")
    allowed = {host.strip().lower() for host in hosts.split(",") if host.strip()}
    setting = {"setting": f"KB_GIT_TOKEN_{name}"}
    if not token or not allowed:
        raise GitTokenRefused(
            f"The token {name!r} names no host: the operator writes KB_GIT_TOKEN_{name} as "
            "'<host>=<token>' (e.g. 'git.example.com=…'), and it is sent to that host only.",
            details=setting,
        )
    parts = urlsplit(location)
    host = parts.hostname or ""
    if parts.scheme.lower() != "https" or host not in allowed:
        # the hosts are not echoed: a value written without its host would show part of the token
        raise GitTokenRefused(
            f"The token {name!r} is not sent to {location!r}: it goes only over https to the "
            f"host(s) the operator wrote before it in KB_GIT_TOKEN_{name}.",
            details=setting,
        )
    return token


def check_web_url(pattern: str) -> None:
    """Refuse a `web_url` pattern that is not an http(s) URL with a host: it becomes every
    document's citation link, which readers open (a `javascript:` one would run in their page)."""
    pattern = pattern.strip()
    if pattern and not is_http_pattern(pattern):
        raise LocationRefused(
            f"The option web_url {pattern!r} is no http(s) URL: write the forge's address of a "
            "file, e.g. 'https://github.com/psf/requests/blob/{commit}/{path}#L{line}'.",
            details={"option": "web_url"},
        )


def forge_citation(
    pattern: str, commit: str, path: str, source: bytes, heading_lines: dict[str, int] | None = None
) -> tuple[str, Callable[[ChunkSpec], str] | None]:
    """The document's URL on the forge (the pattern up to its `#`) and, when the pattern's fragment
    names {line}, how a passage's anchor is made: the fragment at the passage's line (`passage_line`)."""
    base, _, fragment = pattern.partition("#")
    url = base.replace("{commit}", commit).replace("{path}", quote(path))
    if "{line}" not in fragment:
        return url + (f"#{fragment}" if fragment else ""), None
    lines = source.decode("utf-8", errors="replace").splitlines()
    starts = sorted(set((heading_lines or {}).values()))

    def anchor_of(chunk: ChunkSpec) -> str:
        return fragment.replace(
            "{line}",
            str(passage_line(chunk.body, chunk.anchor, heading_lines or {}, starts, lines)),
        )

    return url, anchor_of


def passage_line(
    passage: str, anchor: str, heading_lines: dict[str, int], starts: list[int], lines: list[str]
) -> int:
    """The line of the source file a passage starts on. Where its reader gave its section's
    heading line (`heading_lines`, the parser's own source position): that line for a passage
    that opens with the heading; for one that starts inside the section, the line its first
    words are on within the section's lines, else the heading's. Without a position (a
    notebook), the first words anywhere in the file (`line_of`)."""
    start = heading_lines.get(anchor)
    if start is None:
        return line_of(passage, lines)
    if parse_atx_heading(passage.lstrip("\n").split("\n", 1)[0]):
        return start
    end = next((line for line in starts if line > start), len(lines) + 1)
    found = line_of(passage, lines[start - 1 : end - 1], default=0)
    return start - 1 + found if found else start


def line_of(passage: str, lines: list[str], default: int = 1) -> int:
    """The line of `lines` a passage starts on, by its words: the first line holding the first
    words of the passage's first line of prose (its heading's if it has no other), compared as
    lowercase letters and digits only, so markup written differently (a link, `code`, a field
    list) still matches; `default` when nothing matches (a table, a notebook's output)."""
    candidates = []
    for raw in passage.splitlines():
        text = re.sub(r"\s*\{#[^}]*\}\s*$", "", raw)
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a markdown link reads as its label
        words = _words(text)
        if len(words) >= 2 or (words and len(words[0]) >= 4):
            candidates.append(words)
    normalised = [" ".join(_words(line)) for line in lines]
    for words in candidates[1:] + candidates[:1]:
        probe = " ".join(words[:4])
        for number, line in enumerate(normalised, start=1):
            if probe in line:
                return number
    return default


def _words(text: str) -> list[str]:
    return re.sub(r"[^\w\s]", "", text.lower()).replace("_", "").split()


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
        """(path, blob id, size) of every regular file of the commit's tree (no links, no submodules)."""
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
