"""The evaluation's page: a bad answer made into an eval case (mounted by config/urls.py)."""

from django.urls import path

from evaluation import views

urlpatterns = [
    path("curate/eval-case", views.make_eval_case_page, name="curator-eval-case"),
]
