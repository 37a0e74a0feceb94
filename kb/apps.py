from django.apps import AppConfig


class KbConfig(AppConfig):
    name = "kb"
    verbose_name = "Knowledge base"

    def ready(self) -> None:
        from django.db.models.signals import post_delete

        from django.contrib import admin

        from kb.admin import lock_down_unscoped
        from kb.models import Namespace

        lock_down_unscoped(admin.site)
        post_delete.connect(_drop_vector_index, sender=Namespace, dispatch_uid="kb.drop_vector_index")


def _drop_vector_index(sender, instance, **kwargs) -> None:
    """A deleted namespace's vector index goes with it, once the deletion commits."""
    from kb.vector_index import drop_after_commit

    drop_after_commit(instance.pk)
