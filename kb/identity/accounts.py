"""Accounts made at a person's first sign-in through an identity provider, and their namespace
memberships kept in line with the group rules: at every sign-in, at every re-reading of a live
session's groups, and for everyone at once when a curator changes a rule."""

from __future__ import annotations

import re

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from kb.identity.rules import Rule, group_key, roles_for
from kb.models import ExternalIdentity, GroupRule, IdentityProvider, NamespaceMembership

USERNAME_MAX = 150  # django.contrib.auth's


class AccountRefused(Exception):
    """A sign-in that must not become this account; the message says why, for the sign-in log."""


def follow_groups(user, provider: str, subject: str, groups: list[str]) -> None:
    """Remember what the provider said of `user` now and make their memberships what the rules
    say."""
    ExternalIdentity.objects.update_or_create(
        user=user,
        defaults={
            "provider": provider,
            "subject": subject,
            "groups": sorted(set(groups)),
            "synced_at": timezone.now(),
        },
    )
    sync_memberships(user, provider, groups)


def sync_memberships(user, provider: str, groups: list[str]) -> None:
    """The memberships the rules of `provider` give someone in `groups`: added, changed in role, or
    removed. A membership made by hand (or by another provider) is never touched."""
    rules = [
        Rule(group, namespace_id, role)
        for group, namespace_id, role in GroupRule.objects.filter(provider=provider).values_list(
            "group", "namespace_id", "role"
        )
    ]
    wanted = roles_for(rules, groups)
    with transaction.atomic():
        held = {
            m.namespace_id: m
            for m in NamespaceMembership.objects.select_for_update().filter(user=user)
        }
        NamespaceMembership.objects.bulk_create(
            [
                NamespaceMembership(
                    user=user, namespace_id=namespace_id, can_write=write, granted_by=provider
                )
                for namespace_id, write in wanted.items()
                if namespace_id not in held
            ],
            ignore_conflicts=True,
        )  # a second sign-in of the same person at the same moment
        for namespace_id, membership in held.items():
            if membership.granted_by != provider:
                continue
            if namespace_id not in wanted:
                membership.delete()
            elif membership.can_write != wanted[namespace_id]:
                NamespaceMembership.objects.filter(pk=membership.pk).update(
                    can_write=wanted[namespace_id]
                )


def apply_rules(provider: str, groups: set[str]) -> int:
    """Bring the accounts of `provider` that last brought any of `groups` in line with its rules: a
    rule for those groups added, changed or removed counts at once, for live sessions too. Only
    those accounts are touched (a rule for one team costs nothing for the others). Returns how
    many."""
    wanted = {group_key(group) for group in groups if group}
    touched = [
        pk
        for pk, held in ExternalIdentity.objects.filter(provider=provider).values_list(
            "pk", "groups"
        )
        if wanted & {group_key(group) for group in held}
    ]
    for identity in ExternalIdentity.objects.filter(pk__in=touched).select_related("user"):
        sync_memberships(identity.user, provider, identity.groups)
    return len(touched)


def forget_memberships(user, provider: str) -> None:
    """The provider no longer knows the person (or cannot be asked): no membership of its rules
    stays."""
    NamespaceMembership.objects.filter(user=user, granted_by=provider).delete()


def oidc_account(subject: str, claims: dict, groups: list[str]):
    """The account of the person the provider names `subject` (issuer and `sub`), made at their
    first
    sign-in, with their name and e-mail as the provider says and their memberships as the rules
    say. Never an account made otherwise: a local `admin` stays out of reach of a provider's
    `admin`."""
    identity = (
        ExternalIdentity.objects.filter(provider=IdentityProvider.OIDC, subject=subject)
        .select_related("user")
        .first()
    )
    user = identity.user if identity is not None else _new_user(claims)
    if not user.is_active:
        raise AccountRefused("the account is deactivated")
    names = {
        "email": claims.get("email"),
        "first_name": claims.get("given_name"),
        "last_name": claims.get("family_name"),
    }
    changed = [
        field
        for field, value in names.items()
        if isinstance(value, str) and value != getattr(user, field)
    ]
    for field in changed:
        setattr(user, field, names[field][:150] if field != "email" else names[field][:254])
    if changed:
        user.save(update_fields=changed)
    follow_groups(user, IdentityProvider.OIDC, subject, groups)
    return user


def _new_user(claims: dict):
    """A new account without a password of its own, named after the provider's preferred user name
    (or e-mail, or subject), with -2, -3, … when that name is taken. Never staff, never
    superuser."""
    model = get_user_model()
    wanted = (
        claims.get("preferred_username")
        or (claims.get("email") or "").split("@")[0]
        or claims["sub"]
    )
    base = re.sub(r"[^\w.@+-]", "-", str(wanted))[: USERNAME_MAX - 4] or "user"
    for number in range(1, 1000):
        name = base if number == 1 else f"{base}-{number}"
        if model.objects.filter(username__iexact=name).exists():
            continue
        try:
            with transaction.atomic():
                user = model(username=name, is_staff=False, is_superuser=False)
                user.set_unusable_password()
                user.save()
                return user
        except IntegrityError:  # taken at the same moment
            continue
    raise AccountRefused(f"no free user name near {base!r}")
