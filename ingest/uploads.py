"""Files into a file source: single files, many files, or one .zip, from the admin or the API.

Storage keys live under the source's own prefix (`sources/<source id>/...`), so no caller can point
a source at bytes uploaded for another. An upload is checked whole, then stored all or nothing. A
.zip is refused (`ArchiveRejected`, 422, with the reason) past KB_ARCHIVE_MAX_FILES entries (read
from its end record before the directory is parsed), past KB_ARCHIVE_MAX_BYTES declared unpacked, or
when any member cannot be read. Member names are normalised: NFC, no absolute paths, `..` segments,
links or archives inside the archive.
"""

from __future__ import annotations

import hashlib
import io
import stat
import unicodedata
import zipfile
import zlib
from dataclasses import dataclass, field
from posixpath import normpath
from typing import BinaryIO, Iterable

from django.core.exceptions import SuspiciousFileOperation
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction

from ingest.errors import (
    ArchiveRejected,
    ContentTooLarge,
    EmptyContent,
    FileKeyInvalid,
    FileMissing,
    UnsupportedType,
)
from ingest.filetypes import ARCHIVE_SUFFIXES, max_bytes_for, media_type_for, types_read
from kb.conf import kb_settings
from kb.errors import Conflict, KBError
from kb.models import Source, SourceFile
from kb.revisions import source_revision

MAX_SEGMENT_BYTES = 200  # a stored file name stays under the file system's 255 bytes
MAX_PATH_CHARS = 1024  # SourceFile.path
EOCD_SIGNATURE, EOCD_SIZE = b"PK\x05\x06", 22
ZIP64_LOCATOR_SIGNATURE, ZIP64_EOCD_SIGNATURE = b"PK\x06\x07", b"PK\x06\x06"


@dataclass
class UploadReport:
    added: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)  # {"path", "code", "message"}
    archives: list[dict] = field(
        default_factory=list
    )  # {"name", "files"}: each .zip and how many it gave

    def skip(self, path: str, code: str, message: str) -> None:
        self.skipped.append({"path": path, "code": code, "message": message})

    def as_dict(self) -> dict:
        return {
            "added": self.added,
            "replaced": self.replaced,
            "unchanged": self.unchanged,
            "skipped": self.skipped,
            "archives": self.archives,
        }


@dataclass
class ReadUpload:
    """An upload read and checked whole (`read_upload`), not yet stored: each path once, with its
    bytes."""

    files: list[tuple[str, bytes]]
    report: UploadReport


def add_files(source: Source, uploads: Iterable[tuple[str, BinaryIO]]) -> UploadReport:
    """Store each (name, file object); a .zip is unpacked into its members. Everything is read
    and checked first and stored after, all or nothing: a rejected upload leaves no file behind."""
    return store_upload(source, read_upload(uploads))


def read_upload(uploads: Iterable[tuple[str, BinaryIO]]) -> ReadUpload:
    """Read and check every file of an upload, storing nothing: what a form checks before it
    saves. An empty file is skipped (`INGEST_EMPTY_CONTENT`: there is nothing to read in it, and a
    stored file of that path stays as it was); a refused file (too large, a type that is not read,
    a rejected archive) raises, its name leading the message and in `details["upload"]`, and then
    nothing of the upload is stored. An archive's members are skipped and reported instead."""
    report = UploadReport()
    accepted: list[tuple[str, bytes]] = []
    for name, handle in uploads:
        name = safe_member_path(name.replace("\\", "/").rsplit("/", 1)[-1]) or "upload"
        try:
            if name.lower().endswith(ARCHIVE_SUFFIXES):
                members = _archive_members(handle, report)
                report.archives.append({"name": name, "files": len(members)})
                accepted.extend(members)
            elif not media_type_for(
                name
            ):  # chosen by hand, unlike an archive's strays: refused, not skipped
                raise UnsupportedType(
                    f"{name!r} is not a type that is read. The types read are {types_read()}.",
                    details={"path": name},
                )
            else:
                accepted.append((name, _read_capped(handle, _limit_for(name), name)))
        except KBError as exc:
            raise type(exc)(
                f"{name}: {exc.message} Nothing of this upload was stored.",
                details={**exc.details, "upload": name},
            ) from exc
    kept = []
    for path, data in accepted:
        if data:
            kept.append((path, data))
        else:
            report.skip(path, EmptyContent.code, "the file is empty")
    return ReadUpload(_once_each(kept, report), report)


def store_upload(source: Source, upload: ReadUpload) -> UploadReport:
    """Store an upload `read_upload` read, all or nothing."""
    _store_all(source, upload.files, upload.report)
    return upload.report


def _once_each(files: list[tuple[str, bytes]], report: UploadReport) -> list[tuple[str, bytes]]:
    """Each path once: the same file sent twice in one upload (loose and in a .zip) is one file;
    another file under a path already sent is skipped, not stored over it."""
    first: dict[str, bytes] = {}
    for path, data in files:
        if path not in first:
            first[path] = data
        elif first[path] != data:
            report.skip(path, Conflict.code, "another file of this upload has the same path")
    return list(first.items())


def _limit_for(name: str) -> int:
    conf = kb_settings()
    return max_bytes_for(
        media_type_for(name),
        text_limit=conf.fetch_max_bytes,
        document_limit=conf.document_max_bytes,
    )


def _read_capped(handle: BinaryIO, limit: int, name: str) -> bytes:
    data = handle.read(limit + 1)
    if len(data) > limit:
        raise ContentTooLarge(
            f"{name!r} is larger than its limit of {limit} bytes.",
            details={"path": name, "max_bytes": limit},
        )
    return data


def safe_member_path(path: str) -> str:
    """A relative POSIX path without `..` (anywhere in it), drive letters or empty segments, in
    Unicode NFC, each
    segment at most MAX_SEGMENT_BYTES of UTF-8 (its extension kept), MAX_PATH_CHARS in all; ""
    when unsafe."""
    path = unicodedata.normalize("NFC", path.replace("\\", "/"))
    if path.startswith("/") or (len(path) > 1 and path[1] == ":") or "\x00" in path:
        return ""
    if ".." in path.split(
        "/"
    ):  # `bundle/../evil.txt` too: a name that climbs is skipped, not normalised
        return ""
    normal = normpath(path)
    if normal in (".", "") or normal.startswith("../") or normal == ".." or "/../" in f"/{normal}/":
        return ""
    return "/".join(_shortened(segment) for segment in normal.split("/"))[:MAX_PATH_CHARS]


def _shortened(segment: str) -> str:
    if len(segment.encode("utf-8")) <= MAX_SEGMENT_BYTES:
        return segment
    stem, dot, extension = segment.rpartition(".")
    if not dot or len(extension) > 16:
        stem, extension = segment, ""
    suffix = f"~{hashlib.sha256(segment.encode()).hexdigest()[:8]}" + (
        f".{extension}" if extension else ""
    )
    room = MAX_SEGMENT_BYTES - len(suffix.encode("utf-8"))
    return stem.encode("utf-8")[:room].decode("utf-8", "ignore") + suffix


def declared_member_count(raw: bytes) -> int:
    """The number of entries the archive's end-of-central-directory record (or its zip64 record)
    declares: read before the directory itself is parsed, so a directory of millions of entries
    costs nothing to refuse."""
    tail_start = max(0, len(raw) - EOCD_SIZE - 65535)
    at = raw.rfind(EOCD_SIGNATURE, tail_start)
    if at < 0 or len(raw) - at < EOCD_SIZE:
        raise ArchiveRejected(
            "The upload is not a readable .zip file: it has no end-of-central-directory record."
        )
    total = int.from_bytes(raw[at + 10 : at + 12], "little")
    if total == 0xFFFF and raw[at - 20 : at - 16] == ZIP64_LOCATOR_SIGNATURE:
        offset = int.from_bytes(raw[at - 12 : at - 4], "little")
        if raw[offset : offset + 4] == ZIP64_EOCD_SIGNATURE:
            total = int.from_bytes(raw[offset + 32 : offset + 40], "little")
    return total


def _archive_members(handle: BinaryIO, report: UploadReport) -> list[tuple[str, bytes]]:
    """Every member of the archive that is to be stored, read whole and checked (CRC, size,
    compression): a member that cannot be read rejects the archive."""
    conf = kb_settings()
    raw = _read_capped(handle, conf.archive_max_bytes, "archive")
    declared = declared_member_count(raw)
    if declared > conf.archive_max_files:
        raise ArchiveRejected(
            f"The archive declares {declared} entries; the limit (KB_ARCHIVE_MAX_FILES) "
            f"is {conf.archive_max_files}."
        )
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
    except (zipfile.BadZipFile, UnicodeDecodeError, ValueError, EOFError) as exc:
        raise ArchiveRejected(f"The upload is not a readable .zip file: {exc}") from exc
    with archive:
        members = [info for info in archive.infolist() if not info.is_dir()]
        if len(members) > conf.archive_max_files:
            raise ArchiveRejected(
                f"The archive holds {len(members)} files; the limit (KB_ARCHIVE_MAX_FILES) "
                f"is {conf.archive_max_files}."
            )
        declared_bytes = sum(info.file_size for info in members)
        if declared_bytes > conf.archive_max_bytes:
            raise ArchiveRejected(
                f"The archive unpacks to {declared_bytes} bytes; the limit "
                f"(KB_ARCHIVE_MAX_BYTES) is {conf.archive_max_bytes}."
            )
        accepted, unpacked = [], 0
        for info in members:
            path = _member_path(info, report)
            if not path:
                continue
            limit = min(_limit_for(path), conf.archive_max_bytes - unpacked)
            data = _read_member(archive, info, path, limit)
            if len(data) > limit:
                report.skip(path, ContentTooLarge.code, f"larger than its limit of {limit} bytes")
                continue
            unpacked += len(data)
            accepted.append((path, data))
    return accepted


def _member_path(info: zipfile.ZipInfo, report: UploadReport) -> str:
    """The member's safe path, or "" (and a skip in the report) when it is not to be stored."""
    path = safe_member_path(info.filename)
    if not path:
        report.skip(
            info.filename[:300], ArchiveRejected.code, "unsafe path (absolute, or with '..')"
        )
    elif stat.S_ISLNK(info.external_attr >> 16):
        report.skip(path, ArchiveRejected.code, "a link")
    elif path.lower().endswith(ARCHIVE_SUFFIXES + (".tar", ".gz", ".tgz", ".7z", ".rar")):
        report.skip(path, ArchiveRejected.code, "archives inside the archive are not unpacked")
    elif not media_type_for(path):
        report.skip(path, UnsupportedType.code, "not a type that is read")
    elif info.flag_bits & 0x1:
        report.skip(path, ArchiveRejected.code, "encrypted member")
    else:
        return path
    return ""


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, path: str, limit: int) -> bytes:
    try:
        with archive.open(info) as member:
            return member.read(limit + 1)
    except NotImplementedError as exc:  # Deflate64, LZMA variants zipfile cannot read
        raise ArchiveRejected(
            f"The archive member {path!r} uses a compression that is not read: {exc}",
            details={"path": path},
        ) from exc
    except (
        zipfile.BadZipFile,
        zlib.error,
        EOFError,
        OSError,
        ValueError,
    ) as exc:  # bad CRC, lying size, corrupt
        raise ArchiveRejected(
            f"The archive member {path!r} cannot be read: {exc}", details={"path": path}
        ) from exc


def _store_all(source: Source, files: list[tuple[str, bytes]], report: UploadReport) -> None:
    """Write every file's bytes, then record them all in one transaction; if anything fails,
    the bytes written for this upload are deleted again."""
    written: list[str] = []
    try:
        with transaction.atomic():
            for path, data in files:
                _store(source, path, data, report, written)
    except BaseException:
        for key in written:
            default_storage.delete(key)
        raise


def _store(
    source: Source, path: str, data: bytes, report: UploadReport, written: list[str]
) -> None:
    if not media_type_for(path):
        report.skip(path, UnsupportedType.code, "not a type that is read")
        return
    digest = hashlib.sha256(data).hexdigest()
    existing = SourceFile.objects.filter(source=source, path=path).first()
    if existing is not None and existing.sha256 == digest and default_storage.exists(existing.key):
        report.unchanged.append(path)
        return
    key = default_storage.save(
        f"sources/{source.pk}/{digest[:16]}/{path.rsplit('/', 1)[-1]}", ContentFile(data)
    )
    written.append(key)
    if existing is not None:
        old_key = existing.key
        existing.key, existing.sha256, existing.byte_size = key, digest, len(data)
        existing.save()
        if old_key != key and old_key.startswith(f"sources/{source.pk}/"):
            transaction.on_commit(lambda: default_storage.delete(old_key))
        report.replaced.append(path)
    else:
        SourceFile.objects.create(
            source=source, path=path, key=key, sha256=digest, byte_size=len(data)
        )
        report.added.append(path)


def source_files(source: Source) -> list[tuple[str, str, str]]:
    """(path, storage key, sha256) of each file, in path order: what the loader reads."""
    return list(SourceFile.objects.filter(source=source).values_list("path", "key", "sha256"))


def current_source_revision(source: Source) -> str:
    """What the source's ingest depends on now (kind, address, text, files, options), as a
    revision."""
    files = [(path, sha256) for path, _, sha256 in source_files(source)]
    return source_revision(source.kind, source.location, source.text, files, source.options)


def open_stored_file(key: str, media_type: str = "") -> tuple[bytes, str]:
    """Read an uploaded file from Django storage, refusing traversal and oversized files."""
    conf = kb_settings()
    max_bytes = max_bytes_for(
        media_type, text_limit=conf.fetch_max_bytes, document_limit=conf.document_max_bytes
    )
    try:
        size = default_storage.size(key)
        if size > max_bytes:
            raise ContentTooLarge(
                f"The file {key!r} is {size} bytes; the limit for its type is {max_bytes}."
            )
        with default_storage.open(key, "rb") as handle:
            return handle.read(max_bytes + 1), key
    except SuspiciousFileOperation as exc:
        raise FileKeyInvalid(f"The file key {key!r} points outside the upload storage.") from exc
    except FileNotFoundError as exc:
        raise FileMissing(f"The file {key!r} is not in storage.") from exc
