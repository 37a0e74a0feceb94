"""Build the per-namespace HNSW indexes (retrieval/vector_index.py) for the namespaces that
exist when kb's shared chunk index is dropped (kb migration 0010). Building is idempotent: a
namespace that has its index keeps it, one too small for an index gets none."""

from django.db import migrations


def build_namespace_indexes(apps, schema_editor):
    from kb.conf import kb_settings
    from retrieval.vector_index import ensure_namespace_index

    Namespace = apps.get_model("kb", "Namespace")
    for namespace_id in Namespace.objects.values_list("id", flat=True):
        ensure_namespace_index(namespace_id, kb_settings().vector_index_min_chunks)


def drop_namespace_indexes(apps, schema_editor):
    from retrieval.vector_index import drop_namespace_index, namespace_indexes

    for namespace_id in namespace_indexes():
        drop_namespace_index(namespace_id)


class Migration(migrations.Migration):
    dependencies = [
        ("kb", "0010_namespace_vector_indexes"),
    ]

    operations = [
        migrations.RunPython(build_namespace_indexes, drop_namespace_indexes),
    ]
