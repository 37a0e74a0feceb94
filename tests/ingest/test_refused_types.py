"""A refused file names the types that are read (issue #63), all of them and only them, from
the one list `ingest/filetypes.py` keeps: an OpenDocument presentation or template is read,
and a macro-enabled Office file, which is refused when it is read, is not offered."""

from __future__ import annotations

import io

import pytest

from ingest.errors import UnsupportedType
from ingest.extract import documents as doc
from ingest.filetypes import FILE_TYPES, READ_SUFFIXES
from ingest.uploads import add_files
from kb.models import Source


def test_a_refused_upload_lists_every_type_read(namespace):
    source = Source.objects.create(namespace=namespace, name="files", kind="file")
    with pytest.raises(UnsupportedType) as raised:
        add_files(source, [("slides.key", io.BytesIO(b"PK\x03\x04"))])
    message = raised.value.message
    assert message.startswith(
        "slides.key: 'slides.key' is not a type that is read. The types read are .csv, "
    )
    listed = message.split("The types read are ", 1)[1]
    for suffix in (".odp", ".otp", ".ott", ".ots", ".odg", ".otg", ".pdf", ".md", ".png"):
        assert f"{suffix}," in listed
    assert ".docm" not in listed and ".xlsm" not in listed  # refused as macro-enabled when read
    assert listed.endswith("or a .zip of them. Nothing of this upload was stored.")
    assert raised.value.code == "INGEST_UNSUPPORTED_TYPE" and not source.files.exists()


def test_the_list_is_every_type_read_but_the_macro_enabled():
    assert set(READ_SUFFIXES) == {s for s, t in FILE_TYPES.items() if t not in doc.MACRO_TYPES}
    assert {".odp", ".otp", ".ott", ".ots", ".odg", ".otg"} <= set(READ_SUFFIXES)
