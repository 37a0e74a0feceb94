from django.contrib import admin
from django.urls import include, path

from evaluation import views as evaluation_views
from kb import mcp, views
from kb.api import api
from retrieval import views as retrieval_views

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
    path("accounts/oidc/", include("kb.identity.urls")),  # single sign-on (docs/identity.md)
    path("accounts/", include("django.contrib.auth.urls")),
    path("curate/", retrieval_views.curator_report, name="curator-report"),
    path("curate/eval-case", evaluation_views.make_eval_case_page, name="curator-eval-case"),
    path("feedback", retrieval_views.page_feedback, name="feedback"),
    path("suggest", retrieval_views.spelling_suggestion, name="suggest"),
    path("documents/<int:document_id>/", retrieval_views.document_page, name="document"),
    path(
        "documents/<int:document_id>/original",
        retrieval_views.document_original,
        name="document-original",
    ),
    path("", retrieval_views.search_page, name="search"),
]
