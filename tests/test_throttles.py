"""The forms anyone may post without signing in are throttled like sign-in: password reset per
client address (10 a minute) and per recipient (3 a minute), setting a password from a reset
link with the resets. Past the limit the answer is sign-in's 429, and no mail is sent."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import default_token_generator
from django.core import mail
from django.test import Client
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from config.views import PASSWORD_RESETS_PER_MINUTE, RESET_MAILS_PER_RECIPIENT_PER_MINUTE

pytestmark = pytest.mark.django_db


@pytest.fixture
def readers():
    return [
        get_user_model().objects.create_user(
            f"reader{n}", f"reader{n}@example.com", "a long passphrase"
        )
        for n in range(PASSWORD_RESETS_PER_MINUTE + 2)
    ]


def assert_refused_as_sign_in_is(response):
    assert response.status_code == 429, response.content
    assert response.content.decode().startswith("KB_RATE_LIMITED: Rate limit of ")
    assert int(response["Retry-After"]) >= 1


def test_the_eleventh_reset_in_a_minute_from_one_address_is_refused_and_sends_no_mail(readers):
    client = Client(REMOTE_ADDR="198.51.100.30")
    answers = [
        client.post("/accounts/password_reset/", {"email": reader.email})
        for reader in readers[: PASSWORD_RESETS_PER_MINUTE + 1]
    ]
    assert [a.status_code for a in answers[:PASSWORD_RESETS_PER_MINUTE]] == [
        302
    ] * PASSWORD_RESETS_PER_MINUTE
    assert len(mail.outbox) == PASSWORD_RESETS_PER_MINUTE
    assert_refused_as_sign_in_is(answers[-1])
    assert len(mail.outbox) == PASSWORD_RESETS_PER_MINUTE  # none for the refused one

    other = Client(REMOTE_ADDR="198.51.100.31")  # per address: someone else is not held up
    assert other.post("/accounts/password_reset/", {"email": readers[-1].email}).status_code == 302
    assert mail.outbox[-1].to == [readers[-1].email]


def test_resets_for_an_unknown_address_count_alike_so_a_refusal_tells_nothing(readers):
    client = Client(REMOTE_ADDR="198.51.100.32")
    statuses = [
        client.post("/accounts/password_reset/", {"email": f"nobody{n}@example.com"}).status_code
        for n in range(PASSWORD_RESETS_PER_MINUTE)
    ]
    assert statuses == [302] * PASSWORD_RESETS_PER_MINUTE and not mail.outbox
    assert_refused_as_sign_in_is(
        client.post("/accounts/password_reset/", {"email": readers[0].email})
    )
    assert not mail.outbox


def test_one_mailbox_gets_at_most_three_reset_mails_a_minute_from_any_number_of_addresses(readers):
    target = readers[0].email
    answers = [
        Client(REMOTE_ADDR=f"198.51.100.{40 + n}").post(
            "/accounts/password_reset/", {"email": target.upper()}
        )
        for n in range(RESET_MAILS_PER_RECIPIENT_PER_MINUTE + 1)
    ]
    assert [a.status_code for a in answers[:-1]] == [302] * RESET_MAILS_PER_RECIPIENT_PER_MINUTE
    assert_refused_as_sign_in_is(answers[-1])
    assert len(mail.outbox) == RESET_MAILS_PER_RECIPIENT_PER_MINUTE


def test_setting_a_password_from_a_reset_link_is_throttled_with_the_resets(readers):
    reader = readers[0]
    client = Client(REMOTE_ADDR="198.51.100.50")
    uid, token = (
        urlsafe_base64_encode(force_bytes(reader.pk)),
        default_token_generator.make_token(reader),
    )
    link = f"/accounts/reset/{uid}/{token}/"
    form = client.get(link, follow=True)  # Django moves the token into the session and redirects
    assert form.status_code == 200
    set_password = form.redirect_chain[-1][0]
    mismatched = {"new_password1": "a new long passphrase", "new_password2": "another one"}
    statuses = [
        client.post(set_password, mismatched).status_code for _ in range(PASSWORD_RESETS_PER_MINUTE)
    ]
    assert statuses == [200] * PASSWORD_RESETS_PER_MINUTE  # the form again: the two do not match
    assert_refused_as_sign_in_is(
        client.post(
            set_password,
            {"new_password1": "a new long passphrase", "new_password2": "a new long passphrase"},
        )
    )
    reader.refresh_from_db()
    assert reader.check_password("a long passphrase")  # unchanged
