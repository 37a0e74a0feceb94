from django.apps import AppConfig


class KbConfig(AppConfig):
    name = "kb"
    verbose_name = "Knowledge base"

    def ready(self) -> None:
        from django.contrib import admin

        from kb.admin import lock_down_unscoped
        from kb.lexing import on_namespaces_changed
        from kb.signals import namespaces_changed

        lock_down_unscoped(admin.site)
        namespaces_changed.connect(on_namespaces_changed, dispatch_uid="kb.lexing")
