"""Each namespace counts its passages per text search configuration: its queries are lexed with
the configurations its passages have (kb.languages.query_configs), whatever the setting says."""

from django.db import migrations, models

COUNT = """
UPDATE kb_namespace n SET passage_configs = coalesce((SELECT jsonb_object_agg(search_config, c) FROM
    (SELECT search_config, count(*) AS c FROM kb_chunk WHERE namespace_id = n.id GROUP BY 1) counted), '{}'::jsonb);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("kb", "0029_language_functions_restorable"),
    ]

    operations = [
        migrations.AddField(
            model_name="namespace",
            name="passage_configs",
            field=models.JSONField(
                blank=True,
                default=dict,
                editable=False,
                help_text="How many of its passages each text search configuration lexes: what its queries are "
                "lexed with.",
            ),
        ),
        migrations.RunSQL(COUNT, migrations.RunSQL.noop),
    ]
