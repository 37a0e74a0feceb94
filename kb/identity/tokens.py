"""People's own API tokens (`/accounts/tokens/`): anyone signed in makes person tokens that act for
them (their memberships as they are at each request, never more) with an expiry, sees them, and
revokes them. Superusers manage every token in the admin."""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.contrib.auth.decorators import login_required
from django.db.models import QuerySet
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from kb.auth import issue_token, revoke_tokens
from kb.models import ApiToken

LIFETIMES = [(7, "a week"), (30, "30 days"), (90, "90 days"), (365, "a year")]
MAX_LIVE_TOKENS = 20  # a person's tokens that work at once: each is a credential to keep track of


class TokenForm(forms.Form):
    name = forms.CharField(
        max_length=100, help_text="What it is for, so you know which to revoke: 'laptop', 'Cursor'."
    )
    scope = forms.ChoiceField(
        choices=[
            (ApiToken.Scope.READ, "Read what you read"),
            (ApiToken.Scope.WRITE, "Read, and change what you curate"),
        ],
        initial=ApiToken.Scope.READ,
    )
    days = forms.TypedChoiceField(choices=LIFETIMES, coerce=int, initial=90, label="Expires in")


def own_tokens(user) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user).order_by("-created_at")


def live_tokens(user) -> QuerySet[ApiToken]:
    now = timezone.now()
    return own_tokens(user).filter(revoked_at=None, expires_at__gt=now)


def create_token(user, name: str, scope: str, days: int) -> tuple[ApiToken, str]:
    """A person token for `user`, expiring in `days`; ValueError past MAX_LIVE_TOKENS."""
    if live_tokens(user).count() >= MAX_LIVE_TOKENS:
        raise ValueError(
            f"You have {MAX_LIVE_TOKENS} tokens that work: revoke one you no longer use first."
        )
    return issue_token(
        name, user=user, scope=scope, expires_at=timezone.now() + timedelta(days=days)
    )


def revoke_own(user, token_id: int) -> int:
    """Revoke `token_id` if it is `user`'s own and still works; another's is left alone."""
    return revoke_tokens(ApiToken.objects.filter(pk=token_id, user=user))


@login_required
@require_http_methods(["GET", "POST"])
def my_tokens(request):
    """GET: the signed-in person's tokens and the form for a new one. POST `create`: make one and
    show its secret this once; POST `revoke` with `token`: revoke one of theirs."""
    form, secret, error = TokenForm(), "", ""
    if request.method == "POST" and "revoke" in request.POST:
        token_id = request.POST.get("token", "")
        if token_id.isdigit():
            revoke_own(request.user, int(token_id))
        return redirect(request.path)
    if request.method == "POST":
        form = TokenForm(request.POST)
        if form.is_valid():
            try:
                _, secret = create_token(request.user, **form.cleaned_data)
                form = TokenForm()
            except ValueError as exc:
                error = str(exc)
    return render(
        request,
        "kb/tokens.html",
        {
            "form": form,
            "secret": secret,
            "error": error,
            "tokens": own_tokens(request.user)[:50],
            "now": timezone.now(),
        },
    )
