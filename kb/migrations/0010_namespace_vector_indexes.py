"""Replace the table-wide HNSW index with one partial HNSW index per large namespace: a
namespace that is a small share of the table was searched by an exact scan, because a filtered
walk of the shared graph visits mostly foreign rows. The per-namespace indexes are retrieval's
(retrieval/vector_index.py); its migration 0001 builds them for the namespaces that exist."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("kb", "0009_document_name_trigram_index"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="chunk", name="chunk_embedding_hnsw"),
    ]
