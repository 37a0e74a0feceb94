"""Typed, frozen product settings, read once from `django.conf.settings`.

Modules take what they need from `kb_settings()` instead of reading `settings.KB_*` ad hoc,
so every knob is validated in one place and has one documented default.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from kb.errors import ConfigurationError


@dataclass(frozen=True)
class IdentitySettings:
    """Single sign-on (docs/identity.md): each provider is on when its first setting is set."""

    oidc_issuer: str  # "": OpenID Connect is off
    oidc_client_id: str
    oidc_client_secret: str = field(repr=False)  # from the environment only; never in a log line
    oidc_scopes: str
    oidc_groups_claim: str
    oidc_name: str  # what the sign-in page's button calls the provider
    ldap_url: str  # "": LDAP is off
    ldap_start_tls: bool
    ldap_bind_dn: str
    ldap_bind_password: str = field(repr=False)
    ldap_user_base: str
    ldap_user_filter: str
    ldap_group_base: str
    ldap_group_type: str  # groupOfNames | groupOfUniqueNames | posixGroup | activeDirectory
    resync_seconds: int  # an SSO session's groups are read again when older than this
    sign_in_log_days: int  # sign-in log rows older than this are deleted


@dataclass(frozen=True)
class KBSettings:
    """Every product setting, typed. Defaults are stated once, where the environment is read
    (kb/settings.py); here each field only says what it is."""

    embedder: str
    embedding_model: str
    embedding_dim: int
    embedding_batch: int
    embeddings_url: str
    embeddings_api_key: str = field(repr=False)
    embedding_languages: tuple[str, ...]  # the languages the model reads; empty: any
    strong_cosine: (
        float | None
    )  # a passage this close in meaning is a strong match; None: the model's own
    fetch_allowed_private: tuple[str, ...]
    fetch_max_bytes: int
    fetch_timeout: float
    chunk_tokens: int
    demo_docs_dir: Path
    media_root: Path
    run_stall_seconds: int  # heartbeat age that makes a run stalled (ingest/watchdog.py)
    watchdog_seconds: int
    document_max_bytes: int
    archive_max_bytes: int
    archive_max_files: int
    parser_cpu_seconds: int
    parser_memory_mb: int
    extract_max_chars: int  # characters of text one document keeps
    max_chunks_per_document: int
    parser_inline_max_bytes: int  # larger HTML and text bodies are extracted in the child
    ocr_languages: tuple[str, ...]  # Tesseract language codes
    ocr_page_seconds: int
    ocr_max_pages: int
    rate_limit_anonymous: int
    rate_limit_staff: int
    capability_retriever: str
    knowledge_retriever: str
    knowledge_max_targets: int
    knowledge_max_bytes: int
    vector_index_min_chunks: int
    vector_index_build_memory_mb: int  # most maintenance_work_mem a vector index build takes
    posting_lists_min_chunks: (
        int  # a namespace this large gets packed lists (retrieval/posting_lists.py)
    )
    replica_max_lag_seconds: float  # a read replica further behind than this is not read from
    embedding_query_runtime: str
    embedding_document_runtime: str
    model_cache_dir: Path | None
    default_namespace: str  # the search page's first namespace, when the reader may read it
    query_retention_days: int  # query log and feedback rows older than this are pruned
    warm_model: str  # which path of the embedder a process loads at start: query, documents or none
    public_base_url: str  # scheme://host[:port][/prefix] readers reach; "": each request's own
    folder_roots: tuple[Path, ...]  # where folder sources may be; empty: folder sources are off
    git_allow_local: bool  # git sources may name ssh:// URLs and local paths
    git_max_bytes: int  # most a git source's clone or fetch may bring
    git_timeout: float  # seconds one git command may take
    git_cache_dir: Path  # where each git source's bare mirror is kept
    git_tokens: dict[str, str] = field(
        repr=False
    )  # KB_GIT_TOKEN_<NAME> values (`host[,host]=token`) by <NAME>
    answer_url: str  # an OpenAI-compatible base URL (…/v1); "": answers are off
    answer_model: str
    answer_api_key: str = field(repr=False)
    answer_context_tokens: int  # the model's context length: prompt, reads and answer fit in it
    answer_max_tokens: int  # the longest answer asked for
    answer_timeouts: tuple[float, float, float]  # seconds: connect, first token, whole answer
    answer_tools: str  # auto | on | off: whether the server is sent the `read` tool
    answer_concurrency: (
        int  # answers under way at once in one process; more are refused (ANSWER_BUSY)
    )
    identity: IdentitySettings


@functools.cache
def kb_settings() -> KBSettings:
    conf = KBSettings(
        embedder=settings.KB_EMBEDDER,
        embedding_model=settings.KB_EMBEDDING_MODEL,
        embedding_dim=settings.KB_EMBEDDING_DIM,
        embedding_batch=settings.KB_EMBEDDING_BATCH,
        embeddings_url=settings.KB_EMBEDDINGS_URL,
        embeddings_api_key=settings.KB_EMBEDDINGS_API_KEY,
        embedding_languages=_languages(settings.KB_EMBEDDING_LANGUAGES),
        strong_cosine=_strong_cosine(settings.KB_STRONG_COSINE),
        fetch_allowed_private=tuple(settings.KB_FETCH_ALLOWED_PRIVATE),
        fetch_max_bytes=settings.KB_FETCH_MAX_BYTES,
        fetch_timeout=settings.KB_FETCH_TIMEOUT,
        document_max_bytes=settings.KB_DOCUMENT_MAX_BYTES,
        archive_max_bytes=settings.KB_ARCHIVE_MAX_BYTES,
        archive_max_files=settings.KB_ARCHIVE_MAX_FILES,
        parser_cpu_seconds=settings.KB_PARSER_CPU_SECONDS,
        parser_memory_mb=settings.KB_PARSER_MEMORY_MB,
        ocr_languages=tuple(code.strip() for code in settings.KB_OCR_LANGUAGES),
        ocr_page_seconds=settings.KB_OCR_PAGE_SECONDS,
        ocr_max_pages=settings.KB_OCR_MAX_PAGES,
        run_stall_seconds=settings.KB_RUN_STALL_SECONDS,
        watchdog_seconds=settings.KB_WATCHDOG_SECONDS,
        extract_max_chars=settings.KB_EXTRACT_MAX_CHARS,
        max_chunks_per_document=settings.KB_MAX_CHUNKS_PER_DOCUMENT,
        parser_inline_max_bytes=settings.KB_PARSER_INLINE_MAX_BYTES,
        rate_limit_anonymous=settings.KB_RATE_LIMIT_ANONYMOUS,
        rate_limit_staff=settings.KB_RATE_LIMIT_STAFF,
        chunk_tokens=settings.KB_CHUNK_TOKENS,
        demo_docs_dir=Path(settings.KB_DEMO_DOCS_DIR),
        media_root=Path(settings.MEDIA_ROOT),
        capability_retriever=settings.KB_CAPABILITY_RETRIEVER.strip(),
        knowledge_retriever=settings.KB_KNOWLEDGE_RETRIEVER.strip(),
        knowledge_max_targets=settings.KB_KNOWLEDGE_MAX_TARGETS,
        knowledge_max_bytes=settings.KB_KNOWLEDGE_MAX_BYTES,
        vector_index_min_chunks=settings.KB_VECTOR_INDEX_MIN_CHUNKS,
        vector_index_build_memory_mb=settings.KB_VECTOR_INDEX_BUILD_MEMORY_MB,
        posting_lists_min_chunks=settings.KB_POSTING_LISTS_MIN_CHUNKS,
        replica_max_lag_seconds=settings.KB_REPLICA_MAX_LAG_SECONDS,
        embedding_query_runtime=settings.KB_EMBEDDING_QUERY_RUNTIME.strip().lower(),
        embedding_document_runtime=settings.KB_EMBEDDING_DOCUMENT_RUNTIME.strip().lower(),
        model_cache_dir=Path(settings.KB_MODEL_CACHE_DIR),
        warm_model=settings.KB_WARM_MODEL.strip().lower(),
        public_base_url=settings.KB_PUBLIC_BASE_URL,
        default_namespace=settings.KB_DEFAULT_NAMESPACE,
        query_retention_days=settings.KB_QUERY_RETENTION_DAYS,
        answer_url=settings.KB_ANSWER_URL,
        answer_model=settings.KB_ANSWER_MODEL,
        answer_api_key=settings.KB_ANSWER_API_KEY,
        answer_context_tokens=settings.KB_ANSWER_CONTEXT_TOKENS,
        answer_max_tokens=settings.KB_ANSWER_MAX_TOKENS,
        answer_timeouts=_timeouts(settings.KB_ANSWER_TIMEOUT),
        answer_tools=settings.KB_ANSWER_TOOLS,
        answer_concurrency=settings.KB_ANSWER_CONCURRENCY,
        folder_roots=tuple(Path(root) for root in settings.KB_FOLDER_ROOTS),
        git_allow_local=bool(settings.KB_GIT_ALLOW_LOCAL),
        git_max_bytes=settings.KB_GIT_MAX_BYTES,
        git_timeout=settings.KB_GIT_TIMEOUT,
        git_cache_dir=Path(settings.KB_GIT_CACHE_DIR),
        git_tokens=dict(settings.KB_GIT_TOKENS),
        identity=IdentitySettings(
            oidc_issuer=settings.KB_OIDC_ISSUER,
            oidc_client_id=settings.KB_OIDC_CLIENT_ID,
            oidc_client_secret=settings.KB_OIDC_CLIENT_SECRET,
            oidc_scopes=settings.KB_OIDC_SCOPES,
            oidc_groups_claim=settings.KB_OIDC_GROUPS_CLAIM,
            oidc_name=settings.KB_OIDC_NAME,
            ldap_url=settings.KB_LDAP_URL,
            ldap_start_tls=settings.KB_LDAP_START_TLS,
            ldap_bind_dn=settings.KB_LDAP_BIND_DN,
            ldap_bind_password=settings.KB_LDAP_BIND_PASSWORD,
            ldap_user_base=settings.KB_LDAP_USER_BASE,
            ldap_user_filter=settings.KB_LDAP_USER_FILTER,
            ldap_group_base=settings.KB_LDAP_GROUP_BASE,
            ldap_group_type=settings.KB_LDAP_GROUP_TYPE,
            resync_seconds=settings.KB_IDENTITY_RESYNC_SECONDS,
            sign_in_log_days=settings.KB_SIGN_IN_LOG_DAYS,
        ),
    )
    _validate(conf)
    return conf


def _languages(value: str) -> tuple[str, ...]:
    """ISO 639-1 codes from a comma-separated list; none (any language) when it holds "*"."""
    codes = {code.strip().lower() for code in value.split(",") if code.strip()}
    return () if "*" in codes else tuple(sorted(codes))


def _strong_cosine(value: str | float | None) -> float | None:
    """KB_STRONG_COSINE: None when empty (the model's own), else a cosine between -1 and 1."""
    if value is None or not str(value).strip():
        return None
    try:
        cosine = float(value)
    except ValueError as exc:
        raise _not_a_cosine(value) from exc
    if not -1.0 <= cosine <= 1.0:  # NaN fails too
        raise _not_a_cosine(value)
    return cosine


def _not_a_cosine(value) -> ConfigurationError:
    return ConfigurationError(
        f"KB_STRONG_COSINE is a cosine, between -1 and 1, got {value!r}: measure the model's with "
        "manage.py kb_strong_cosine, or leave it empty for the model's own.",
        details={"setting": "KB_STRONG_COSINE"},
    )


def _timeouts(value: str) -> tuple[float, float, float]:
    """KB_ANSWER_TIMEOUT: "connect,first token,total" in seconds; one number is all three."""
    parts = [part.strip() for part in str(value).split(",")]
    try:
        numbers = [float(part) for part in parts]
    except ValueError as exc:
        raise _bad_timeouts(value) from exc
    if len(numbers) == 1:
        numbers *= 3
    if len(numbers) != 3 or not all(0 < number <= 3600 for number in numbers):
        raise _bad_timeouts(value)
    return numbers[0], numbers[1], numbers[2]


def _bad_timeouts(value) -> ConfigurationError:
    return ConfigurationError(
        f"KB_ANSWER_TIMEOUT is three numbers of seconds, connect,first-token,total (e.g. 5,60,180), each above 0 "
        f"and at most 3600, got {value!r}.",
        details={"setting": "KB_ANSWER_TIMEOUT"},
    )


DOCUMENT_RUNTIMES = ("torch", "onnx", "onnx-int8")  # how the local model may embed documents

MINIMUMS = {  # setting: (KBSettings attribute, least value)
    "KB_VECTOR_INDEX_MIN_CHUNKS": ("vector_index_min_chunks", 1),
    "KB_VECTOR_INDEX_BUILD_MEMORY_MB": ("vector_index_build_memory_mb", 64),
    "KB_POSTING_LISTS_MIN_CHUNKS": ("posting_lists_min_chunks", 1),
    "KB_REPLICA_MAX_LAG_SECONDS": ("replica_max_lag_seconds", 0),
    "KB_CHUNK_TOKENS": ("chunk_tokens", 32),
    "KB_RUN_STALL_SECONDS": ("run_stall_seconds", 5),
    "KB_WATCHDOG_SECONDS": ("watchdog_seconds", 1),
    "KB_EXTRACT_MAX_CHARS": ("extract_max_chars", 1000),
    "KB_MAX_CHUNKS_PER_DOCUMENT": ("max_chunks_per_document", 1),
    "KB_PARSER_INLINE_MAX_BYTES": ("parser_inline_max_bytes", 0),
    "KB_QUERY_RETENTION_DAYS": ("query_retention_days", 1),
    "KB_ANSWER_CONTEXT_TOKENS": ("answer_context_tokens", 512),
    "KB_ANSWER_MAX_TOKENS": ("answer_max_tokens", 16),
    "KB_ANSWER_CONCURRENCY": ("answer_concurrency", 1),
}


def _validate(conf: KBSettings) -> None:
    odd = [code for code in conf.embedding_languages if not re.fullmatch(r"[a-z]{2,3}", code)]
    if odd:
        raise ConfigurationError(
            f"KB_EMBEDDING_LANGUAGES takes ISO 639-1 codes (en,de) or *, got {', '.join(odd)}.",
            details={"setting": "KB_EMBEDDING_LANGUAGES"},
        )
    if conf.embedder not in ("local", "e5", "http") and "." not in conf.embedder:
        raise ConfigurationError(
            f"KB_EMBEDDER must be 'local', 'e5', 'http' or a dotted path to a factory, got {conf.embedder!r}.",
            details={"setting": "KB_EMBEDDER"},
        )
    if conf.embedder == "http" and not conf.embeddings_url:
        raise ConfigurationError(
            "KB_EMBEDDER=http needs KB_EMBEDDINGS_URL (an OpenAI-compatible /v1/embeddings URL).",
            details={"setting": "KB_EMBEDDINGS_URL"},
        )
    if not 1 <= conf.embedding_dim <= 16000:
        raise ConfigurationError(
            f"KB_EMBEDDING_DIM must be between 1 and 16000, got {conf.embedding_dim}.",
            details={"setting": "KB_EMBEDDING_DIM"},
        )
    if conf.embedding_query_runtime not in ("onnx", "torch"):
        raise ConfigurationError(
            f"KB_EMBEDDING_QUERY_RUNTIME must be 'onnx' or 'torch', got {conf.embedding_query_runtime!r}.",
            details={"setting": "KB_EMBEDDING_QUERY_RUNTIME"},
        )
    if conf.embedding_document_runtime not in DOCUMENT_RUNTIMES:
        raise ConfigurationError(
            f"KB_EMBEDDING_DOCUMENT_RUNTIME must be one of {', '.join(DOCUMENT_RUNTIMES)}, got "
            f"{conf.embedding_document_runtime!r}.",
            details={"setting": "KB_EMBEDDING_DOCUMENT_RUNTIME"},
        )
    if conf.warm_model not in ("", "query", "documents"):
        raise ConfigurationError(
            f"KB_WARM_MODEL must be 'query', 'documents' or empty, got {conf.warm_model!r}.",
            details={"setting": "KB_WARM_MODEL"},
        )
    if conf.public_base_url and not re.fullmatch(
        r"https?://[^/?#\s]+(/[^?#\s]*)?", conf.public_base_url
    ):
        raise ConfigurationError(
            f"KB_PUBLIC_BASE_URL must be an http(s) URL without query or fragment, e.g. https://kb.example.com, "
            f"got {conf.public_base_url!r}.",
            details={"setting": "KB_PUBLIC_BASE_URL"},
        )
    _validate_answers(conf)
    _validate_identity(conf.identity)
    for setting, (attribute, least) in MINIMUMS.items():
        value = getattr(conf, attribute)
        if value < least:
            raise ConfigurationError(
                f"{setting} must be at least {least}, got {value}.", details={"setting": setting}
            )


LDAP_GROUP_TYPES = ("groupOfNames", "groupOfUniqueNames", "posixGroup", "activeDirectory")


def _validate_identity(conf: IdentitySettings) -> None:
    """Each provider that is on has what it needs; a half-configured one fails at start-up, not
    at a person's first sign-in."""
    if conf.oidc_issuer:
        if not re.fullmatch(r"https?://[^/?#\s]+(/[^?#\s]*)?", conf.oidc_issuer):
            raise ConfigurationError(
                f"KB_OIDC_ISSUER must be the provider's http(s) issuer URL (its "
                f"/.well-known/openid-configuration is read), got {conf.oidc_issuer!r}.",
                details={"setting": "KB_OIDC_ISSUER"},
            )
        for setting, value in (
            ("KB_OIDC_CLIENT_ID", conf.oidc_client_id),
            ("KB_OIDC_CLIENT_SECRET", conf.oidc_client_secret),
        ):
            if not value:
                raise ConfigurationError(
                    f"KB_OIDC_ISSUER is set but {setting} is empty: register this knowledge "
                    "base as a client at the provider and set both.",
                    details={"setting": setting},
                )
        if "openid" not in conf.oidc_scopes.split():
            raise ConfigurationError(
                f"KB_OIDC_SCOPES must include 'openid', got {conf.oidc_scopes!r}.",
                details={"setting": "KB_OIDC_SCOPES"},
            )
    if conf.ldap_url:
        if not re.fullmatch(r"ldaps?://\S+", conf.ldap_url):
            raise ConfigurationError(
                f"KB_LDAP_URL must be an ldap:// or ldaps:// URL, got {conf.ldap_url!r}.",
                details={"setting": "KB_LDAP_URL"},
            )
        for setting, value in (
            ("KB_LDAP_USER_BASE", conf.ldap_user_base),
            ("KB_LDAP_GROUP_BASE", conf.ldap_group_base),
        ):
            if not value:
                raise ConfigurationError(
                    f"KB_LDAP_URL is set but {setting} is empty: name the DN under which "
                    "people (or groups) are searched.",
                    details={"setting": setting},
                )
        if "%(user)s" not in conf.ldap_user_filter:
            raise ConfigurationError(
                f"KB_LDAP_USER_FILTER must contain %(user)s, got {conf.ldap_user_filter!r}.",
                details={"setting": "KB_LDAP_USER_FILTER"},
            )
        if conf.ldap_group_type not in LDAP_GROUP_TYPES:
            raise ConfigurationError(
                f"KB_LDAP_GROUP_TYPE must be one of {', '.join(LDAP_GROUP_TYPES)}, got "
                f"{conf.ldap_group_type!r}.",
                details={"setting": "KB_LDAP_GROUP_TYPE"},
            )
    if conf.resync_seconds < 1 or conf.sign_in_log_days < 1:
        setting = "KB_IDENTITY_RESYNC_SECONDS" if conf.resync_seconds < 1 else "KB_SIGN_IN_LOG_DAYS"
        raise ConfigurationError(f"{setting} must be at least 1.", details={"setting": setting})


def _validate_answers(conf: KBSettings) -> None:
    if conf.answer_tools not in ("auto", "on", "off"):
        raise ConfigurationError(
            f"KB_ANSWER_TOOLS must be 'auto', 'on' or 'off', got {conf.answer_tools!r}.",
            details={"setting": "KB_ANSWER_TOOLS"},
        )
    if conf.answer_url and not re.fullmatch(r"https?://[^/?#\s]+(/[^?#\s]*)?", conf.answer_url):
        raise ConfigurationError(
            f"KB_ANSWER_URL must be the http(s) base URL of an OpenAI-compatible API, e.g. http://127.0.0.1:11434/v1, "
            f"got {conf.answer_url!r}.",
            details={"setting": "KB_ANSWER_URL"},
        )
    if conf.answer_url and not conf.answer_model:
        raise ConfigurationError(
            "KB_ANSWER_URL is set but KB_ANSWER_MODEL is empty: name the model the server "
            "serves (its /v1/models lists them).",
            details={"setting": "KB_ANSWER_MODEL"},
        )
    if conf.answer_max_tokens >= conf.answer_context_tokens:
        raise ConfigurationError(
            f"KB_ANSWER_MAX_TOKENS ({conf.answer_max_tokens}) must be below KB_ANSWER_CONTEXT_TOKENS "
            f"({conf.answer_context_tokens}): the prompt needs room too.",
            details={"setting": "KB_ANSWER_MAX_TOKENS"},
        )
