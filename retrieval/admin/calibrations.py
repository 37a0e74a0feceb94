"""The console's fusion calibrations: fitted weights, shown and deleted, never typed in."""

from django.contrib import admin

from kb import models
from kb.admin_access import NamespaceScoped


@admin.register(models.FusionCalibration)
class FusionCalibrationAdmin(NamespaceScoped):
    """Fitted by `kb_bench` or `kb_eval --fit`, never typed in; deleting one returns the
    namespace to the default weights."""

    list_display = [
        "namespace",
        "lexical_weight",
        "fitted_on",
        "queries",
        "cross_validated_ndcg",
        "default_ndcg",
        "version",
        "fitted_at",
    ]
    readonly_fields = list_display

    def has_add_permission(self, request):
        return False
