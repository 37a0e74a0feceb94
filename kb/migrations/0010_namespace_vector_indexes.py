"""Replace the table-wide HNSW index with one partial HNSW index per large namespace
(kb/vector_index.py): a namespace that is a small share of the table was searched by an exact
scan, because a filtered walk of the shared graph visits mostly foreign rows."""

from django.db import migrations


def build_namespace_indexes(apps, schema_editor):
    from kb.conf import kb_settings
    from kb.vector_index import ensure_namespace_index

    Namespace = apps.get_model("kb", "Namespace")
    for namespace_id in Namespace.objects.values_list("id", flat=True):
        ensure_namespace_index(namespace_id, kb_settings().vector_index_min_chunks)


def drop_namespace_indexes(apps, schema_editor):
    from kb.vector_index import drop_namespace_index, namespace_indexes

    for namespace_id in namespace_indexes():
        drop_namespace_index(namespace_id)


class Migration(migrations.Migration):

    dependencies = [
        ("kb", "0009_document_name_trigram_index"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="chunk", name="chunk_embedding_hnsw"),
        migrations.RunPython(build_namespace_indexes, drop_namespace_indexes),
    ]
