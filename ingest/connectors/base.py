"""The connector contract: what every source kind gives the pipeline. No ORM here.

An item has a stable `ref` (its document keeps it) and a version `etag` (a content hash, a git blob
id, an HTTP validator); an unchanged item comes `not_modified`, without bytes, and costs no parse. A
rename carries `renamed_from`, so the document moves instead of being read again. A source that
cannot be reached must raise `SourceUnreachable` (or another `IngestError`) before yielding
anything, so nothing is deleted.
"""

from __future__ import annotations

import hashlib
import logging
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import ClassVar, Iterator

from ingest.errors import IngestInternalError
from ingest.fetch import Fetcher
from ingest.loaders import FileOpener, KnownDocument, LoadedItem, SourceSpec
from ingest.scope import glob_match
from kb.errors import KBError

logger = logging.getLogger(__name__)


class Connector(ABC):
    """One source kind's way of listing, reading and deleting. See the module's docstring."""

    kinds: ClassVar[tuple[str, ...]] = ()
    detects_renames: ClassVar[bool] = (
        False  # a renamed item moves its document (else: removed and added)
    )

    def __init__(
        self,
        spec: SourceSpec,
        *,
        known: dict[str, KnownDocument] | None = None,
        only_refs: set[str] | None = None,
        cursor: str = "",
        fetcher: Fetcher | None = None,
        open_file: FileOpener | None = None,
    ):
        self.spec = spec
        self.fetcher, self.open_file = fetcher, open_file  # what web and file sources read through
        self.known = known or {}
        self.only_refs = only_refs  # a retry: only these refs are read, and nothing is deleted
        self.cursor = (
            cursor  # where the last successful run stopped (git: its commit); updated by items()
        )
        self.discovered = 0  # items found so far, for the run's progress
        self.complete = only_refs is None  # whether items() listed the whole source

    @abstractmethod
    def items(self) -> Iterator[LoadedItem]:
        """Every item of the source (or of `only_refs`), changed ones with their bytes."""

    def deletions(self, stored: set[str], seen: set[str]) -> set[str]:
        """The stored refs the source no longer holds, once `items()` is exhausted: none unless
        the whole source was listed (a crawl cut at its page limit deletes nothing)."""
        return stored - seen if self.complete else set()


@dataclass(frozen=True)
class Entry:
    """One item of a listing: its ref, the path it is read from, its version when known without
    reading it (a git blob id), and a cheap stamp that changes with it (a file's size and mtime)."""

    ref: str
    path: str
    version: str = ""
    stamp: str = ""


class ListingConnector(Connector):
    """A connector that lists its whole source first (`listing`), then reads what changed (`read`).

    An entry whose version (or stamp) is the stored document's comes `not_modified`; a new entry
    whose content is that of a stored document gone from the listing is that document renamed;
    subclasses may name renames themselves (`renames`, git's own rename detection)."""

    detects_renames = True

    @abstractmethod
    def listing(self) -> list[Entry]:
        """The source's entries, in a stable order; raise an IngestError when it cannot be
        reached."""

    @abstractmethod
    def read(self, entry: Entry) -> bytes:
        """The entry's bytes; raise a KBError for this item alone."""

    def renames(self, entries: dict[str, Entry], vanished: set[str]) -> dict[str, str]:
        """New ref -> old ref for entries the source itself knows were renamed (default: none)."""
        return {}

    def url_of(self, entry: Entry) -> str:
        """Where the entry can be seen on the web ("": nowhere; citations open the document
        view)."""
        return ""

    def make_item(self, entry: Entry, body: bytes, version: str) -> LoadedItem:
        """The item of a read entry (subclasses add media type, title, URL)."""
        return LoadedItem(
            ref=entry.ref,
            path=entry.path,
            body=body,
            etag=version,
            last_modified=entry.stamp,
            title_hint=title_from_path(entry.path),
        )

    def items(self) -> Iterator[LoadedItem]:
        entries = {entry.ref: entry for entry in self.listing()}
        if self.only_refs is not None:
            entries = {ref: entry for ref, entry in entries.items() if ref in self.only_refs}
        self.discovered = len(entries)
        self.known = {
            ref: known for ref, known in self.known.items() if known.ref == ref
        }  # not the URL aliases
        vanished = {ref for ref in self.known if ref not in entries}
        renamed = {
            new: old for new, old in self.renames(entries, vanished).items() if old in vanished
        }
        by_version = {}
        for ref in sorted(vanished - set(renamed.values())):
            by_version.setdefault(self.known[ref].etag, ref)
        by_version.pop("", None)
        for entry in entries.values():
            known = self.known.get(entry.ref)
            if known is not None and (
                (entry.version and entry.version == known.etag)
                or (entry.stamp and entry.stamp == known.last_modified)
            ):
                yield LoadedItem(
                    ref=entry.ref,
                    path=entry.path,
                    not_modified=True,
                    etag=known.etag,
                    last_modified=known.last_modified,
                )
                continue
            old = renamed.get(entry.ref, "")
            if (
                not old and known is None and entry.version in by_version
            ):  # moved as it was: no read
                old = by_version.pop(entry.version)
                yield LoadedItem(
                    ref=entry.ref,
                    path=entry.path,
                    not_modified=True,
                    etag=entry.version,
                    last_modified=entry.stamp,
                    renamed_from=old,
                    url=self.url_of(entry),
                )
                continue
            try:
                body = self.read(entry)
                version = entry.version or content_version(body)
                if not old and known is None and version in by_version:
                    old = by_version.pop(version)
                item = self.make_item(entry, body, version)
            except KBError as exc:
                yield LoadedItem(ref=entry.ref, path=entry.path, error=exc)
                continue
            except (
                Exception
            ) as exc:  # a reader's bug fails this item, not the run (the pipeline's own rule)
                logger.exception("unexpected error reading %s", entry.ref)
                error = IngestInternalError(
                    f"{entry.ref!r} could not be read: {type(exc).__name__}: {exc}"
                )
                error.__cause__ = exc
                yield LoadedItem(ref=entry.ref, path=entry.path, error=error)
                continue
            item.renamed_from = old
            yield item


def content_version(body: bytes) -> str:
    """A file's version when the source gives none: the hash of its bytes."""
    return hashlib.sha256(body).hexdigest()


def title_from_path(path: str) -> str:
    return PurePosixPath(path).stem.replace("-", " ").replace("_", " ")


def path_selected(path: str, include: list[str] | None, exclude: list[str] | None) -> bool:
    """Whether a relative path is taken: it matches an include glob (or none are given) and no
    exclude glob. Globs match the whole path (`docs/*.md`, `*/_build/*`)."""
    if include and not any(glob_match(pattern, path) for pattern in include):
        return False
    return not any(glob_match(pattern, path) for pattern in exclude or ())
