"""Every model change ships with its migration: a field whose help text or type changed without
one leaves a deployment's `migrate` silently behind the code."""

from io import StringIO

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_the_models_match_their_migrations():
    out = StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out)
    except SystemExit:
        pytest.fail(f"a model changed without a migration:\n{out.getvalue()}")
