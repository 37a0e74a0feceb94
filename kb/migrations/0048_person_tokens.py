# Person tokens (issue #61): an API token may act for a user, and any token may expire.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("kb", "0047_identity"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="expires_at",
            field=models.DateTimeField(
                blank=True,
                help_text="From then on the token answers as an unknown one does; empty: it does not expire.",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="apitoken",
            name="user",
            field=models.ForeignKey(
                blank=True,
                help_text="A person token acts for this account: its current memberships (and public namespaces), refused once the account is deactivated. Empty: a namespace token.",
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="kb_tokens",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AlterField(
            model_name="apitoken",
            name="namespaces",
            field=models.ManyToManyField(
                blank=True,
                help_text="A namespace token's namespaces; a person token has none (it reads what its owner reads).",
                related_name="tokens",
                to="kb.namespace",
            ),
        ),
    ]
