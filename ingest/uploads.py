"""Files into a file source: single files, many files, or one .zip, from the admin or the API.

Each file becomes a `SourceFile` whose storage key lives under the source's own prefix
(`sources/<source id>/...`), so no caller can point a source at bytes uploaded for another one.
A .zip is unpacked here, member by member, with its limits checked before a byte is written:
at most KB_ARCHIVE_MAX_FILES members and KB_ARCHIVE_MAX_BYTES unpacked in all (sizes are read
from the directory and then enforced while reading, so a lying header stops at the cap too),
no absolute paths, `..` segments or links, and no archives inside the archive. Members of a type
that is not read are skipped and reported. Uploading the same bytes under the same path again
changes nothing; the next ingest sees the same hash and costs no extraction.
"""

from __future__ import annotations

import hashlib
import io
import stat
import zipfile
from dataclasses import dataclass, field
from posixpath import normpath
from typing import BinaryIO, Iterable

from django.core.files.base import ContentFile
from django.core.exceptions import SuspiciousFileOperation
from django.core.files.storage import default_storage
from django.db import transaction

from ingest.errors import ArchiveRejected, ContentTooLarge, FileKeyInvalid, FileMissing, UnsupportedType
from ingest.filetypes import ARCHIVE_SUFFIXES, max_bytes_for, media_type_for
from kb.conf import kb_settings
from kb.models import Source, SourceFile

@dataclass
class UploadReport:
    added: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)  # {"path", "code", "message"}

    def skip(self, path: str, code: str, message: str) -> None:
        self.skipped.append({"path": path, "code": code, "message": message})

    def as_dict(self) -> dict:
        return {"added": self.added, "replaced": self.replaced, "unchanged": self.unchanged,
                "skipped": self.skipped}


def add_files(source: Source, uploads: Iterable[tuple[str, BinaryIO]]) -> UploadReport:
    """Store each (name, file object); a .zip is unpacked into its members."""
    report = UploadReport()
    for name, handle in uploads:
        name = safe_member_path(name.replace("\\", "/").rsplit("/", 1)[-1]) or "upload"
        if name.lower().endswith(ARCHIVE_SUFFIXES):
            _add_archive(source, handle, report)
        else:
            data = _read_capped(handle, _limit_for(name), name)
            _store(source, name, data, report)
    return report


def _limit_for(name: str) -> int:
    conf = kb_settings()
    return max_bytes_for(media_type_for(name), text_limit=conf.fetch_max_bytes,
                         document_limit=conf.document_max_bytes)


def _read_capped(handle: BinaryIO, limit: int, name: str) -> bytes:
    data = handle.read(limit + 1)
    if len(data) > limit:
        raise ContentTooLarge(f"{name!r} is larger than its limit of {limit} bytes.",
                              details={"path": name, "max_bytes": limit})
    return data


def safe_member_path(path: str) -> str:
    """A relative POSIX path without `..`, drive letters or empty segments; "" when unsafe."""
    path = path.replace("\\", "/")
    if path.startswith("/") or (len(path) > 1 and path[1] == ":") or "\x00" in path:
        return ""
    normal = normpath(path)
    if normal in (".", "") or normal.startswith("../") or normal == ".." or "/../" in f"/{normal}/":
        return ""
    return normal[:1024]


def _add_archive(source: Source, handle: BinaryIO, report: UploadReport) -> None:
    conf = kb_settings()
    raw = _read_capped(handle, conf.archive_max_bytes, "archive")
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
    except zipfile.BadZipFile as exc:
        raise ArchiveRejected(f"The upload is not a readable .zip file: {exc}") from exc
    with archive:
        members = [info for info in archive.infolist() if not info.is_dir()]
        if len(members) > conf.archive_max_files:
            raise ArchiveRejected(f"The archive holds {len(members)} files; the limit (KB_ARCHIVE_MAX_FILES) "
                                  f"is {conf.archive_max_files}.")
        declared = sum(info.file_size for info in members)
        if declared > conf.archive_max_bytes:
            raise ArchiveRejected(f"The archive unpacks to {declared} bytes; the limit (KB_ARCHIVE_MAX_BYTES) "
                                  f"is {conf.archive_max_bytes}.")
        unpacked = 0
        for info in members:
            path = safe_member_path(info.filename)
            if not path:
                report.skip(info.filename, ArchiveRejected.code, "unsafe path (absolute, or with '..')")
                continue
            if stat.S_ISLNK(info.external_attr >> 16):
                report.skip(path, ArchiveRejected.code, "a link")
                continue
            if path.lower().endswith(ARCHIVE_SUFFIXES + (".tar", ".gz", ".tgz", ".7z", ".rar")):
                report.skip(path, ArchiveRejected.code, "archives inside the archive are not unpacked")
                continue
            if not media_type_for(path):
                report.skip(path, UnsupportedType.code, "not a type that is read")
                continue
            limit = min(_limit_for(path), conf.archive_max_bytes - unpacked)
            if info.flag_bits & 0x1:
                report.skip(path, ArchiveRejected.code, "encrypted member")
                continue
            with archive.open(info) as member:
                data = member.read(limit + 1)
            if len(data) > limit:
                report.skip(path, ContentTooLarge.code, f"larger than its limit of {limit} bytes")
                continue
            unpacked += len(data)
            _store(source, path, data, report)


def _store(source: Source, path: str, data: bytes, report: UploadReport) -> None:
    if not media_type_for(path):
        report.skip(path, UnsupportedType.code, "not a type that is read")
        return
    digest = hashlib.sha256(data).hexdigest()
    existing = SourceFile.objects.filter(source=source, path=path).first()
    if existing is not None and existing.sha256 == digest and default_storage.exists(existing.key):
        report.unchanged.append(path)
        return
    key = default_storage.save(f"sources/{source.pk}/{digest[:16]}/{path.rsplit('/', 1)[-1]}", ContentFile(data))
    with transaction.atomic():
        if existing is not None:
            old_key = existing.key
            existing.key, existing.sha256, existing.byte_size = key, digest, len(data)
            existing.save()
            if old_key != key and old_key.startswith(f"sources/{source.pk}/"):
                default_storage.delete(old_key)
            report.replaced.append(path)
        else:
            SourceFile.objects.create(source=source, path=path, key=key, sha256=digest, byte_size=len(data))
            report.added.append(path)


def source_files(source: Source) -> list[tuple[str, str, str]]:
    """(path, storage key, sha256) of each file, in path order: what the loader reads."""
    return list(SourceFile.objects.filter(source=source).values_list("path", "key", "sha256"))


def open_stored_file(key: str, media_type: str = "") -> tuple[bytes, str]:
    """Read an uploaded file from Django storage, refusing traversal and oversized files."""
    conf = kb_settings()
    max_bytes = max_bytes_for(media_type, text_limit=conf.fetch_max_bytes, document_limit=conf.document_max_bytes)
    try:
        size = default_storage.size(key)
        if size > max_bytes:
            raise ContentTooLarge(f"The file {key!r} is {size} bytes; the limit for its type is {max_bytes}.")
        with default_storage.open(key, "rb") as handle:
            return handle.read(max_bytes + 1), key
    except SuspiciousFileOperation as exc:
        raise FileKeyInvalid(f"The file key {key!r} points outside the upload storage.") from exc
    except FileNotFoundError as exc:
        raise FileMissing(f"The file {key!r} is not in storage.") from exc
