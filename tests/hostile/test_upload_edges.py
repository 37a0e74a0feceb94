"""Uploads: authorised before the body is read, refused early when too large, and a .zip is
checked whole (member count from its end record, every member readable) and stored all or
nothing: a rejected archive leaves no row and no file behind and answers 422 with its reason."""

from __future__ import annotations

import io
import struct
import zipfile

import pytest
from django.core.files.uploadhandler import MemoryFileUploadHandler
from django.test import Client

from kb.auth import issue_token
from kb.conf import kb_settings
from kb.models import IngestRun, Namespace, Source, SourceFile

pytestmark = pytest.mark.django_db
BODY_READS = []


class RecordingHandler(MemoryFileUploadHandler):
    """Notes every multipart body that is parsed."""

    def handle_raw_input(self, input_data, META, content_length, boundary, encoding=None):
        BODY_READS.append(content_length)
        return super().handle_raw_input(input_data, META, content_length, boundary, encoding)


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    settings.FILE_UPLOAD_HANDLERS = ["tests.hostile.test_upload_edges.RecordingHandler"]
    BODY_READS.clear()
    kb_settings.cache_clear()
    yield tmp_path
    kb_settings.cache_clear()


@pytest.fixture
def source(media):
    namespace = Namespace.objects.create(slug="tenant:up")
    return Source.objects.create(namespace=namespace, name="files", kind="file")


def _client(source, scope="write"):
    _, secret = issue_token("t", namespaces=[source.namespace], scope=scope)
    return Client(HTTP_AUTHORIZATION=f"Bearer {secret}")


def _upload(client, source_id, name, data):
    return client.post(f"/api/sources/{source_id}/files", {"files": _named(name, data)})


def _named(name, data):
    handle = io.BytesIO(data)
    handle.name = name
    return handle


def _zip(members: dict[str, bytes], method=zipfile.ZIP_STORED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", method) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


def _patch_headers(raw: bytes, local: dict[int, bytes], central: dict[int, bytes]) -> bytes:
    """Overwrite fields of the first member's local header and central directory entry."""
    raw = bytearray(raw)
    for signature, fields in ((b"PK\x03\x04", local), (b"PK\x01\x02", central)):
        at = raw.find(signature)
        for offset, value in fields.items():
            raw[at + offset : at + offset + len(value)] = value
    return bytes(raw)


def _bad_crc() -> bytes:
    raw = bytearray(_zip({"a.md": b"# hello world\n", "b.md": b"# fine\n"}))
    at = raw.find(b"# hello")
    raw[at + 2] ^= 0xFF
    return bytes(raw)


def _lying_size() -> bytes:
    raw = _zip({"a.md": b"# hello world\n", "b.md": b"# fine\n"})
    return _patch_headers(raw, {22: struct.pack("<I", 4)}, {24: struct.pack("<I", 4)})


def _deflate64() -> bytes:
    raw = _zip({"a.md": b"# hello world\n" * 20}, zipfile.ZIP_DEFLATED)
    return _patch_headers(raw, {8: struct.pack("<H", 9)}, {10: struct.pack("<H", 9)})


def _corrupt_deflate() -> bytes:
    raw = bytearray(_zip({"a.md": b"# hello world, compressed\n" * 40}, zipfile.ZIP_DEFLATED))
    start = raw.find(b"a.md") + 4
    raw[start : start + 12] = b"\xff" * 12
    return bytes(raw)


def _invalid_utf8_name() -> bytes:
    raw = _zip({"xx.md": b"# hello\n"}).replace(b"xx.md", b"\xff\xfe.md")
    return _patch_headers(raw, {6: struct.pack("<H", 0x800)}, {8: struct.pack("<H", 0x800)})


@pytest.mark.parametrize(
    "build",
    [_bad_crc, _lying_size, _deflate64, _corrupt_deflate, _invalid_utf8_name],
    ids=["bad-crc", "lying-size", "deflate64", "corrupt-deflate", "invalid-utf8-name"],
)
def test_an_unreadable_archive_is_refused_whole_and_leaves_nothing(source, media, build):
    response = _upload(_client(source), source.pk, "bad.zip", build())
    assert response.status_code == 422, response.content
    assert response.json()["code"] == "INGEST_ARCHIVE_REJECTED" and response.json()["message"]
    assert not SourceFile.objects.filter(source=source).exists()
    assert not IngestRun.objects.filter(source=source).exists()
    assert [p for p in media.rglob("*") if p.is_file()] == []


def test_a_300_character_member_name_is_shortened_and_stored(source):
    name = "n" * 296 + ".md"
    response = _upload(_client(source), source.pk, "long.zip", _zip({name: b"# long name\n"}))
    assert response.status_code == 201, response.content
    stored = SourceFile.objects.get(source=source)
    assert stored.path.endswith(".md") and len(stored.path.encode()) <= 200


def test_the_member_count_is_read_from_the_end_record_before_the_directory(source, settings):
    from ingest.uploads import declared_member_count

    raw = bytearray(_zip({"a.md": b"# a\n"}))
    at = raw.rfind(b"PK\x05\x06")
    raw[at + 8 : at + 12] = struct.pack("<HH", 0xFFFE, 0xFFFE)  # 65,534 entries declared
    assert declared_member_count(bytes(raw)) == 0xFFFE
    response = _upload(_client(source), source.pk, "many.zip", bytes(raw))
    assert response.status_code == 422 and "declares 65534 entries" in response.json()["message"]


def test_nothing_is_read_before_the_caller_is_authorised(source):
    anonymous = _upload(Client(), source.pk, "a.md", b"# a\n" * 1000)
    reader = _upload(_client(source, scope="read"), source.pk, "a.md", b"# a\n" * 1000)
    assert anonymous.status_code in (401, 404) and reader.status_code == 403
    assert BODY_READS == []


def test_a_body_over_the_archive_limit_is_refused_before_it_is_read(source, settings):
    settings.KB_ARCHIVE_MAX_BYTES = 1000
    kb_settings.cache_clear()
    response = _upload(_client(source), source.pk, "big.md", b"x" * (1024 * 1024 + 2000))
    assert response.status_code == 413 and response.json()["code"] == "INGEST_TOO_LARGE"
    assert BODY_READS == []
