"""Reader accounts, the reader search page, feedback, the curator's report, spelling corrections
and the document view, against the real database and pipeline."""

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import override_settings
from django.utils import timezone

from evaluation.cases import make_eval_case
from kb.auth import issue_token
from kb.conf import kb_settings
from kb.models import Document, EvalSuite, Namespace, NamespaceMembership, QueryFeedback, QueryLog
from retrieval.curation import prune_queries, query_report
from retrieval.page import Bar, bar_items, decimals
from retrieval.service import search
from retrieval.spelling import closest, correct_query, edit_distance, surface_form
from tests.corpus import CORPUS, ingest
from tests.retrieval.test_grouping_and_fusion import guide

pytestmark = pytest.mark.django_db


@pytest.fixture
def teams():
    a, _ = ingest("team-a", CORPUS)
    b, _ = ingest("team-b", CORPUS)
    reader = get_user_model().objects.create_user("reader", password="pw-reader-123")
    NamespaceMembership.objects.create(user=reader, namespace=a)
    return a, b, reader


def test_edit_distance_and_closest_are_bounded():
    assert edit_distance("pumpkn", "pumpkin", 2) == 1
    assert edit_distance("abc", "xyzxyz", 2) == 3  # stops at limit + 1
    assert closest("nutmg", [("nutmeg", 1), ("nutshel", 9)]) == ["nutmeg"]
    assert closest("zzzzz", [("nutmeg", 1)]) == []
    # stems one edit away alike are all kept, most frequent first, for their written words to decide
    assert closest("engn", [("engin", 2), ("eng", 5), ("enginee", 9)], keep=5) == ["eng", "engin"]
    assert surface_form("roast", "rost", "Roast the pumpkin, roasting it well") == "roast"
    # a lexeme that lost its accents (French) is shown as the text writes it
    assert (
        surface_form("bibliothequ", "bibliotheqes", "Les bibliothèques partagées")
        == "bibliothèques"
    )
    assert (
        surface_form("noeud", "noued", "Chaque nœud du cœur") == "nœud"
    )  # a ligature the lexeme spells out


def test_correction_comes_from_the_namespaces_own_words(teams):
    a, _, _ = teams
    assert correct_query(a.pk, "nutmg") == "nutmeg"
    assert correct_query(a.pk, "blend the pumpkn") == "blend the pumpkin"
    assert correct_query(a.pk, "pumpkin soup") is None  # every word is known: nothing to correct
    empty = Namespace.objects.create(slug="empty")
    assert correct_query(empty.pk, "nutmg") is None  # another namespace's words are not offered


def test_a_correction_is_the_written_word_nearest_to_what_was_typed():
    """ "engne" stems to `engn`, one edit from `eng` (the abbreviation, more frequent here) and from
    `engin` ("engine"); as written, "engine" is one edit from what was typed and "eng" two."""
    namespace, _ = ingest(
        "engines",
        {
            "abbr": ("Abbreviations", "eng stands for English. eng eng eng eng."),
            "engine": (
                "The search engine",
                "The search engine ranks passages; the engine explains itself.",
            ),
        },
    )
    assert correct_query(namespace.pk, "serch engne") == "search engine"


def test_weak_results_page_asks_for_its_correction_after_it_is_shown(client, teams):
    """A page of weak results does not wait for the spelling check: it carries the address
    page.js asks, and that answers the correction for the namespace the reader may read only."""
    a, b, _ = teams
    client.login(username="reader", password="pw-reader-123")
    page = client.get("/", {"q": "blend the pumpkn", "namespace": "team-a"})
    html = page.content.decode()
    assert page.status_code == 200 and "No strong match" in html
    assert 'data-suggest="/suggest?q=blend+the+pumpkn&amp;namespace=team-a&amp;source="' in html
    assert "Did you mean" not in html  # not computed with the page
    asked = client.get("/suggest", {"q": "blend the pumpkn", "namespace": "team-a"})
    assert asked.status_code == 200 and asked.json() == {"correction": "blend the pumpkin"}
    # another tenant's namespace (same words, the reader is no member) and an unknown one answer
    # alike
    foreign = client.get("/suggest", {"q": "blend the pumpkn", "namespace": "team-b"})
    unknown = client.get("/suggest", {"q": "blend the pumpkn", "namespace": "no-such-team"})
    assert foreign.status_code == unknown.status_code == 200
    assert foreign.json() == unknown.json() == {"correction": None}
    source = a.sources.get()
    assert client.get(
        "/suggest", {"q": "nutmg", "namespace": "team-a", "source": source.pk + 999}
    ).json() == {
        "correction": None
    }  # the correction's words must match within the source asked for
    assert client.get(
        "/suggest", {"q": "nutmg", "namespace": "team-a", "source": source.pk}
    ).json() == {"correction": "nutmeg"}
    assert client.get("/suggest", {"q": "", "namespace": "team-a"}).json() == {"correction": None}


def test_api_answers_the_same_correction_for_apps(client, teams):
    a, _, _ = teams
    _, token = issue_token("app", namespaces=[a])
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    asked = client.get(
        "/api/spelling", {"query": "blend the pumpkn", "namespace": "team-a"}, **auth
    )
    assert asked.status_code == 200 and asked.json() == {"correction": "blend the pumpkin"}
    assert client.get(
        "/api/spelling", {"query": "pumpkin soup", "namespace": "team-a"}, **auth
    ).json() == {"correction": None}
    source = a.sources.get()
    assert client.get(
        "/api/spelling",
        {"query": "nutmg", "namespace": "team-a", "source_ids": source.pk + 999},
        **auth,
    ).json() == {"correction": None}  # its words must match within the sources asked for
    assert client.get(
        "/api/spelling", {"query": "nutmg", "namespace": "team-a", "source_ids": source.pk}, **auth
    ).json() == {"correction": "nutmeg"}
    # another tenant's namespace and an unknown one answer alike, as search does
    foreign = client.get(
        "/api/spelling", {"query": "blend the pumpkn", "namespace": "team-b"}, **auth
    )
    unknown = client.get(
        "/api/spelling", {"query": "blend the pumpkn", "namespace": "no-such-team"}, **auth
    )
    assert foreign.status_code == unknown.status_code == 403
    assert foreign.json()["code"] == unknown.json()["code"] == "KB_FORBIDDEN"
    # staff may name any namespace: a missing one is refused as search refuses it
    client.force_login(
        get_user_model().objects.create_superuser("root", "root@example.org", "pw-root-123")
    )
    missing = {"query": "blend the pumpkn", "namespace": "no-such-team"}
    searched, spelt = client.get("/api/search", missing), client.get("/api/spelling", missing)
    assert (
        spelt.status_code == searched.status_code == 404
        and spelt.json()["code"] == searched.json()["code"]
    )
    empty = client.get("/api/spelling", {"query": " ", "namespace": "team-a"}, **auth)
    assert (
        empty.status_code == 422 and empty.json()["code"] == "SEARCH_EMPTY_QUERY"
    )  # as search answers


def test_explanation_panel_shows_the_scores_rounded(client, teams):
    client.login(username="reader", password="pw-reader-123")
    html = client.get("/", {"q": "pumpkin soup", "namespace": "team-a"}).content.decode()
    top = (
        search("pumpkin soup", "team-a", limit=50, group="document", log=False)
        .documents[0]
        .sections[0]
    )
    assert f"Score {top.relevance:.3f};" in html
    assert f'<span class="value">{top.details.rrf_bonus:.3f}</span>' in html
    assert [decimals(v, 3) for v in (-0.0004, -0.5, 12.3456, 0.0)] == [
        "0.000",
        "-0.500",
        "12.346",
        "0.000",
    ]


def test_explanation_bars_escape_their_text_and_mark_only_signed_negatives():
    bars = [Bar("<b>base</b>", -0.25, 40, 'from "x" & y'), Bar("RRF bonus", 0.5, 80)]
    html = bar_items(bars, signed=True)
    assert (
        "<b>" not in html
        and "&lt;b&gt;base&lt;/b&gt;" in html
        and "from &quot;x&quot; &amp; y" in html
    )
    assert (
        html.count("<li>") == 2 and 'class="bar w40 negative"' in html and 'class="bar w80"' in html
    )
    assert '<span class="value">-0.250</span>' in html
    assert "negative" not in bar_items(bars, signed=False)


def test_reader_session_reads_only_member_namespaces(client, teams):
    client.login(username="reader", password="pw-reader-123")
    assert client.get("/api/search", {"query": "pumpkin", "namespace": "team-a"}).status_code == 200
    denied = client.get("/api/search", {"query": "pumpkin", "namespace": "team-b"})
    assert denied.status_code == 403 and denied.json()["code"] == "KB_FORBIDDEN"
    page = client.get("/", {"q": "pumpkin"})
    assert [ns.slug for ns in page.context["namespaces"]] == ["team-a"]
    other = search("pumpkin", "team-b", limit=1, log=False).hits[0]
    assert client.get(f"/documents/{other.document_id}/").status_code == 404
    mine = search("pumpkin", "team-a", limit=1, log=False).hits[0]
    assert client.get(f"/documents/{mine.document_id}/").status_code == 200
    # what a member reads is never kept by the browser: Back after signing out shows nothing private
    for private in (
        page,
        client.get(f"/documents/{mine.document_id}/"),
        client.get("/api/search", {"query": "pumpkin", "namespace": "team-a"}),
    ):
        assert "no-store" in private["Cache-Control"] and "private" in private["Cache-Control"]
    client.logout()
    assert "no-store" not in client.get("/", {"q": "pumpkin"}).get(
        "Cache-Control", ""
    )  # public reads cache


def _alert(page: str) -> str:
    return re.search(r'<p class="error[^"]*" role="alert">(.*?)</p>', page, re.S).group(1)


def test_anonymous_reader_of_a_private_namespace_is_offered_sign_in(client, teams):
    page = client.get("/", {"q": "pumpkin", "namespace": "team-a"})
    text = page.content.decode()
    assert page.status_code == 401 and "/accounts/login/?next=" in text and "Bearer" not in text
    missing = client.get(
        "/", {"q": "pumpkin", "namespace": "no-such-team"}
    )  # told apart by nothing
    assert missing.status_code == 401
    assert _alert(missing.content.decode()) == _alert(text).replace("team-a", "no-such-team")
    assert "private, or there is none of that name" in _alert(text)
    nothing_public = client.get(
        "/", {"q": "pumpkin"}
    )  # no namespace chosen, none public to default to
    assert nothing_public.status_code == 401
    assert _alert(nothing_public.content.decode()).startswith(
        "No collection here is public. <a href="
    )
    login = client.get("/accounts/login/")
    assert login.status_code == 200 and b'name="password"' in login.content
    assert client.get("/accounts/password_reset/").status_code == 200


def test_a_shared_document_link_offers_a_signed_out_reader_sign_in(client, teams):
    """A member opens a colleague's link to a passage while signed out: the page says the
    document is private or missing (one page for both) and offers sign-in back to it."""
    mine = search("pumpkin", "team-a", limit=1, log=False).hits[0]
    page = client.get(f"/documents/{mine.document_id}/")
    text = page.content.decode()
    assert page.status_code == 404 and 'rel="stylesheet"' in text
    assert f'href="/accounts/login/?next=/documents/{mine.document_id}/"' in text
    missing = client.get("/documents/999999/").content.decode()
    assert _alert(missing).replace("999999", "N") == _alert(text).replace(
        str(mine.document_id), "N"
    )
    client.login(username="reader", password="pw-reader-123")
    assert client.get(f"/documents/{mine.document_id}/").status_code == 200


def test_staff_rules_are_unchanged(client, teams):
    staff = get_user_model().objects.create_user("editor", password="pw-editor-123", is_staff=True)
    NamespaceMembership.objects.create(user=staff, namespace=teams[1])
    client.login(username="editor", password="pw-editor-123")
    assert client.get("/api/search", {"query": "pumpkin", "namespace": "team-b"}).status_code == 200
    assert client.get("/api/search", {"query": "pumpkin", "namespace": "team-a"}).status_code == 403


def test_the_curators_pages_send_the_signed_out_to_sign_in_and_tell_a_reader_they_are_for_staff(
    client, teams
):
    for path in ("/curate/?namespace=team-a", "/curate/eval-case"):
        answer = (
            client.get(path)
            if path.startswith("/curate/?")
            else client.post(path, {"namespace": "team-a"})
        )
        assert answer.status_code == 302 and answer["Location"].startswith(
            "/accounts/login/?next=/curate/"
        )
    client.login(username="reader", password="pw-reader-123")
    page = client.get("/curate/", {"namespace": "team-a"})
    assert (
        page.status_code == 403
        and "For staff" in page.content.decode()
        and "reader" in page.content.decode()
    )
    assert (
        client.post("/curate/eval-case", {"namespace": "team-a", "query": "1"}).status_code == 403
    )
    assert not EvalSuite.objects.exists()
    get_user_model().objects.filter(username="reader").update(is_staff=True)
    assert client.get("/curate/", {"namespace": "team-a"}).status_code == 200


@override_settings(KB_DEFAULT_NAMESPACE="team-b")
def test_default_namespace_setting_and_source_filter_follow_the_namespace(client, teams):
    kb_settings.cache_clear()
    try:
        Namespace.objects.filter(slug__in=["team-a", "team-b"]).update(is_public=True)
        page = client.get("/")
        assert page.context["namespace"] == "team-b"
        source_a = teams[0].sources.get().pk
        page = client.get("/", {"q": "pumpkin", "namespace": "team-b", "source": source_a})
        assert page.context["source_id"] == "" and page.context["results"]["rows"]  # not 0 results
    finally:
        kb_settings.cache_clear()


def test_feedback_api_and_page_record_one_vote_per_result(client, teams):
    Namespace.objects.filter(slug="team-a").update(is_public=True)
    found = client.get("/api/search", {"query": "roast pumpkin soup", "namespace": "team-a"}).json()
    assert found["query_id"] and {
        "summary",
        "dropped",
        "weak_titles",
        "suggested",
        "related",
    } <= set(found)
    chunk = found["results"][0]["chunk_id"]
    vote = client.post(
        "/api/feedback",
        {"query_id": found["query_id"], "chunk_id": chunk, "helpful": True},
        content_type="application/json",
    )
    assert vote.status_code == 200 and vote.json()["helpful"] is True
    again = client.post(
        "/feedback",
        {
            "query_id": found["query_id"],
            "chunk_id": chunk,
            "helpful": "0",
            "next": "/?q=roast+pumpkin+soup&namespace=team-a",
        },
    )
    assert again.status_code == 302
    logged = QueryLog.objects.count()
    back = client.get(again["Location"])
    assert back.status_code == 200 and "Thank you" in back.content.decode()
    assert QueryLog.objects.count() == logged  # coming back from a vote logs no second search
    assert QueryFeedback.objects.get().helpful is False  # voting again replaces the vote
    stranger = client.post(
        "/api/feedback",
        {"query_id": found["query_id"], "chunk_id": 999999, "helpful": True},
        content_type="application/json",
    )
    assert stranger.status_code == 400 and stranger.json()["code"] == "SEARCH_FEEDBACK_NOT_A_RESULT"
    private = search("pumpkin", "team-b", limit=1)
    hidden = client.post(
        "/api/feedback",
        {"query_id": private.query_id, "chunk_id": private.hits[0].chunk_id, "helpful": True},
        content_type="application/json",
    )
    missing = client.post(
        "/api/feedback",
        {"query_id": 10**9, "chunk_id": 1, "helpful": True},
        content_type="application/json",
    )
    assert hidden.status_code == missing.status_code == 404 and hidden.json() == {
        **missing.json(),
        "message": hidden.json()["message"],
    }


def test_report_counts_trends_zero_and_weak_queries(teams):
    a = teams[0]
    for _ in range(3):
        search("Pumpkin soup ", "team-a", limit=3)
    search("pumpkin soup", "team-a", limit=3)
    old = search("pumpkin soup", "team-a", limit=3)
    QueryLog.objects.filter(pk=old.query_id).update(created_at=timezone.now() - timedelta(days=10))
    QueryLog.objects.create(namespace=a, query="quantum gravity", result_ids=[], top_cosine=None)
    report = query_report(a, 7)
    top = {r.query: r for r in report["top"]}
    assert top["pumpkin soup"].count == 4 and top["pumpkin soup"].previous == 1
    assert top["pumpkin soup"].trend == "+300%"
    assert [r.query for r in report["zero"]] == ["quantum gravity"]
    assert prune_queries(7) == 1 and QueryLog.objects.filter(namespace=a).count() == 5
    # weak: no strong match (as the search said, whatever the cosine), or an older row's low cosine
    QueryLog.objects.create(
        namespace=a, query="words alone", result_ids=[1], top_cosine=None, strong=False
    )
    QueryLog.objects.create(
        namespace=a, query="close enough", result_ids=[1], top_cosine=0.2, strong=True
    )
    QueryLog.objects.create(
        namespace=a, query="logged before", result_ids=[1], top_cosine=0.2, strong=None
    )
    assert {r.query for r in query_report(a, 7)["weak"]} == {"words alone", "logged before"}


def test_a_query_becomes_a_judged_case_that_runs(teams):
    from evaluation.runner import run_suite
    from evaluation.suites import parse_suite

    suite, case_id = make_eval_case(teams[0], "roast pumpkin soup", ["pumpkin"], ["garden"])
    suite, _ = make_eval_case(
        teams[0], "roast pumpkin soup", ["pumpkin"], []
    )  # replaces, not duplicates
    assert EvalSuite.objects.count() == 1 and len(suite.definition["cases"]) == 1
    outcome = run_suite(parse_suite(suite.definition))
    assert (
        outcome.cases[0].id == case_id
        and outcome.cases[0].passed
        and outcome.cases[0].recall == 1.0
    )


def test_one_click_on_the_report_makes_a_case_judged_by_the_votes(client, teams):
    a = teams[0]
    staff = get_user_model().objects.create_superuser("curator", "c@example.com", "pw-curator-123")
    client.force_login(staff)
    voted = search("roast pumpkin soup", "team-a", limit=5)
    second = voted.hits[1]
    QueryFeedback.objects.create(
        query_log_id=voted.query_id,
        chunk_id=second.chunk_id,
        document_id=second.document_id,
        helpful=True,
    )
    unvoted = search("nutmeg", "team-a", limit=5)
    nothing = QueryLog.objects.create(
        namespace=a, query="quantum gravity", result_ids=[], top_cosine=None
    )
    report = client.get("/curate/", {"namespace": "team-a", "days": 7}).content.decode()
    assert f'name="query" value="{voted.query_id}"' in report and 'class="to-eval"' in report

    def click(log_id):
        return client.post(
            "/curate/eval-case", {"namespace": "team-a", "days": "7", "query": str(log_id)}
        )

    assert "made=" in click(voted.query_id)["Location"]
    assert "made=" in click(unvoted.query_id)["Location"]
    cases = {c["question"]: c["expect"] for c in EvalSuite.objects.get().definition["cases"]}
    refs = dict(Document.objects.values_list("pk", "ref"))
    assert cases["roast pumpkin soup"]["relevant"] == [
        refs[second.document_id]
    ]  # the useful one, not the top
    assert cases["nutmeg"]["relevant"] == [
        refs[unvoted.hits[0].document_id]
    ]  # no vote: the top result
    assert click(nothing.pk)["Location"].endswith(
        f"query={nothing.pk}#case-h"
    )  # nothing came back: review
    foreign = search("pumpkin", "team-b", limit=1)
    assert (
        click(foreign.query_id).status_code == 404
    )  # another namespace's search is no search of this one


def test_document_view_renders_markdown_without_stripping_code(client):
    namespace, _ = ingest("docs", CORPUS)
    Namespace.objects.filter(pk=namespace.pk).update(is_public=True)
    guide(namespace)
    from ingest.loaders import LoadedItem
    from ingest.pipeline import IngestPipeline
    from kb.models import IngestRun, Source

    source = Source.objects.create(namespace=namespace, name="c", kind="text", text="x")
    body = "# C notes\n\n## Hello {#hello}\n\n```c\n#include <stdio.h>\n```\n\n> quoted **bold**\n"
    IngestPipeline(IngestRun.objects.create(source=source)).execute(
        [LoadedItem(ref="c.md", body=body.encode(), media_type="text/markdown", path="c.md")]
    )
    hit = next(
        h for h in search("include stdio", "docs", limit=10, log=False).hits if h.title == "C notes"
    )
    page = client.get(hit.citation_url.split("#")[0]).content.decode()
    assert "#include &lt;stdio.h&gt;" in page and '<code class="language-c">' in page
    assert f'id="passage-{hit.chunk_id}"' in page and 'id="hello"' in page
    assert '<pre class="text">' not in page


@pytest.mark.parametrize("word", ["tube", "signal", "mémoire", "fichier"])
def test_a_snippet_opens_and_closes_on_whole_words(word):
    """Around a word deep in a real French manual page, the snippet's window starts and ends
    between words, never inside one ("…rifient l'étanchéité…")."""
    from html import unescape
    from pathlib import Path

    from ingest.extract import extract
    from retrieval.presenters import plain_text, snippet

    page = Path(__file__).resolve().parents[1] / "fixtures/real/languages/user-space.fr-FR.html"
    text = extract(page.read_bytes(), "text/html", charset="utf-8").content
    body = " ".join(plain_text(text.split("\n\n", 1)[1]).split())
    shown = unescape(re.sub(r"</?mark>", "", snippet(text, [word.lower()])))
    assert shown.startswith("…") and shown.endswith("…"), shown  # a window inside the page
    window = shown[1:-1]
    at = body.index(window)
    assert body[at - 1] == " " and body[at + len(window)] == " ", window
    assert word.lower() in window.lower()


def test_a_snippet_of_a_table_reads_its_cells_not_its_pipes():
    """The readers' page's own spelling table, as its chunk stores it: a reader sees the cells."""
    from html import unescape

    from retrieval.presenters import snippet

    text = (
        "Readers > The search page\n\n| questions | misspelt | correction offered "
        "|\n|---|---|:---:|\n"
        "| `evals/demo.json` (demo namespace) | 9 | **6** |\n\nMeasured with kb_spelling_bench."
    )
    shown = unescape(re.sub(r"</?mark>", "", snippet(text, ["misspelt"])))
    assert shown == (
        "questions · misspelt · correction offered; evals/demo.json (demo namespace) · 9 · 6; "
        "Measured with kb_spelling_bench."
    )
    for prose in (
        "A | B is prose.",
        "|x| is the absolute value of x.",
    ):  # pipes in prose stay prose
        assert unescape(re.sub(r"</?mark>", "", snippet(prose, ["prose", "absolut"]))) == prose
    # emphasis marks go, code keeps every character (a new user read "date.strftime(*format*)")
    shown = snippet(
        "Guide\n\ndate.strftime(*format*), see *coding style*; `f(*args, **kw)`; 2*3 and a * b",
        ["strftim"],
    )
    assert (
        unescape(re.sub(r"</?mark>", "", shown))
        == "date.strftime(format), see coding style; f(*args, **kw); 2*3 and a * b"
    )
    assert (
        unescape(snippet("Code\n\n```py\ndef f(*args, **kwargs):\n```", ["zzz"]))
        == "def f(*args, **kwargs):"
    )
    # a pipe inside a cell, escaped as the document extractors write it, stays in its cell
    assert (
        unescape(snippet("Sheet\n\n| a \\| b | c |", ["c"])).replace("<mark>c</mark>", "c")
        == "a | b · c;"
    )
