"""From the curator's report to a run of the suite, as a curator clicks through it: the message
after "Make eval case" links the suite, and the suite's own page has Run now (docs/evals.md)."""

import re

import pytest
from django.contrib.auth import get_user_model

from kb.models import EvalRun, EvalSuite
from tests.corpus import CORPUS, ingest

pytestmark = pytest.mark.django_db


@pytest.fixture
def curator(client):
    client.force_login(
        get_user_model().objects.create_superuser("curator", "c@example.com", "pw-curator-123")
    )
    return client


def test_the_made_message_links_the_suite_whose_page_runs_it(curator):
    ingest("team-a", CORPUS)
    ref = next(iter(CORPUS))
    made = curator.post(
        "/curate/eval-case",
        {"namespace": "team-a", "days": "7", "question": CORPUS[ref][0], "relevant": [ref]},
        follow=True,
    )
    suite = EvalSuite.objects.get()
    page = made.content.decode()
    assert "Eval case added" in page and f'href="/admin/kb/evalsuite/{suite.pk}/change/"' in page, (
        page[-2000:]
    )

    suite_page = curator.get(f"/admin/kb/evalsuite/{suite.pk}/change/").content.decode()
    button = re.search(
        r'<form method="post" action="([^"]+)"[^>]*>\s*<input[^>]*csrf[^>]*>\s*'
        r'<button type="submit" class="button kb-run-now">Run now</button>',
        suite_page,
    )
    assert button and button.group(1) == f"/admin/kb/evalsuite/{suite.pk}/run/", suite_page[:4000]
    ran = curator.post(button.group(1), follow=True)
    run = EvalRun.objects.get(suite=suite)
    assert ran.redirect_chain[-1][0] == f"/admin/kb/evalsuite/{suite.pk}/change/"
    assert (
        f'href="/admin/kb/evalrun/{run.pk}/change/">{run.passed} of {run.total} passed</a>'
        in ran.content.decode()
    )
    assert curator.get(button.group(1)).status_code == 405  # a run is recorded by a POST only
