"""Project settings: the only module that reads the environment.

Every environment variable the product understands is read here and listed in docs/configuration.md:
the deployment's own (database, secrets, workers, logging) one by one below, the product settings
through the settings table (`kb/conf/`), which states each one's default and how it is read, and
whose checks `kb.conf.kb_settings()` runs once.
"""

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from kb.conf import environment_settings

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
# Everything that walks the apps reads this tuple: INSTALLED_APPS, LOGGING, kb_error_table, the
# tests.
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
    # an SSO session's groups read again when due
    "kb.identity.middleware.IdentityResyncMiddleware",
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
            # config/embedded_auth.py: not a superuser; its password is set on connecting
            "USER": "kb",
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
# A server that does not answer a connection (a host that drops packets, a hung server) is given
# up on after this many seconds: the request answers 503 KB_DB_UNAVAILABLE instead of hanging until
# the web server kills its worker. A URL's own `?connect_timeout=` wins.
DATABASE_CONNECT_TIMEOUT_S = 5
for _database in DATABASES.values():
    _database.setdefault("OPTIONS", {}).setdefault("connect_timeout", DATABASE_CONNECT_TIMEOUT_S)
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
# MEDIA_ROOT (KB_MEDIA_DIR) is a product setting: see below
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

# --- Product settings ----------------------------------------------------------------------------
# Every KB_* product setting, and MEDIA_ROOT, is one row of the settings table in kb/conf/: its
# default, how its environment variable is read, its check and its line in docs/configuration.md.
_product = environment_settings(os.environ, base_dir=BASE_DIR, data_dir=KB_DATA_DIR)
globals().update(_product)
# reader accounts sign in at /accounts/login/ (django.contrib.auth); the admin keeps its own page
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"
# single sign-on (docs/identity.md): OpenID Connect when KB_OIDC_ISSUER is set, LDAP or Active
# Directory when KB_LDAP_URL is set; both off by default. Secrets are read here only, never stored.
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",  # local accounts, always
    *(["kb.identity.ldap.LdapBackend"] if _product["KB_LDAP_URL"] else []),
    *(["kb.identity.oidc.OidcBackend"] if _product["KB_OIDC_ISSUER"] else []),
]
# password reset mails: configure a real backend with EMAIL_* in production; the default prints them
EMAIL_BACKEND = os.environ.get("KB_EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = os.environ.get("KB_DEFAULT_FROM_EMAIL", "kb@localhost")
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
# a larger upload waits in a file of the product's own folder, locked by its server; what a killed
# server left there is removed at start-up and by the watchdog (ingest/upload_temp.py)
FILE_UPLOAD_TEMP_DIR = str(KB_DATA_DIR / "upload-tmp")
FILE_UPLOAD_HANDLERS = [
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "ingest.upload_temp.LockedTemporaryFileUploadHandler",
]

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
        # Django's own handler would write each 4xx and 5xx a second time beside the root's (with
        # DEBUG on)
        "django": {"handlers": [], "level": "INFO", "propagate": True},
        "django.server": {"handlers": ["django.server"], "level": "INFO", "propagate": False},
    },
}
