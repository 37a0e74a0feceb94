"""First-run setup used by `kb_run`: admin login and demo content. Idempotent."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from django.contrib.auth import get_user_model


@dataclass(frozen=True)
class AdminLogin:
    username: str
    password: str | None  # None when the user already existed: we never store it in plain text


def ensure_admin_user(username: str = "admin") -> AdminLogin:
    """Create the admin superuser once with a random password; report it only that time."""
    users = get_user_model()
    if users.objects.filter(username=username).exists():
        return AdminLogin(username=username, password=None)
    password = secrets.token_urlsafe(12)
    users.objects.create_superuser(username=username, email="", password=password)
    return AdminLogin(username=username, password=password)
