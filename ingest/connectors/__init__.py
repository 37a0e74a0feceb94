"""Find the connector for a source kind: one module per kind, each a `Connector` (`base.py`).

To add a kind: name it in `kb/vocabulary.py` and `kb.models.Source.Kind` (with a migration), write
`ingest/connectors/<kind>.py` with a `Connector` whose `kinds` names it (a `ListingConnector` needs
only `listing` and `read`), and add it to `CONNECTORS` and to the contract suite
(tests/ingest/test_connector_contract.py).
"""

from __future__ import annotations

from ingest.connectors.base import Connector, Entry, ListingConnector
from ingest.connectors.files import FileConnector
from ingest.connectors.folder import FolderConnector
from ingest.connectors.git import GitConnector
from ingest.connectors.text import TextConnector
from ingest.connectors.web import WebConnector
from ingest.errors import UnknownSourceKind

CONNECTORS: tuple[type[Connector], ...] = (
    WebConnector,
    FileConnector,
    TextConnector,
    FolderConnector,
    GitConnector,
)


def connector_class(kind: str) -> type[Connector]:
    for connector in CONNECTORS:
        if kind in connector.kinds:
            return connector
    raise UnknownSourceKind(f"Unknown source kind {kind!r}.")


__all__ = ["CONNECTORS", "Connector", "Entry", "ListingConnector", "connector_class"]
