"""Git sources: the documentation files of one branch of a repository, through the git CLI.

A run fetches the tip into a bare mirror under KB_GIT_CACHE_DIR (`--depth 1`). A file's blob id is
its version, so an unchanged file is known without reading it; renames are git's own, from
`Source.indexed_commit` to the tip. Nothing is checked out.

Safety (`git_cli.py`): the remote's host passes the SSRF guard and curl is pinned to that address
(`http.curloptResolve`), redirects off; ssh:// and local paths only with KB_GIT_ALLOW_LOCAL. Git
runs without system or user configuration, hooks, submodules, LFS filters or prompts, within
KB_GIT_TIMEOUT and KB_GIT_MAX_BYTES.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from ingest.connectors.base import Entry, ListingConnector, path_selected
from ingest.connectors.forge import check_web_url, forge_citation
from ingest.connectors.formats import as_markdown, source_media_type
from ingest.connectors.git_cli import Git
from ingest.errors import (
    ContentTooLarge,
    GitTokenRefused,
    LocationRefused,
)
from ingest.fetch import FetchPolicy
from ingest.filetypes import max_bytes_for
from ingest.loaders import LoadedItem
from kb.conf import kb_settings

BRANCH_RE = re.compile(r"^(?!-)(?!.*\.\.)[A-Za-z0-9._/-]{1,200}$")
TOKEN_NAME_RE = re.compile(r"^[A-Z0-9_]{1,100}$")


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
    host the operator wrote before it
    (`KB_GIT_TOKEN_<NAME>=git.example.com,git2.example.com=token`):
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
