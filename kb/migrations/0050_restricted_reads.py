# The access log of restricted documents (issue #61, item 4): who read which document with an audience.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("kb", "0049_audiences"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="RestrictedRead",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("at", models.DateTimeField(auto_now_add=True, db_index=True)),
                (
                    "surface",
                    models.CharField(
                        choices=[
                            ("page", "Document page"),
                            ("api", "API"),
                            ("mcp", "MCP"),
                            ("answer", "Answer"),
                        ],
                        max_length=8,
                    ),
                ),
                (
                    "username",
                    models.CharField(
                        blank=True, help_text="The account's name at the read.", max_length=150
                    ),
                ),
                (
                    "token_name",
                    models.CharField(
                        blank=True,
                        help_text="The token's name and prefix at the read.",
                        max_length=120,
                    ),
                ),
                ("document_number", models.BigIntegerField(help_text="The document's id.")),
                ("title", models.CharField(blank=True, max_length=500)),
                ("namespace", models.CharField(max_length=128)),
                (
                    "address",
                    models.CharField(
                        blank=True,
                        help_text="The client's address (an IPv6 client's /64).",
                        max_length=64,
                    ),
                ),
                (
                    "token",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="kb.apitoken",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "verbose_name": "restricted read",
                "ordering": ["-at"],
            },
        ),
    ]
