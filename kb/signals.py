"""Announcements between apps that must not import each other.

`namespaces_changed` is sent by ingest when a run has finished writing documents and chunks of
a namespace; the apps that keep structures derived from them (retrieval's vector indexes and
packed posting lists) bring those up to date. The sender knows nothing of what is kept.
"""

from django.dispatch import Signal

# sent with `namespace_ids`: the ids of the namespaces whose chunks a finished run changed
namespaces_changed = Signal()
