"""Inline text sources: one document, the text typed in the console (ref `inline`). Renaming the
source keeps the document; the text's version is its bytes."""

from __future__ import annotations

from ingest.connectors.web import LoaderConnector


class TextConnector(LoaderConnector):
    kinds = ("text",)
