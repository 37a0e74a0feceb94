"""Where a search reads (`Scope`): one namespace, some of its sources or documents, the documents
the reader may read; written into every channel's SQL, so nothing from another namespace, or
outside the reader's audiences, is ever read."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scope:
    """Where a search reads: one namespace, optionally some of its sources or documents, and of
    its documents those the reader may read. `audiences`: the restricted audiences (kb.audiences)
    read besides the open documents, None for every one; each restricted audience read also
    keeps its words' statistics apart, under `statistics_keys` (kb/migrations/0049_audiences.py)."""

    namespace_id: int
    source_ids: tuple[int, ...] = ()
    document_ids: tuple[int, ...] = ()
    audiences: tuple[int, ...] | None = ()

    @property
    def statistics_keys(self) -> tuple[int, ...]:
        """The keys of the postings and counts this scope reads: the namespace's own (its open
        documents') and minus each restricted audience's id. With `audiences` None (every one,
        unresolved) only the namespace's own: `planning.plan` resolves them."""
        return (int(self.namespace_id), *(-int(a) for a in self.audiences or ()))

    def where(self, chunk_alias: str = "c") -> tuple[str, list]:
        """SQL conditions (and params) restricting chunks `chunk_alias` to this scope. The
        namespace id is written into the SQL as an integer literal, so the planner can match the
        namespace's partial vector index (retrieval/vector_index.py) even in a generic prepared
        plan."""
        sql = [f"{chunk_alias}.namespace_id = {int(self.namespace_id)}"]
        params: list = []
        if self.document_ids:
            sql.append(f"{chunk_alias}.document_id = ANY(%s)")
            params.append(list(self.document_ids))
        if self.source_ids:
            sql.append(
                f"{chunk_alias}.document_id IN (SELECT id FROM kb_document WHERE source_id = "
                "ANY(%s))"
            )
            params.append(list(self.source_ids))
        self._audience(chunk_alias, sql, params)
        return " AND ".join(sql), params

    def document_where(self, document_alias: str = "d") -> tuple[str, list]:
        """The same scope as `where`, on documents `document_alias`."""
        sql = [f"{document_alias}.namespace_id = {int(self.namespace_id)}"]
        params: list = []
        if self.document_ids:
            sql.append(f"{document_alias}.id = ANY(%s)")
            params.append(list(self.document_ids))
        if self.source_ids:
            sql.append(f"{document_alias}.source_id = ANY(%s)")
            params.append(list(self.source_ids))
        self._audience(document_alias, sql, params)
        return " AND ".join(sql), params

    def _audience(self, alias: str, sql: list[str], params: list) -> None:
        if self.audiences is None:
            return
        if not self.audiences:
            sql.append(f"{alias}.audience_id IS NULL")
        else:
            sql.append(f"({alias}.audience_id IS NULL OR {alias}.audience_id = ANY(%s))")
            params.append(list(self.audiences))


def named_where(scope: Scope, chunk_alias: str) -> tuple[str, dict]:
    """`Scope.where` with named placeholders, for queries that use named parameters."""
    sql, values = scope.where(chunk_alias)
    parts = sql.split("%s")
    named = parts[0] + "".join(f"%(scope_{i})s{part}" for i, part in enumerate(parts[1:]))
    return named, {f"scope_{i}": value for i, value in enumerate(values)}
