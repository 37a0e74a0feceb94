"""The console's admin site: Django's, with its "view on site" shortcut scoped to what the curator
may read."""

from django.contrib import admin
from django.contrib.contenttypes import views as contenttype_views
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import ValidationError
from django.http import Http404
from django.urls import path


class ConsoleSite(admin.AdminSite):
    """Django's admin site with its "view on site" shortcut (`r/<content type>/<id>/`) scoped:
    Django's
    looks the object up among every tenant's and answers a missing id otherwise than an existing one
    (with DEBUG on, in words), which told a member which ids exist. Installed as the default site by
    `kb.apps.ConsoleAdminConfig`."""

    def get_urls(self):
        shortcut = path(
            "r/<int:content_type_id>/<path:object_id>/",
            self.admin_view(self.view_on_site),
            name="view_on_site",
        )
        return [
            shortcut if getattr(url, "name", None) == "view_on_site" else url
            for url in super().get_urls()
        ]

    def view_on_site(self, request, content_type_id, object_id):
        """Django's shortcut for an object the curator may read; one answer for every other id,
        another tenant's or none."""
        nowhere = Http404("No page on the site for this object.")
        try:
            model = ContentType.objects.get_for_id(content_type_id).model_class()
        except ContentType.DoesNotExist:
            raise nowhere from None
        model_admin = self._registry.get(model)
        if model_admin is None or not model_admin.has_view_permission(request):
            raise nowhere
        try:
            obj = model_admin.get_queryset(request).filter(pk=object_id).first()
        except (ValueError, ValidationError):
            raise nowhere from None
        if (
            obj is None
            or not model_admin.has_view_permission(request, obj)
            or not hasattr(obj, "get_absolute_url")
        ):
            raise nowhere
        return contenttype_views.shortcut(request, content_type_id, object_id)
