from django.apps import AppConfig


class RetrievalConfig(AppConfig):
    name = "retrieval"
    verbose_name = "Retrieval"

    def ready(self) -> None:
        from django.db.models.signals import post_delete

        from kb.models import Namespace
        from kb.signals import namespaces_changed
        from retrieval.indexes import on_namespace_deleted, on_namespaces_changed

        namespaces_changed.connect(on_namespaces_changed, dispatch_uid="retrieval.indexes")
        post_delete.connect(
            on_namespace_deleted, sender=Namespace, dispatch_uid="retrieval.drop_vector_index"
        )
