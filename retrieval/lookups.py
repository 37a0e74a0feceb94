"""Word lookups other surfaces make through the lexical channel, outside a ranked search: the
admin's chunk search, "did you mean" and its check, and the query terms other BM25 indexes
match exactly as search does."""

from __future__ import annotations

from kb.models import Namespace
from retrieval import lexical, query_words
from retrieval.errors import UnknownNamespace
from retrieval.query import validate_query
from retrieval.results import Filters
from retrieval.scope import Scope
from retrieval.spelling import correct_query

LOOKUP_LIMIT = 200  # chunks per namespace a word lookup returns


def matching_chunk_ids(namespace_ids, text: str, limit: int = LOOKUP_LIMIT) -> list[int]:
    """The chunks whose words match `text` best in each namespace, by the lexical channel: a
    lookup (the admin's chunk search)."""
    found: list[int] = []
    for namespace_id in namespace_ids:
        configs = query_words.namespace_configs(int(namespace_id), text)
        rows = lexical.lexical_search(
            Scope(int(namespace_id)),
            query_words.query_lexemes(text, configs),
            limit,
            configurations=configs,
            query=text,
        ).rows
        found += [row.chunk_id for row in rows]
    return found


def words_match(text: str, namespace_id: int, filters: Filters = Filters()) -> bool:
    """Whether the lexical channel finds any passage holding `text`'s words within `filters`."""
    scope = Scope(int(namespace_id), tuple(filters.source_ids), tuple(filters.document_ids))
    configs = query_words.namespace_configs(scope.namespace_id, text)
    return bool(
        lexical.lexical_search(
            scope, query_words.query_lexemes(text, configs), 1, configurations=configs, query=text
        ).rows
    )


def spelling_correction(query: str, namespace: str, filters: Filters = Filters()) -> str | None:
    """ "Did you mean": the query respelt from the namespace's vocabulary (`retrieval.spelling`),
    offered only when the keyword channel finds passages its words match within the same
    filters, a correction that helps. The check is the lexical channel alone, not a second whole
    search: it answers the same question at a tenth of the cost. The caller checks access; the
    query and the namespace are refused as search refuses them (`validate_query`,
    `UnknownNamespace`)."""
    query = validate_query(query, 1)
    namespace_id = Namespace.objects.filter(slug=namespace).values_list("pk", flat=True).first()
    if namespace_id is None:
        raise UnknownNamespace(f"No namespace {namespace!r}.", details={"namespace": namespace})
    corrected = correct_query(namespace_id, query)
    if not corrected or corrected.lower() == query.lower():
        return None
    return corrected if words_match(corrected, namespace_id, filters) else None


def query_terms(text: str) -> list[tuple[str, int]]:
    """The text's lexemes and counts as the lexical channel parses a query: for other BM25
    indexes (the capability index) that must match words exactly as search does."""
    return query_words.query_lexemes(text)
