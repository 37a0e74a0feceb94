from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class ConsoleAdminConfig(admin_apps.AdminConfig):
    """django.contrib.admin with the console's own site, whose "view on site" shortcut is scoped
    to what the curator may read (`kb.admin_site.ConsoleSite`). Named in INSTALLED_APPS in its
    place; not the "kb" app's configuration (that is KbConfig)."""

    default = False
    default_site = "kb.admin_site.ConsoleSite"


class KbConfig(AppConfig):
    name = "kb"
    verbose_name = "Knowledge base"

    def ready(self) -> None:
        from django.contrib import admin

        from kb.admin import lock_down_unscoped
        from kb.audiences import reconcile
        from kb.identity import signins
        from kb.lexing import Relexed, count_languages
        from kb.passage_models import count_models
        from kb.signals import keep_counted

        lock_down_unscoped(admin.site)
        signins.connect()  # the sign-in log
        # a relex counts the languages itself, and moves no vector
        keep_counted(count_languages, "languages", uid="kb.lexing", unless_sent_by=Relexed)
        keep_counted(
            count_models, "embedding models", uid="kb.passage_models", unless_sent_by=Relexed
        )
        # documents a run wrote while their source's audience changed take it at the run's end
        keep_counted(reconcile, "audiences", uid="kb.audiences")
