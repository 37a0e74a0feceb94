"""Project settings: the only module that reads the environment.

Every environment variable the product understands is read here and listed in docs/configuration.md.
Product settings (ranker defaults, limits, ...) are validated once in `kb.conf`.
"""

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

KB_ENV = os.environ.get("KB_ENV", "development")
PRODUCTION = KB_ENV == "production"

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if PRODUCTION:
        raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set when KB_ENV=production.")
    SECRET_KEY = "django-insecure-development-only-key-do-not-use-in-production"

DEBUG = os.environ.get("KB_DEBUG", "0" if PRODUCTION else "1") == "1"
ALLOWED_HOSTS = [h for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "").split(",") if h]
if not ALLOWED_HOSTS:
    if PRODUCTION:
        raise ImproperlyConfigured("DJANGO_ALLOWED_HOSTS must be set when KB_ENV=production.")
    ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]

# The product's apps, bottom to top: each imports only the ones before it (tests/test_layers.py).
# Everything that walks the apps reads this tuple: INSTALLED_APPS, LOGGING, kb_error_table, the tests.
PRODUCT_APPS = (
    "kb",
    "ingest",  # before django_q: its qcluster command adds the watchdog to django-q2's
    "retrieval",
    "capabilities",
    "answers",
    "evaluation",
)

INSTALLED_APPS = [
    "kb.apps.ConsoleAdminConfig",  # django.contrib.admin with a scoped "view on site"
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "ninja",  # serves its own Swagger UI files: /api/docs loads nothing from another origin
    *PRODUCT_APPS,
    "config",  # the project itself, installed for its commands: kb_run, kb_error_table
    "django_q",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "config.middleware.ApiErrorShapeMiddleware",
    "config.middleware.ContentSecurityPolicyMiddleware",
    "config.middleware.PrivateResponsesMiddleware",
    "config.middleware.InvalidInputMiddleware",
    "config.middleware.DebugPagesForStaffMiddleware",
    "config.middleware.DatabaseAwayMiddleware",
    "kb.identity.middleware.IdentityResyncMiddleware",  # an SSO session's groups read again when due
]
# debug pages and error reports hide every setting and environment variable whose name says
# secret, and with DEBUG on reach signed-in staff only
DEFAULT_EXCEPTION_REPORTER_FILTER = "config.middleware.SecretHidingFilter"
DEFAULT_EXCEPTION_REPORTER = "config.middleware.StaffOnlyExceptionReporter"

if PRODUCTION:  # runserver serves static files in development
    MIDDLEWARE.insert(1, "whitenoise.middleware.WhiteNoiseMiddleware")

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # Each app keeps the templates it renders in its own templates/ (APP_DIRS). The project's
        # templates/ holds only those named as django.contrib.admin's own (admin/base_site.html,
        # registration/logged_out.html, registration/password_reset_*.html): the admin app comes
        # before kb in INSTALLED_APPS, so only DIRS, searched before every app, lets them win.
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------
# DATABASE_URL set: that server. Unset: an embedded PostgreSQL 18 + pgvector started on demand
# by the `config.db_backend` engine in KB_DATA_DIR/pgdata (see config/embedded_db.py).
KB_DATA_DIR = Path(os.environ.get("KB_DATA_DIR", BASE_DIR / ".kb")).resolve()
DATABASE_URL = os.environ.get("DATABASE_URL", "")
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
    DATABASES["default"]["ENGINE"] = "config.db_backend"
else:
    DATABASES = {
        "default": {
            "ENGINE": "config.db_backend",
            "NAME": "kb",
            "USER": "kb",  # config/embedded_auth.py: not a superuser; its password is set on connecting
            "HOST": "",
            "EMBEDDED_PGDATA": str(KB_DATA_DIR / "pgdata"),
            "CONN_MAX_AGE": 60,
        }
    }
# DATABASE_REPLICA_URLS: streaming replicas of that server, comma-separated; searches, documents
# and pages read from them (kb/replicas.py), everything else from `default`.
for _number, _url in enumerate(
    [u.strip() for u in os.environ.get("DATABASE_REPLICA_URLS", "").split(",") if u.strip()],
    start=1,
):
    DATABASES[f"replica_{_number}"] = {
        **dj_database_url.parse(_url, conn_max_age=60),
        "TEST": {"MIRROR": "default"},
    }
DATABASE_ROUTERS = ["kb.replicas.ReplicaRouter"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CACHES = {
    # Shared by web and worker processes, so django-q2's cluster heartbeat is visible to /healthz.
    "default": {
        "BACKEND": "django.core.cache.backends.db.DatabaseCache",
        "LOCATION": "kb_cache",
    }
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
FORMAT_MODULE_PATH = ["config.formats"]  # times to the second (config/formats/en/formats.py)
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = KB_DATA_DIR / "staticfiles"
MEDIA_ROOT = Path(os.environ.get("KB_MEDIA_DIR", KB_DATA_DIR / "media")).resolve()
MEDIA_URL = "media/"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"
        if PRODUCTION
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

if PRODUCTION:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = os.environ.get("KB_SSL_REDIRECT", "1") == "1"
    SECURE_HSTS_SECONDS = int(os.environ.get("KB_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# --- Background jobs --------------------------------------------------------------------------
Q_CLUSTER = {
    "name": "kb",
    "orm": "default",
    "workers": int(os.environ.get("KB_WORKERS", "1")),
    "timeout": int(os.environ.get("KB_TASK_TIMEOUT", "3600")),
    # a task whose worker died is handed out again after this many seconds (must exceed timeout)
    "retry": int(
        os.environ.get("KB_TASK_RETRY", str(int(os.environ.get("KB_TASK_TIMEOUT", "3600")) + 60))
    ),
    "max_attempts": 3,
    "ack_failures": True,
    "catch_up": False,
    "poll": 0.5,
    "label": "Background jobs",
}

# --- Product settings (validated in kb/conf.py) -----------------------------------------------
KB_EMBEDDER = os.environ.get("KB_EMBEDDER", "local")  # "local", "e5" (multilingual) or "http"
KB_EMBEDDING_MODEL = os.environ.get("KB_EMBEDDING_MODEL", "")  # empty: bundled all-MiniLM-L6-v2
KB_EMBEDDING_DIM = int(os.environ.get("KB_EMBEDDING_DIM", "384"))
KB_EMBEDDING_BATCH = int(os.environ.get("KB_EMBEDDING_BATCH", "64"))
KB_EMBEDDINGS_URL = os.environ.get("KB_EMBEDDINGS_URL", "")
# the languages the embedding model reads (ISO 639-1, comma-separated; "*" for any): the bundled
# model reads English; any other model is trusted with every language unless this says otherwise
KB_EMBEDDING_LANGUAGES = os.environ.get(
    "KB_EMBEDDING_LANGUAGES", "en" if KB_EMBEDDER == "local" and not KB_EMBEDDING_MODEL else "*"
)
KB_EMBEDDINGS_API_KEY = os.environ.get("KB_EMBEDDINGS_API_KEY", "")
# the cosine from which a passage is a strong match, one a reader is pointed to: empty for the
# model's own (kb/embedding/embedders.py:strong_cosine); set it for a model the product has not measured
KB_STRONG_COSINE = os.environ.get("KB_STRONG_COSINE", "")
# the local model answers single queries through an ONNX Runtime export of itself ("onnx",
# verified against PyTorch at load, falling back to it) or through PyTorch directly ("torch")
KB_EMBEDDING_QUERY_RUNTIME = os.environ.get("KB_EMBEDDING_QUERY_RUNTIME", "onnx")
# the local model embeds documents through PyTorch ("torch") or an ONNX Runtime export of itself,
# fp32 ("onnx") or with int8 MatMul weights ("onnx-int8"); verified against PyTorch at load
KB_EMBEDDING_DOCUMENT_RUNTIME = os.environ.get("KB_EMBEDDING_DOCUMENT_RUNTIME", "onnx-int8")
KB_WARM_MODEL = os.environ.get(
    "KB_WARM_MODEL", ""
)  # query | documents | "" (see kb/embedding/embedders.py: warm_up)
KB_MODEL_CACHE_DIR = Path(os.environ.get("KB_MODEL_CACHE_DIR", KB_DATA_DIR / "models")).resolve()
KB_FETCH_ALLOWED_PRIVATE = [
    h.strip() for h in os.environ.get("KB_FETCH_ALLOWED_PRIVATE", "").split(",") if h.strip()
]
# folder and git sources (docs/ingesting.md "Folders" and "Git repositories"): the directories a
# folder source may sit under (comma-separated absolute paths; empty: folder sources are off),
# whether git sources may name ssh:// URLs and local paths, each run's clone or fetch budget, and
# the tokens git sources may use: each KB_GIT_TOKEN_<NAME> variable, named by a source as <NAME>,
# written <host>[,<host>…]=<token> (sent over https to those hosts only)
KB_FOLDER_ROOTS = [p.strip() for p in os.environ.get("KB_FOLDER_ROOTS", "").split(",") if p.strip()]
KB_GIT_ALLOW_LOCAL = os.environ.get("KB_GIT_ALLOW_LOCAL", "false").strip().lower() in (
    "1",
    "true",
    "yes",
)
KB_GIT_MAX_BYTES = int(os.environ.get("KB_GIT_MAX_BYTES", str(500 * 1024 * 1024)))
KB_GIT_TIMEOUT = float(os.environ.get("KB_GIT_TIMEOUT", "300"))
KB_GIT_CACHE_DIR = Path(
    os.environ.get("KB_GIT_CACHE_DIR", KB_DATA_DIR / "git")
).resolve()  # the bare mirrors
KB_GIT_TOKENS = {
    name.removeprefix("KB_GIT_TOKEN_"): value
    for name, value in os.environ.items()
    if name.startswith("KB_GIT_TOKEN_") and name != "KB_GIT_TOKEN_" and value
}
KB_FETCH_MAX_BYTES = int(os.environ.get("KB_FETCH_MAX_BYTES", str(10 * 1024 * 1024)))
KB_FETCH_TIMEOUT = float(os.environ.get("KB_FETCH_TIMEOUT", "20"))
# requests per minute: anonymous callers per client address, staff users per user
KB_RATE_LIMIT_ANONYMOUS = int(os.environ.get("KB_RATE_LIMIT_ANONYMOUS", "300"))
KB_RATE_LIMIT_STAFF = int(os.environ.get("KB_RATE_LIMIT_STAFF", "1200"))
# where readers reach this server (https://kb.example.com): absolute citation URLs and the MCP
# endpoint's protected-resource metadata; empty: taken from each request's scheme and host
KB_PUBLIC_BASE_URL = os.environ.get("KB_PUBLIC_BASE_URL", "").strip().rstrip("/")
# the namespace the search page opens on when it is readable ("" or unreadable: the first readable)
KB_DEFAULT_NAMESPACE = os.environ.get("KB_DEFAULT_NAMESPACE", "").strip()
# days the query log and reader feedback are kept; older rows are deleted by `kb_prune_queries`
KB_QUERY_RETENTION_DAYS = int(os.environ.get("KB_QUERY_RETENTION_DAYS", "90"))
# reader accounts sign in at /accounts/login/ (django.contrib.auth); the admin keeps its own page
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"
# single sign-on (docs/identity.md): OpenID Connect when KB_OIDC_ISSUER is set, LDAP or Active
# Directory when KB_LDAP_URL is set; both off by default. Secrets are read here only, never stored.
KB_OIDC_ISSUER = os.environ.get("KB_OIDC_ISSUER", "").strip().rstrip("/")
KB_OIDC_CLIENT_ID = os.environ.get("KB_OIDC_CLIENT_ID", "").strip()
KB_OIDC_CLIENT_SECRET = os.environ.get("KB_OIDC_CLIENT_SECRET", "")
KB_OIDC_SCOPES = os.environ.get("KB_OIDC_SCOPES", "openid email profile")
KB_OIDC_GROUPS_CLAIM = os.environ.get("KB_OIDC_GROUPS_CLAIM", "groups").strip()
KB_OIDC_NAME = os.environ.get("KB_OIDC_NAME", "single sign-on").strip()
KB_LDAP_URL = os.environ.get("KB_LDAP_URL", "").strip()
KB_LDAP_START_TLS = os.environ.get("KB_LDAP_START_TLS", "false").strip().lower() in (
    "1",
    "true",
    "yes",
)
KB_LDAP_BIND_DN = os.environ.get("KB_LDAP_BIND_DN", "")
KB_LDAP_BIND_PASSWORD = os.environ.get("KB_LDAP_BIND_PASSWORD", "")
KB_LDAP_USER_BASE = os.environ.get("KB_LDAP_USER_BASE", "").strip()
KB_LDAP_USER_FILTER = os.environ.get("KB_LDAP_USER_FILTER", "(uid=%(user)s)").strip()
KB_LDAP_GROUP_BASE = os.environ.get("KB_LDAP_GROUP_BASE", "").strip()
KB_LDAP_GROUP_TYPE = os.environ.get("KB_LDAP_GROUP_TYPE", "groupOfNames").strip()
# a signed-in SSO session's groups are read again when its last reading is older than this
KB_IDENTITY_RESYNC_SECONDS = int(os.environ.get("KB_IDENTITY_RESYNC_SECONDS", "900"))
# days the sign-in log is kept (older rows are deleted as new ones are written)
KB_SIGN_IN_LOG_DAYS = int(os.environ.get("KB_SIGN_IN_LOG_DAYS", "365"))
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",  # local accounts, always
    *(["kb.identity.ldap.LdapBackend"] if KB_LDAP_URL else []),
    *(["kb.identity.oidc.OidcBackend"] if KB_OIDC_ISSUER else []),
]
# password reset mails: configure a real backend with EMAIL_* in production; the default prints them
EMAIL_BACKEND = os.environ.get("KB_EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = os.environ.get("KB_DEFAULT_FROM_EMAIL", "kb@localhost")
# documents (PDF, Office, EPUB) and .zip uploads; the archive limit bounds the unpacked total too
KB_DOCUMENT_MAX_BYTES = int(os.environ.get("KB_DOCUMENT_MAX_BYTES", str(50 * 1024 * 1024)))
KB_ARCHIVE_MAX_BYTES = int(os.environ.get("KB_ARCHIVE_MAX_BYTES", str(200 * 1024 * 1024)))
KB_ARCHIVE_MAX_FILES = int(os.environ.get("KB_ARCHIVE_MAX_FILES", "5000"))
# the budget of one document parse in its child process
KB_PARSER_CPU_SECONDS = int(os.environ.get("KB_PARSER_CPU_SECONDS", "60"))
KB_PARSER_MEMORY_MB = int(os.environ.get("KB_PARSER_MEMORY_MB", "2048"))
# OCR of scans (docs/ingesting.md "Scans (OCR)"): Tesseract languages joined by "+" or ",",
# the wall-clock budget of one page, and how many pages of one document are OCRed at most
KB_OCR_LANGUAGES = [
    code
    for code in os.environ.get("KB_OCR_LANGUAGES", "eng").replace(",", "+").split("+")
    if code.strip()
]
KB_OCR_PAGE_SECONDS = int(os.environ.get("KB_OCR_PAGE_SECONDS", "60"))
KB_OCR_MAX_PAGES = int(os.environ.get("KB_OCR_MAX_PAGES", "100"))
# a running ingest whose heartbeat is older than this is reported as stalled (/healthz, run page);
# at twice this age the watchdog fails it and stops its worker (ingest/watchdog.py)
KB_RUN_STALL_SECONDS = int(os.environ.get("KB_RUN_STALL_SECONDS", "120"))
# how often each worker machine's qcluster process runs the watchdog, whatever its workers do
KB_WATCHDOG_SECONDS = int(os.environ.get("KB_WATCHDOG_SECONDS", "30"))
# what one document may become: characters of extracted text kept (the rest is cut with a marker),
# chunks stored (the rest dropped), and the size up to which HTML and text are extracted in the
# worker itself (larger bodies go to the budgeted child too)
KB_EXTRACT_MAX_CHARS = int(os.environ.get("KB_EXTRACT_MAX_CHARS", "2000000"))
KB_MAX_CHUNKS_PER_DOCUMENT = int(os.environ.get("KB_MAX_CHUNKS_PER_DOCUMENT", "2000"))
KB_PARSER_INLINE_MAX_BYTES = int(os.environ.get("KB_PARSER_INLINE_MAX_BYTES", str(256 * 1024)))
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
# a larger upload waits in a file of the product's own folder, locked by its server; what a killed
# server left there is removed at start-up and by the watchdog (ingest/upload_temp.py)
FILE_UPLOAD_TEMP_DIR = str(KB_DATA_DIR / "upload-tmp")
FILE_UPLOAD_HANDLERS = [
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "ingest.upload_temp.LockedTemporaryFileUploadHandler",
]
KB_CHUNK_TOKENS = int(os.environ.get("KB_CHUNK_TOKENS", "400"))
KB_DEMO_DOCS_DIR = BASE_DIR / "docs"
# Capability and knowledge retriever backends: "builtin", a dotted path to a class, or "none".
KB_CAPABILITY_RETRIEVER = os.environ.get("KB_CAPABILITY_RETRIEVER", "builtin")
KB_KNOWLEDGE_RETRIEVER = os.environ.get("KB_KNOWLEDGE_RETRIEVER", "builtin")
KB_KNOWLEDGE_MAX_TARGETS = int(os.environ.get("KB_KNOWLEDGE_MAX_TARGETS", "50"))
# a namespace with at least this many embedded chunks gets its own HNSW index (retrieval/vector_index.py);
# smaller ones are searched exactly, which is as fast below this size
KB_VECTOR_INDEX_MIN_CHUNKS = int(os.environ.get("KB_VECTOR_INDEX_MIN_CHUNKS", "2000"))
KB_VECTOR_INDEX_BUILD_MEMORY_MB = int(os.environ.get("KB_VECTOR_INDEX_BUILD_MEMORY_MB", "4096"))
# a namespace with at least this many chunks gets packed posting lists for the lexical channel
# (retrieval/posting_lists.py); smaller ones are read from the postings table, as fast below this size
KB_POSTING_LISTS_MIN_CHUNKS = int(os.environ.get("KB_POSTING_LISTS_MIN_CHUNKS", "20000"))
KB_REPLICA_MAX_LAG_SECONDS = float(os.environ.get("KB_REPLICA_MAX_LAG_SECONDS", "5"))
KB_KNOWLEDGE_MAX_BYTES = int(os.environ.get("KB_KNOWLEDGE_MAX_BYTES", str(20 * 1024 * 1024)))
# grounded answers (docs/answers.md): an OpenAI-compatible chat-completions server the operator
# runs or rents (http://127.0.0.1:11434/v1); empty: answers are off and search works as ever
KB_ANSWER_URL = os.environ.get("KB_ANSWER_URL", "").strip().rstrip("/")
KB_ANSWER_MODEL = os.environ.get("KB_ANSWER_MODEL", "").strip()
KB_ANSWER_API_KEY = os.environ.get("KB_ANSWER_API_KEY", "")
# the model's context length in tokens: the prompt, the tool reads and the answer must fit in it
KB_ANSWER_CONTEXT_TOKENS = int(os.environ.get("KB_ANSWER_CONTEXT_TOKENS", "8192"))
KB_ANSWER_MAX_TOKENS = int(os.environ.get("KB_ANSWER_MAX_TOKENS", "512"))
# seconds: to connect, to the first token, for the whole answer
KB_ANSWER_TIMEOUT = os.environ.get("KB_ANSWER_TIMEOUT", "5,60,180")
# whether the server takes tool calls (the capped `read` tool): auto tries and falls back, on, off
KB_ANSWER_TOOLS = os.environ.get("KB_ANSWER_TOOLS", "auto").strip().lower()
# answers under way at once in one process (each holds a worker and a database connection while
# the model writes); past it an answer is refused with ANSWER_BUSY (429)
KB_ANSWER_CONCURRENCY = int(os.environ.get("KB_ANSWER_CONCURRENCY", "4"))

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "short": {"()": "config.log_filters.ShortFormatter"},
        "django.server": {
            "()": "config.log_filters.ShortServerFormatter",
            "format": "[{server_time}] {message}",
            "style": "{",
        },
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "short"},
        # the development server's request lines, as Django writes them, cut when a query is long
        "django.server": {"class": "logging.StreamHandler", "formatter": "django.server"},
    },
    "root": {"handlers": ["console"], "level": os.environ.get("KB_LOG_LEVEL", "WARNING")},
    "loggers": {
        **{
            app: {"level": os.environ.get("KB_LOG_LEVEL", "INFO"), "propagate": True}
            for app in (*PRODUCT_APPS, "config")
        },
        # Django's own handler would write each 4xx and 5xx a second time beside the root's (with DEBUG on)
        "django": {"handlers": [], "level": "INFO", "propagate": True},
        "django.server": {"handlers": ["django.server"], "level": "INFO", "propagate": False},
    },
}
