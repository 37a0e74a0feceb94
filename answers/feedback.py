"""Who asks an answer, as far as a vote goes, and their vote on it."""

from __future__ import annotations

import hashlib

from answers.errors import AnswerNotFound
from kb.auth import Principal, principal_for
from kb.models import AnswerLog


def record_feedback(request_or_principal, answer_id: int, helpful: bool) -> AnswerLog:
    """The asker's vote on an answer; voting again replaces it. Anyone else's answer (another
    reader's, another tenant's) is not found, exactly as a missing one."""
    principal = principal_of(request_or_principal)
    who = asker(request_or_principal, principal, create=False)
    readable = sorted(principal.readable_namespaces().values_list("slug", flat=True))
    row = (
        AnswerLog.objects.select_related("query_log__namespace")
        .filter(
            pk=answer_id, query_log__namespace__slug__in=readable, namespaces__contained_by=readable
        )
        .first()
    )
    if row is None or not who or row.asker != who:
        raise AnswerNotFound(f"No answer {answer_id}.")
    row.helpful = helpful
    row.save(update_fields=["helpful"])
    return row


def asker(request_or_principal, principal: Principal, *, create: bool) -> str:
    """Who is asking, as far as a vote goes: the token (a namespace token or a person token), the
    signed-in user, or an anonymous reader's session (its key hashed; `create` starts a session for
    one who has none). "" when there is no telling (a principal without its request): nobody may
    vote then."""
    if principal.token_id is not None:
        return f"token:{principal.token_id}"
    if isinstance(request_or_principal, Principal):
        return ""
    user = getattr(request_or_principal, "user", None)
    if principal.kind in ("staff", "member") and user is not None and user.is_authenticated:
        return f"user:{user.pk}"
    session = getattr(request_or_principal, "session", None)
    if session is None:
        return ""
    if session.session_key is None and create:
        session["asked_answers"] = True  # a non-empty, modified session: saved, and its cookie sent
        session.save()
    key = session.session_key
    return f"session:{hashlib.sha256(key.encode()).hexdigest()[:64]}" if key else ""


def principal_of(request_or_principal) -> Principal:
    if isinstance(request_or_principal, Principal):
        return request_or_principal
    auth = getattr(request_or_principal, "auth", None)
    return auth if isinstance(auth, Principal) else principal_for(request_or_principal, None)
