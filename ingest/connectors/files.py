"""File sources: the files a curator uploaded (`SourceFile` rows, their bytes in storage). Every
run reads every file; one whose bytes are the stored ones is recognised by its byte key before
any parse. A file deleted in the console is deleted from the index; one uploaded under a new
name is a new document (the old name is removed)."""

from __future__ import annotations

from ingest.connectors.web import LoaderConnector


class FileConnector(LoaderConnector):
    kinds = ("file",)
