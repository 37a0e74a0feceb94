"""A web server killed mid-upload leaves its temporary upload file behind; the product removes it
when it starts and with the watchdog, and never removes the file of an upload still under way."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ingest.upload_temp import sweep_stale_uploads

ROOT = Path(__file__).resolve().parents[2]
# a web process receiving a large upload through the handler FILE_UPLOAD_HANDLERS names: it prints
# the file's path once the first megabyte is written, then waits (a live request) or is killed
SERVER = """
import os, signal, sys
import django
django.setup()
from django.conf import settings
from django.core.files.uploadhandler import load_handler
handler = load_handler(settings.FILE_UPLOAD_HANDLERS[-1])
handler.new_file("file", "big.pdf", "application/pdf", 2 * 1024 * 1024)
handler.receive_data_chunk(b"%PDF-" + b"x" * (1024 * 1024), 0)
handler.file.flush()
print(handler.file.temporary_file_path(), flush=True)
if sys.argv[1] == "killed":
    os.kill(os.getpid(), signal.SIGKILL)
sys.stdin.read()  # the request goes on until the test says it ended
handler.file.close()
"""


@pytest.fixture
def data_dir(tmp_path, settings):
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path / "upload-tmp")  # as config/settings.py derives it
    return tmp_path


def _server(data_dir: Path, how: str) -> tuple[subprocess.Popen, Path]:
    env = {**os.environ, "KB_DATA_DIR": str(data_dir), "DJANGO_SETTINGS_MODULE": "config.settings"}
    env.pop("KB_WARM_MODEL", None)
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, how],
        cwd=ROOT,
        env=env,
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    path = Path(server.stdout.readline().strip())
    assert path.parent == data_dir / "upload-tmp" and path.is_file(), path
    return server, path


def test_a_killed_servers_upload_file_is_swept_and_a_live_uploads_file_is_kept(data_dir):
    live, in_flight = _server(data_dir, "live")
    killed, stale = _server(data_dir, "killed")  # started after the live one, whose file it leaves
    assert killed.wait(timeout=60) == -signal.SIGKILL
    assert stale.is_file()  # what a killed server leaves: Django never got to delete it
    try:
        assert sweep_stale_uploads() == 1
        assert not stale.exists()
        assert in_flight.is_file() and in_flight.stat().st_size > 1024 * 1024
    finally:
        live.communicate("", timeout=60)  # the request ends: Django deletes its own file
    assert live.returncode == 0
    assert not in_flight.exists()
    assert sweep_stale_uploads() == 0


@pytest.mark.django_db
def test_the_watchdog_sweeps_upload_files_of_a_killed_server(data_dir):
    from ingest.tasks import watchdog

    killed, stale = _server(data_dir, "killed")
    killed.wait(timeout=60)
    watchdog()
    assert not stale.exists()


@pytest.mark.django_db
def test_an_upload_through_the_api_waits_locked_in_the_products_folder_and_is_gone_after(
    data_dir, settings, monkeypatch, namespace
):
    """A real request with the handlers config/settings.py names: while the service reads the
    upload,
    its file is in FILE_UPLOAD_TEMP_DIR and a sweep leaves it; when the request ends it is gone."""
    import io

    from django.test import Client

    from ingest import sources
    from kb.auth import issue_token
    from kb.models import Source, SourceFile

    settings.MEDIA_ROOT = str(data_dir / "media")
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 1024  # to disk, as any upload over 10 MB goes
    source = Source.objects.create(namespace=namespace, name="files", kind="file")
    seen = []
    upload_to_source = sources.upload_to_source

    def reading(caller, source_id, files):
        path = Path(files[0][1].temporary_file_path())
        assert path.parent == data_dir / "upload-tmp"
        assert sweep_stale_uploads() == 0 and path.is_file()
        seen.append(path)
        return upload_to_source(caller, source_id, files)

    monkeypatch.setattr(sources, "upload_to_source", reading)
    _, secret = issue_token("t", namespaces=[namespace], scope="write")
    handle = io.BytesIO(b"# Notes\n\n" + b"A line of notes.\n" * 4096)
    handle.name = "notes.md"
    response = Client(HTTP_AUTHORIZATION=f"Bearer {secret}").post(
        f"/api/sources/{source.pk}/files", {"files": handle}
    )
    assert response.status_code == 201, response.content
    assert SourceFile.objects.filter(source=source, path="notes.md").exists()
    assert len(seen) == 1 and not seen[0].exists()
    assert list((data_dir / "upload-tmp").iterdir()) == []


def test_a_missing_folder_is_nothing_to_sweep(data_dir):
    assert sweep_stale_uploads() == 0


def test_a_process_start_sweeps_what_a_killed_server_left_and_keeps_a_live_upload(data_dir):
    """Any process of the product starting (here `manage.py check`; kb_run, runserver, qcluster and
    gunicorn's workers alike) removes a killed server's upload file, and leaves a live one's."""
    live, in_flight = _server(data_dir, "live")
    killed, stale = _server(data_dir, "killed")
    killed.wait(timeout=60)
    try:
        assert stale.is_file()
        env = {**os.environ, "KB_DATA_DIR": str(data_dir)}
        env.pop("KB_WARM_MODEL", None)
        done = subprocess.run(
            [sys.executable, "manage.py", "check"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert not stale.exists()
        assert in_flight.is_file()
    finally:
        live.communicate("", timeout=60)


def test_a_fresh_data_folder_passes_djangos_checks(tmp_path):
    """Django refuses to start (files.E001) while FILE_UPLOAD_TEMP_DIR does not exist: the ingest
    app creates it, so a first start on an empty KB_DATA_DIR serves and works."""
    data = tmp_path / "fresh" / "data"
    env = {**os.environ, "KB_DATA_DIR": str(data)}
    env.pop("KB_WARM_MODEL", None)
    done = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert (data / "upload-tmp").is_dir()
