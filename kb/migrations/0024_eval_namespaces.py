"""Eval suites and runs belong to a namespace: a real foreign key instead of a free-text slug,
so the console can scope them like everything else. A suite's old slug (or, without one, the
namespace every case of its definition names) becomes the key; a suite naming none, or one
that does not exist, keeps no namespace and is left to superusers."""

import django.db.models.deletion
from django.db import migrations, models


def link(apps, schema_editor):
    EvalSuite = apps.get_model("kb", "EvalSuite")
    EvalRun = apps.get_model("kb", "EvalRun")
    Namespace = apps.get_model("kb", "Namespace")
    for suite in EvalSuite.objects.all():
        slug = suite.namespace_slug or _single_namespace(suite.definition)
        namespace = Namespace.objects.filter(slug=slug).first() if slug else None
        if namespace is not None:
            suite.namespace = namespace
            suite.save(update_fields=["namespace"])
            EvalRun.objects.filter(suite=suite).update(namespace=namespace)


def _single_namespace(definition) -> str | None:
    if not isinstance(definition, dict):
        return None
    default = (
        (definition.get("defaults") or {}).get("namespace")
        if isinstance(definition.get("defaults"), dict)
        else None
    )
    cases = definition.get("cases") if isinstance(definition.get("cases"), list) else []
    named = {c.get("namespace", default) for c in cases if isinstance(c, dict)}
    return named.pop() if len(named) == 1 and isinstance(next(iter(named)), str) else None


class Migration(migrations.Migration):
    dependencies = [("kb", "0023_querylog_caller")]

    operations = [
        migrations.RenameField("evalsuite", "namespace", "namespace_slug"),
        migrations.AddField(
            model_name="evalsuite",
            name="namespace",
            field=models.ForeignKey(
                help_text="Every case searches this namespace (the file's own namespaces are overridden). "
                "A suite without one, from before suites had an owner, is a superuser's.",
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="eval_suites",
                to="kb.namespace",
            ),
        ),
        migrations.AddField(
            model_name="evalrun",
            name="namespace",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="eval_runs",
                to="kb.namespace",
            ),
        ),
        migrations.RunPython(link, migrations.RunPython.noop),
        migrations.RemoveField("evalsuite", "namespace_slug"),
    ]
