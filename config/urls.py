"""The site's URLs: the console, the API, MCP, health, reader accounts, and each app's pages."""

from django.contrib import admin
from django.urls import include, path

from config import mcp, views
from config.api import api
from kb.identity import tokens

handler400 = views.bad_request

urlpatterns = [
    path("admin/login/", views.throttled_admin_login),
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("mcp", mcp.server, name="mcp"),
    path(
        ".well-known/oauth-protected-resource/mcp",
        mcp.protected_resource_metadata,
        name="mcp-metadata",
    ),
    path("healthz", views.healthz, name="healthz"),
    path("favicon.ico", views.favicon, name="favicon"),
    # reader accounts: sign-in, sign-out, password reset, as django.contrib.auth does them
    path("accounts/login/", views.ReaderLoginView.as_view(), name="login"),
    path(
        "accounts/password_reset/",
        views.ThrottledPasswordResetView.as_view(),
        name="password_reset",
    ),
    path(
        "accounts/reset/<uidb64>/<token>/",
        views.ThrottledPasswordResetConfirmView.as_view(),
        name="password_reset_confirm",
    ),
    path("accounts/tokens/", tokens.my_tokens, name="my-tokens"),  # people's own API tokens
    path("accounts/oidc/", include("kb.identity.urls")),  # single sign-on (docs/identity.md)
    path("accounts/", include("django.contrib.auth.urls")),
    # each app's pages, from its own urls.py
    path("", include("evaluation.urls")),
    path("", include("retrieval.urls")),
]
