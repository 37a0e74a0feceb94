"""Folder sources: a directory on the server (an operator's mount) under one of KB_FOLDER_ROOTS.

No symbolic link is followed, in the walk or in a read: each directory on a file's path is opened
with `openat` and O_NOFOLLOW, so a directory swapped for a link since the listing leads nowhere.
Only a regular file with one link is read (a hard link could be another place's file, a FIFO would
block the run). A file whose size and modification time match its document is not opened.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Iterator

from ingest.connectors.base import Entry, ListingConnector, path_selected
from ingest.connectors.formats import as_markdown, source_media_type
from ingest.errors import (
    ContentTooLarge,
    FileMissing,
    FolderEntryRefused,
    LocationRefused,
    SourceUnreachable,
    SyncBudgetExceeded,
)
from ingest.filetypes import max_bytes_for
from ingest.loaders import LoadedItem
from kb.conf import kb_settings


def folder_path(location: str, roots: tuple[Path, ...]) -> Path:
    """The folder a source names, resolved, once it is known to lie under an allowed root; else
    LocationRefused (folder sources off, a relative path, a path outside every root)."""
    if not roots:
        raise LocationRefused(
            "Folder sources are off on this server: the operator lists the directories they may "
            "read in KB_FOLDER_ROOTS.",
            details={"setting": "KB_FOLDER_ROOTS"},
        )
    if not location or not os.path.isabs(location):
        raise LocationRefused(
            f"A folder source needs an absolute path on the server, not {location!r}."
        )
    folder = Path(os.path.realpath(location))
    for root in roots:
        real_root = Path(os.path.realpath(root))
        if folder == real_root or real_root in folder.parents:
            return folder
    raise LocationRefused(
        f"{location!r} is not under a directory the operator allows (KB_FOLDER_ROOTS: "
        f"{', '.join(str(r) for r in roots)}).",
        details={"setting": "KB_FOLDER_ROOTS"},
    )


class FolderConnector(ListingConnector):
    kinds = ("folder",)

    def listing(self) -> list[Entry]:
        conf = kb_settings()
        self.folder = folder_path(self.spec.location, conf.folder_roots)
        if not self.folder.is_dir():
            raise SourceUnreachable(
                f"The folder {self.spec.location!r} does not exist or is not a directory "
                "(is the share mounted?); nothing was removed."
            )
        include, exclude = self.spec.option("include"), self.spec.option("exclude")
        entries: list[Entry] = []
        try:
            for relative, info in _walk(self.folder):
                if source_media_type(relative) and path_selected(relative, include, exclude):
                    entries.append(
                        Entry(relative, relative, stamp=f"{info.st_size}:{info.st_mtime_ns}")
                    )
                    if len(entries) > conf.archive_max_files:
                        break
        except OSError as exc:
            raise SourceUnreachable(
                f"The folder {self.spec.location!r} could not be listed: {exc.strerror}; "
                "nothing was removed."
            ) from exc
        entries.sort(key=lambda e: e.ref)
        self.left_out = entries[conf.archive_max_files :][:1]
        if self.left_out:  # the files not listed are not "deleted"
            self.complete = False
        return entries[: conf.archive_max_files]

    def items(self) -> Iterator[LoadedItem]:
        yield from super().items()
        for (
            entry
        ) in self.left_out:  # the run's report says the listing was cut, on the first file left out
            yield LoadedItem(
                ref=entry.ref,
                path=entry.path,
                error=SyncBudgetExceeded(
                    f"The folder holds more than {kb_settings().archive_max_files} files "
                    "(KB_ARCHIVE_MAX_FILES); "
                    f"{entry.ref!r} and the files after it were not read, and nothing was "
                    "removed. Narrow the source with include patterns, or split it."
                ),
            )

    def read(self, entry: Entry) -> bytes:
        conf = kb_settings()
        limit = max_bytes_for(
            source_media_type(entry.path),
            text_limit=conf.fetch_max_bytes,
            document_limit=conf.document_max_bytes,
        )
        fd = open_beneath(self.folder, entry.path)
        with os.fdopen(fd, "rb") as handle:
            body = handle.read(limit + 1)
        if len(body) > limit:
            raise ContentTooLarge(
                f"{entry.path!r} is larger than {limit} bytes (KB_FETCH_MAX_BYTES, "
                "KB_DOCUMENT_MAX_BYTES)."
            )
        return body

    def make_item(self, entry: Entry, body: bytes, version: str) -> LoadedItem:
        item = super().make_item(entry, body, version)
        converted = as_markdown(body, source_media_type(entry.path), entry.path)
        item.body, item.media_type = converted.body, converted.media_type
        item.title_hint = converted.title or item.title_hint
        return item


DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def open_beneath(folder: Path, relative: str) -> int:
    """A read descriptor of the regular file at `relative` under `folder`, each directory on the
    way opened from its parent without following a link; else FileMissing (gone) or
    FolderEntryRefused (a link on the way, not a regular file, more than one hard link)."""
    names = relative.split("/")
    if any(name in ("", ".", "..") for name in names):
        raise FolderEntryRefused(f"{relative!r} is not a plain path under the folder.")
    fd = os.open(folder, DIRECTORY_FLAGS)
    try:
        for index, name in enumerate(names):
            last = index == len(names) - 1
            try:
                child = os.open(name, FILE_FLAGS if last else DIRECTORY_FLAGS, dir_fd=fd)
            except OSError as exc:
                os.close(fd)
                fd = -1
                where = "/".join(names[: index + 1])
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise FolderEntryRefused(
                        f"{relative!r} was not read: {where!r} is now a symbolic link or not "
                        "a directory (links are never followed)."
                    ) from exc
                raise FileMissing(f"{relative!r} could not be opened: {exc.strerror}.") from exc
            os.close(fd)
            fd = child
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FolderEntryRefused(
                f"{relative!r} is no longer a regular file (a FIFO, device or socket is not read)."
            )
        if (
            info.st_nlink > 1
        ):  # its bytes may be a file outside the folder the share's user could not copy
            raise FolderEntryRefused(
                f"{relative!r} has {info.st_nlink} hard links; a hard-linked file is not read "
                "(copy it into the folder instead)."
            )
        os.set_blocking(fd, True)
        opened, fd = fd, -1
        return opened
    finally:
        if fd >= 0:
            os.close(fd)


def _walk(folder: Path):
    """(relative path, stat) of every regular file under `folder`, symbolic links and hidden
    entries (`.git`, `.DS_Store`) left out; each directory is opened from its parent without
    following a link, so one swapped for a link during the walk is not entered."""
    pending = [("", os.open(folder, DIRECTORY_FLAGS))]
    try:
        while pending:
            prefix, fd = pending.pop()
            try:
                with os.scandir(fd) as scan:
                    for entry in scan:
                        if entry.name.startswith(".") or entry.is_symlink():
                            continue
                        relative = f"{prefix}{entry.name}"
                        if entry.is_dir(follow_symlinks=False):
                            try:
                                pending.append(
                                    (
                                        relative + "/",
                                        os.open(entry.name, DIRECTORY_FLAGS, dir_fd=fd),
                                    )
                                )
                            except OSError as exc:
                                if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
                                    raise
                        elif entry.is_file(follow_symlinks=False):
                            yield relative, entry.stat(follow_symlinks=False)
            finally:
                os.close(fd)
    finally:
        for _, fd in pending:
            os.close(fd)
