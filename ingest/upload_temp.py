"""Keep large uploads in the product's own temp folder, and remove what a killed server left there.

Django deletes an upload's temporary file when its request ends, unless the process dies (SIGKILL,
the OOM killer, a worker timeout). So each file in FILE_UPLOAD_TEMP_DIR (KB_DATA_DIR/upload-tmp) is
held under an exclusive `flock` by its writer; the kernel drops the lock when the process dies, so
`sweep_stale_uploads` removes only files nobody holds, never a live upload.
"""

from __future__ import annotations

import fcntl
import logging
import os
from pathlib import Path

from django.conf import settings
from django.core.files.uploadhandler import TemporaryFileUploadHandler

logger = logging.getLogger(__name__)


def prepare_upload_folder() -> None:
    """When a process of the product starts (the ingest app is ready: kb_run, runserver, qcluster,
    a gunicorn worker): the folder exists, as Django's checks require, and what a server killed
    mid-upload left in it is gone."""
    ensure_upload_folder()
    sweep_stale_uploads()


def ensure_upload_folder() -> None:
    """Create FILE_UPLOAD_TEMP_DIR (with KB_DATA_DIR) if missing: Django checks that it exists."""
    os.makedirs(settings.FILE_UPLOAD_TEMP_DIR, exist_ok=True)


class LockedTemporaryFileUploadHandler(TemporaryFileUploadHandler):
    """Django's handler for large uploads, whose file is locked by the process that writes it."""

    def new_file(self, *args, **kwargs):
        ensure_upload_folder()  # removed since start-up (a cleaned data folder) is no failed upload
        super().new_file(*args, **kwargs)
        # released with the file (the request's end) or the process (however it ends). A sweep that
        # took the file in the instant between its creation and this lock has unlinked it: the
        # open file is still written and read through, and Django's close allows the missing name
        fcntl.flock(self.file.fileno(), fcntl.LOCK_EX)


def sweep_stale_uploads() -> int:
    """Remove the upload files in FILE_UPLOAD_TEMP_DIR that no process holds locked (their server
    was killed mid-request); how many. Safe at any time, beside live uploads."""
    folder = Path(settings.FILE_UPLOAD_TEMP_DIR)
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return 0
    for entry in entries:
        if not entry.is_file(follow_symlinks=False):
            continue
        try:
            with open(entry.path, "rb") as handle:
                fcntl.flock(
                    handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB
                )  # fails while its writer lives
                os.unlink(entry.path)
        except BlockingIOError:
            continue
        except FileNotFoundError:  # its request ended meanwhile and Django deleted it
            continue
        removed += 1
    if removed:
        logger.warning(
            "removed %d upload files left in %s by a server killed mid-upload", removed, folder
        )
    return removed
