"""Retrieval's pages: search, documents and their originals, feedback, spelling suggestions and
the curator's report (mounted at the site's root by config/urls.py)."""

from django.urls import path

from retrieval import views

urlpatterns = [
    path("curate/", views.curator_report, name="curator-report"),
    path("feedback", views.page_feedback, name="feedback"),
    path("suggest", views.spelling_suggestion, name="suggest"),
    path("documents/<int:document_id>/", views.document_page, name="document"),
    path(
        "documents/<int:document_id>/original",
        views.document_original,
        name="document-original",
    ),
    path("", views.search_page, name="search"),
]
