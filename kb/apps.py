from django.apps import AppConfig


class KbConfig(AppConfig):
    name = "kb"
    verbose_name = "Knowledge base"

    def ready(self) -> None:
        from django.contrib import admin
        from django.db.models.signals import post_delete

        from kb.admin import lock_down_unscoped
        from kb.lexing import on_namespaces_changed, on_source_deleted
        from kb.models import Source
        from kb.passage_models import on_namespaces_changed as count_models
        from kb.passage_models import on_source_deleted as models_leave
        from kb.signals import namespaces_changed

        lock_down_unscoped(admin.site)
        namespaces_changed.connect(on_namespaces_changed, dispatch_uid="kb.lexing")
        post_delete.connect(on_source_deleted, sender=Source, dispatch_uid="kb.lexing.source")
        namespaces_changed.connect(count_models, dispatch_uid="kb.passage_models")
        post_delete.connect(models_leave, sender=Source, dispatch_uid="kb.passage_models.source")
