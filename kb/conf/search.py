"""The search rows of the settings table: what readers reach, how much they may ask, and when
a namespace gets its own indexes."""

from __future__ import annotations

from dataclasses import dataclass

from kb.settings_table import HTTP_URL, at_least, matches, setting, stripped, url

MiB = 1024 * 1024


@dataclass(frozen=True)
class SearchSettings:
    """The search rows: what readers reach, what they may ask, when indexes are built."""

    public_base_url: str = setting(  # "": each request's own
        "KB_PUBLIC_BASE_URL",
        "",
        "where readers reach this server, e.g. `https://kb.example.com`: the MCP tools' citation "
        "URLs are absolute on it, and `/mcp`'s protected-resource metadata names it; empty: each "
        "request's own scheme and host (set it behind a proxy)",
        read=url,
        check=matches(
            HTTP_URL, "an http(s) URL without query or fragment, e.g. https://kb.example.com"
        ),
    )
    rate_limit_anonymous: int = setting(
        "KB_RATE_LIMIT_ANONYMOUS", 300, "requests per minute of an anonymous client address"
    )
    rate_limit_staff: int = setting(
        "KB_RATE_LIMIT_STAFF",
        1200,
        "requests per minute of a staff user (tokens carry their own limit)",
    )
    default_namespace: str = setting(
        "KB_DEFAULT_NAMESPACE",
        "",
        "the namespace the search page opens on, when the reader may read it; otherwise (or "
        "empty) the first readable one, alphabetically ([readers](readers.md))",
        read=stripped,
    )
    query_retention_days: int = setting(
        "KB_QUERY_RETENTION_DAYS",
        90,
        "days logged searches and their reader feedback are kept; `manage.py kb_prune_queries` "
        "(run it daily) deletes older ones ([readers](readers.md#what-is-stored))",
        check=at_least(1),
    )
    capability_retriever: str = setting(
        "KB_CAPABILITY_RETRIEVER",
        "builtin",
        "the capability retriever backend: `builtin`, a dotted path to a class, or `none`",
        convert=stripped,
    )
    knowledge_retriever: str = setting(
        "KB_KNOWLEDGE_RETRIEVER",
        "builtin",
        "the knowledge retriever backend: `builtin`, a dotted path to a class, or `none`",
        convert=stripped,
    )
    knowledge_max_targets: int = setting(
        "KB_KNOWLEDGE_MAX_TARGETS",
        50,
        "the most targets a knowledge retrieval may name, checked before any backend runs",
    )
    knowledge_max_bytes: int = setting(
        "KB_KNOWLEDGE_MAX_BYTES",
        20 * MiB,
        "the most bytes a knowledge retrieval may ask for, checked before any backend runs",
    )
    posting_lists_min_chunks: int = setting(
        "KB_POSTING_LISTS_MIN_CHUNKS",
        20000,
        "a namespace with at least this many chunks gets packed posting lists for the lexical "
        'channel when an ingest run ends ("Search and ranking"); smaller ones are read from the '
        "postings table",
        check=at_least(1),
    )
    replica_max_lag_seconds: float = setting(
        "KB_REPLICA_MAX_LAG_SECONDS",
        5.0,
        "a read replica further behind than this is not read from",
        check=at_least(0),
    )
    vector_index_build_memory_mb: int = setting(
        "KB_VECTOR_INDEX_BUILD_MEMORY_MB",
        4096,
        "the most `maintenance_work_mem` a namespace's vector index build takes; below it the "
        "build gets what its graph needs (vectors plus about 1 KB per chunk, a fifth to spare), "
        "so it is built in memory",
        check=at_least(64),
    )
    vector_index_min_chunks: int = setting(
        "KB_VECTOR_INDEX_MIN_CHUNKS",
        2000,
        "embedded chunks from which a namespace gets its own HNSW index; below it, vector search "
        "is an exact scan",
        check=at_least(1),
    )
