"""A curator turns a bad answer of the answer log into an answer case, through the real admin: the
answer is made by the real answer path (a scripted model server), the case is added from the
answer's
page, and the suite's "Run now" asks the question again and fails or passes on the case. A reader of
the namespace may read the answer but not make a case of it."""

import pytest
from django.contrib.auth import get_user_model

from answers.service import answer_events, final_state
from kb.auth import Principal
from kb.models import EvalRun, EvalSuite, Namespace, NamespaceMembership
from tests.answers.scripted_model import Reply
from tests.corpus import ingest

pytestmark = pytest.mark.django_db

QUESTION = "how long should I roast pumpkin for soup"
WRONG = Reply(text=["Pumpkins fly to the moon on Tuesdays [1]."])
RIGHT = Reply(text=["Roast the pumpkin, then blend it with stock and cream [1]."])


def logged_answer() -> int:
    state = final_state(
        answer_events(Principal("staff", can_write=True), ["tenant:a"], QUESTION, stream=False)
    )
    return state["answer_id"]


def member(client, slug: str, *, write: bool, name: str = "curator"):
    user = get_user_model().objects.create_user(
        name, f"{name}@example.org", "pw-curator-123", is_staff=True
    )
    NamespaceMembership.objects.create(
        user=user, namespace=Namespace.objects.get(slug=slug), can_write=write
    )
    client.force_login(user)


def make_case(client, answer_id: int, **fields):
    return client.post(
        f"/admin/kb/evalsuite/from-answer/{answer_id}/", {"expect": "cite", **fields}
    )


def test_a_curator_makes_a_bad_answer_a_case_that_fails_until_the_answer_cites_its_document(
    corpus, answer_model, client
):
    model = answer_model([WRONG])
    answer_id = logged_answer()
    member(client, "tenant:a", write=True)
    page = client.get(f"/admin/kb/answerlog/{answer_id}/change/")
    assert page.status_code == 200 and b"Make an eval case" in page.content
    form = client.get(f"/admin/kb/evalsuite/from-answer/{answer_id}/")
    assert form.status_code == 200
    assert (
        b'value="pumpkin"' in form.content
        and b"tenant:a \xc2\xb7 answer cases (tenant:a, new)" in form.content
    )

    response = make_case(client, answer_id, suite="new:tenant:a", document="pumpkin")
    suite = EvalSuite.objects.get(namespace__slug="tenant:a")
    assert (
        response.status_code == 302
        and response["Location"] == f"/admin/kb/evalsuite/{suite.pk}/change/"
    )
    assert suite.name == "tenant:a · answer cases"
    assert suite.definition["cases"] == [
        {
            "id": "answer-how-long-should-i-roast-pumpkin-for-soup",
            "question": QUESTION,
            "expect": {"mustCite": "pumpkin"},
        }
    ]

    assert client.post(f"/admin/kb/evalsuite/{suite.pk}/run/").status_code == 302
    failed = EvalRun.objects.get(suite=suite)
    assert (failed.passed, failed.failed) == (0, 1)
    assert failed.results["cases"][0]["checks"][0]["name"] == "mustCite"
    model.replies = [RIGHT]  # the model (or the knowledge base) is fixed: the same case passes
    client.post(f"/admin/kb/evalsuite/{suite.pk}/run/")
    passed = EvalRun.objects.filter(suite=suite).first()
    assert (passed.passed, passed.failed) == (1, 0)
    assert (
        len(model.requests) == 3
    )  # the logged answer, then one per run: each run asked the model again


def test_must_abstain_goes_into_an_existing_suite_and_replaces_the_same_questions_case(
    corpus, answer_model, client
):
    answer_model([WRONG])
    answer_id = logged_answer()
    member(client, "tenant:a", write=True)
    make_case(client, answer_id, suite="new:tenant:a", document="pumpkin")
    suite = EvalSuite.objects.get()
    response = make_case(client, answer_id, suite=f"suite:{suite.pk}", expect="abstain")
    assert response.status_code == 302
    suite.refresh_from_db()
    assert [case["expect"] for case in suite.definition["cases"]] == [{"mustAbstain": True}]


def test_a_reader_of_the_namespace_reads_the_answer_but_makes_no_case(corpus, answer_model, client):
    answer_model([WRONG])
    answer_id = logged_answer()
    member(client, "tenant:a", write=False, name="reader")
    page = client.get(f"/admin/kb/answerlog/{answer_id}/change/")
    assert page.status_code == 200 and b"Make an eval case" not in page.content
    assert client.get(f"/admin/kb/evalsuite/from-answer/{answer_id}/").status_code == 403
    assert make_case(client, answer_id, suite="new:tenant:a", document="pumpkin").status_code == 403
    assert not EvalSuite.objects.exists()


def test_a_curator_of_another_namespace_finds_no_such_answer(corpus, answer_model, client):
    answer_model([WRONG])
    answer_id = logged_answer()
    Namespace.objects.create(slug="tenant:b")
    member(client, "tenant:b", write=True)
    assert client.get(f"/admin/kb/evalsuite/from-answer/{answer_id}/").status_code == 404
    assert make_case(client, answer_id, suite="new:tenant:b", expect="abstain").status_code == 404
    assert not EvalSuite.objects.exists()


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"ref": "secret"}, "No document &#x27;secret&#x27; in &#x27;tenant:a&#x27;"),
        ({}, "Pick the document the answer must cite, or ask it to abstain."),
        ({"suite": "new:tenant:b", "expect": "abstain"}, "Select a valid choice."),
    ],
    ids=["another-namespaces-document", "no-document", "a-namespace-the-answer-did-not-search"],
)
def test_a_case_the_suite_could_not_run_is_refused_with_the_reason(
    corpus, answer_model, client, fields, message
):
    ingest(
        "tenant:b", {"secret": ("Pumpkin secret", "The secret pumpkin soup recipe of tenant B.")}
    )
    answer_model([WRONG])
    answer_id = logged_answer()
    member(client, "tenant:a", write=True)
    NamespaceMembership.objects.create(
        user=get_user_model().objects.get(username="curator"),
        namespace=Namespace.objects.get(slug="tenant:b"),
        can_write=True,
    )
    response = make_case(client, answer_id, **{"suite": "new:tenant:a", **fields})
    assert response.status_code == 200 and message in response.content.decode()
    assert not EvalSuite.objects.exists()


def test_run_now_is_counted_against_the_curators_rate_limit_and_capped_as_the_api_is(
    corpus, answer_model, client, settings
):
    """Each answer case asks the model: a curator's Run now is charged as the API charges a
    session (a search a case, an answer more), so a suite the rate limit does not allow asks the
    model nothing; and a suite over MAX_CASES_PER_REQUEST is refused for kb_eval to run."""
    from evaluation.suites import MAX_CASES_PER_REQUEST
    from kb.conf import kb_settings

    model = answer_model([WRONG] * 5)
    member(client, "tenant:a", write=True)
    namespace = Namespace.objects.get(slug="tenant:a")
    many = [
        {"id": f"m{i}", "question": f"{QUESTION} {i}", "expect": {"mustAbstain": True}}
        for i in range(MAX_CASES_PER_REQUEST + 1)
    ]
    huge = EvalSuite.objects.create(
        namespace=namespace, name="huge", definition={"version": 1, "cases": many}
    )
    page = client.post(f"/admin/kb/evalsuite/{huge.pk}/run/", follow=True)
    assert f"at most {MAX_CASES_PER_REQUEST} run in one request" in page.content.decode()
    assert not model.requests and not EvalRun.objects.exists()

    cases = [
        {"id": f"c{i}", "question": f"{QUESTION} {i}", "expect": {"mustAbstain": True}}
        for i in range(60)
    ]
    suite = EvalSuite.objects.create(
        namespace=namespace, name="big", definition={"version": 1, "cases": cases}
    )
    settings.KB_RATE_LIMIT_STAFF = 50
    kb_settings.cache_clear()
    try:
        page = client.post(f"/admin/kb/evalsuite/{suite.pk}/run/", follow=True)
    finally:
        kb_settings.cache_clear()
    assert "Rate limit of 50 requests per minute exceeded" in page.content.decode()
    assert not model.requests and not EvalRun.objects.exists()
