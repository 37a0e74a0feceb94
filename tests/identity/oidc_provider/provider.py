"""A real OpenID Connect provider for the tests: django-oidc-provider (MIT) in a Django project of
its own, with its own SQLite database, run as its own process on loopback (`serve`), and driven
from the tests as its administrator would: people, their groups, the registered client.

    python tests/identity/oidc_provider/provider.py init|person|serve …   (OP_DB and OP_ISSUER in
    the environment)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import django
from django.conf import settings

HERE = Path(__file__).resolve().parent


def configure() -> None:
    settings.configure(
        DEBUG=False,
        SECRET_KEY="test-provider-only",
        ALLOWED_HOSTS=["127.0.0.1", "localhost"],
        ROOT_URLCONF=__name__,
        INSTALLED_APPS=[
            "django.contrib.auth",
            "django.contrib.contenttypes",
            "django.contrib.sessions",
            "django.contrib.messages",
            "oidc_provider",
        ],
        MIDDLEWARE=[
            "django.contrib.sessions.middleware.SessionMiddleware",
            "django.middleware.csrf.CsrfViewMiddleware",
            "django.contrib.auth.middleware.AuthenticationMiddleware",
            "django.contrib.messages.middleware.MessageMiddleware",
        ],
        TEMPLATES=[
            {
                "BACKEND": "django.template.backends.django.DjangoTemplates",
                "DIRS": [HERE / "templates"],
                "APP_DIRS": True,
                "OPTIONS": {
                    "context_processors": [
                        "django.template.context_processors.request",
                        "django.contrib.auth.context_processors.auth",
                    ]
                },
            }
        ],
        DATABASES={
            "default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.environ["OP_DB"]}
        },
        DEFAULT_AUTO_FIELD="django.db.models.AutoField",
        USE_TZ=True,
        LOGIN_URL="/login/",
        # the product's cookie on the same host (127.0.0.1) keeps its name
        SESSION_COOKIE_NAME="op_sessionid",
        CSRF_COOKIE_NAME="op_csrftoken",
        SITE_URL=os.environ["OP_ISSUER"].removesuffix("/openid"),
        OIDC_USERINFO=f"{__name__}.userinfo",
        OIDC_EXTRA_SCOPE_CLAIMS=f"{__name__}.GroupScopeClaims",
        # the groups come from the userinfo endpoint, as many providers do
        OIDC_IDTOKEN_INCLUDE_CLAIMS=False,
        OIDC_IDTOKEN_EXPIRE=int(
            os.environ.get("OP_IDTOKEN_EXPIRE", "600")
        ),  # negative: born expired
    )
    django.setup()


def userinfo(claims, user):
    claims["preferred_username"] = user.username
    claims["email"] = user.email
    claims["given_name"] = user.first_name
    return claims


def _group_claims():
    from oidc_provider.lib.claims import ScopeClaims

    class GroupScopeClaims(ScopeClaims):
        info_groups = ("Groups", "The groups you are in.")

        def scope_groups(self):
            return {"groups": sorted(self.user.groups.values_list("name", flat=True))}

    return GroupScopeClaims


def __getattr__(
    name,
):  # the claims class is built after django.setup(), when the provider asks for it
    if name == "GroupScopeClaims":
        return _group_claims()
    if name == "urlpatterns":
        from django.contrib.auth import views as auth_views
        from django.urls import include, path

        return [
            path("login/", auth_views.LoginView.as_view()),
            path("openid/", include("oidc_provider.urls", namespace="oidc_provider")),
        ]
    raise AttributeError(name)


def init(redirect_uri: str, client_id: str, client_secret: str) -> None:
    from django.core.management import call_command
    from oidc_provider.models import Client, ResponseType

    call_command("migrate", verbosity=0)
    call_command("creatersakey", stdout=open(os.devnull, "w"))
    client = Client.objects.create(
        name="kb",
        client_id=client_id,
        client_secret=client_secret,
        client_type="confidential",
        jwt_alg="RS256",
        require_consent=False,
        _redirect_uris=redirect_uri,
        _scope="openid email profile groups",
    )
    client.response_types.add(ResponseType.objects.get(value="code"))


def person(username: str, password: str, groups: str, email: str = "") -> None:
    """Create or change a person: their password and exactly these groups (comma-separated)."""
    from django.contrib.auth.models import Group, User

    user, _ = User.objects.get_or_create(username=username)
    user.set_password(password)
    user.email = email or f"{username}@example.org"
    user.save()
    user.groups.set(
        [Group.objects.get_or_create(name=name)[0] for name in groups.split(",") if name]
    )


def serve(port: str) -> None:
    from django.core.management import call_command

    call_command("runserver", f"127.0.0.1:{port}", use_reloader=False, use_threading=True)


if __name__ == "__main__":
    configure()
    command, *arguments = sys.argv[1:]
    {"init": init, "person": person, "serve": serve}[command](*arguments)
