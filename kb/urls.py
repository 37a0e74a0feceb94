from django.contrib import admin
from django.urls import path

from kb import views
from kb.api import api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("healthz", views.healthz, name="healthz"),
    path("", views.search_page, name="search"),
]
