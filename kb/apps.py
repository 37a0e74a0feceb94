from django.apps import AppConfig


class KbConfig(AppConfig):
    name = "kb"
    verbose_name = "Knowledge base"

    def ready(self) -> None:
        from django.contrib import admin

        from kb.admin import lock_down_unscoped

        lock_down_unscoped(admin.site)
