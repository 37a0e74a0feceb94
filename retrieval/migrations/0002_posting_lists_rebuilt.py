"""Build the packed posting lists again (retrieval/posting_lists.py) for the namespaces large
enough for them, after kb's migration 0031 dropped the lists of the old layout. Building takes
75 s to 12 minutes per million chunks on the development machine, as the postings are
cached or read from disk. Not atomic: each namespace's build commits alone, so a namespace's
writes wait for its own build only and a failed build leaves the others in force (the failed
one is read from the postings table until an ingest run or `kb_posting_lists --ensure` builds
it). Each build logs what it did."""

from django.db import migrations


def build_posting_lists(apps, schema_editor):
    from kb.conf import kb_settings
    from retrieval.posting_lists import ensure

    Namespace = apps.get_model("kb", "Namespace")
    for namespace_id in Namespace.objects.values_list("id", flat=True):
        ensure(namespace_id, kb_settings().posting_lists_min_chunks)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("retrieval", "0001_namespace_vector_indexes"),
        ("kb", "0031_posting_list_lengths_per_namespace"),
    ]

    operations = [
        migrations.RunPython(build_posting_lists, migrations.RunPython.noop),
    ]
