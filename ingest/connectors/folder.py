"""Folder sources: a directory on the server (an operator's mount) under one of KB_FOLDER_ROOTS.

Every run walks the folder without following a symbolic link (a link, to a file or a directory,
is left out: it could lead out of the root), takes the files the upload readers read and the
include/exclude globs select, and compares each file's size and modification time with the
stored document's: an untouched file is not even opened. A touched one is read and hashed; the
same bytes cost no parse. A file whose bytes are those of a vanished file is that file moved.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ingest.connectors.base import Entry, ListingConnector, path_selected
from ingest.connectors.formats import as_markdown, source_media_type
from ingest.errors import ContentTooLarge, FileMissing, LocationRefused, SourceUnreachable
from ingest.filetypes import max_bytes_for
from ingest.loaders import LoadedItem
from kb.conf import kb_settings


def folder_path(location: str, roots: tuple[Path, ...]) -> Path:
    """The folder a source names, resolved, once it is known to lie under an allowed root; else
    LocationRefused (folder sources off, a relative path, a path outside every root)."""
    if not roots:
        raise LocationRefused("Folder sources are off on this server: the operator lists the directories they may "
                              "read in KB_FOLDER_ROOTS.", details={"setting": "KB_FOLDER_ROOTS"})
    if not location or not os.path.isabs(location):
        raise LocationRefused(f"A folder source needs an absolute path on the server, not {location!r}.")
    folder = Path(os.path.realpath(location))
    for root in roots:
        real_root = Path(os.path.realpath(root))
        if folder == real_root or real_root in folder.parents:
            return folder
    raise LocationRefused(f"{location!r} is not under a directory the operator allows (KB_FOLDER_ROOTS: "
                          f"{', '.join(str(r) for r in roots)}).", details={"setting": "KB_FOLDER_ROOTS"})


class FolderConnector(ListingConnector):
    kinds = ("folder",)

    def listing(self) -> list[Entry]:
        conf = kb_settings()
        self.folder = folder_path(self.spec.location, conf.folder_roots)
        if not self.folder.is_dir():
            raise SourceUnreachable(f"The folder {self.spec.location!r} does not exist or is not a directory "
                                    "(is the share mounted?); nothing was removed.")
        include, exclude = self.spec.option("include"), self.spec.option("exclude")
        entries: list[Entry] = []
        try:
            for relative, info in _walk(self.folder):
                if source_media_type(relative) and path_selected(relative, include, exclude):
                    entries.append(Entry(relative, relative, stamp=f"{info.st_size}:{info.st_mtime_ns}"))
                    if len(entries) > conf.archive_max_files:
                        break
        except OSError as exc:
            raise SourceUnreachable(f"The folder {self.spec.location!r} could not be listed: {exc.strerror}; "
                                    "nothing was removed.") from exc
        return sorted(entries, key=lambda e: e.ref)[: conf.archive_max_files]

    def read(self, entry: Entry) -> bytes:
        conf = kb_settings()
        limit = max_bytes_for(source_media_type(entry.path), text_limit=conf.fetch_max_bytes,
                              document_limit=conf.document_max_bytes)
        try:  # O_NOFOLLOW: a file swapped for a link since the walk is not followed
            fd = os.open(self.folder / entry.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError as exc:
            raise FileMissing(f"{entry.path!r} could not be opened: {exc.strerror}.") from exc
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise FileMissing(f"{entry.path!r} is no longer a regular file.")
            body = handle.read(limit + 1)
        if len(body) > limit:
            raise ContentTooLarge(f"{entry.path!r} is larger than {limit} bytes (KB_FETCH_MAX_BYTES, "
                                  "KB_DOCUMENT_MAX_BYTES).")
        return body

    def make_item(self, entry: Entry, body: bytes, version: str) -> LoadedItem:
        item = super().make_item(entry, body, version)
        item.body, item.media_type, title = as_markdown(body, source_media_type(entry.path), entry.path)
        item.title_hint = title or item.title_hint
        return item


def _walk(folder: Path):
    """(relative path, stat) of every regular file under `folder`, symbolic links and hidden
    entries (`.git`, `.DS_Store`) left out."""
    pending = [folder]
    while pending:
        directory = pending.pop()
        with os.scandir(directory) as scan:
            for entry in scan:
                if entry.name.startswith(".") or entry.is_symlink():
                    continue
                if entry.is_dir(follow_symlinks=False):
                    pending.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=False):
                    yield Path(entry.path).relative_to(folder).as_posix(), entry.stat(follow_symlinks=False)
