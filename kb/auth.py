"""Who is calling and what they may touch: API tokens, staff sessions, anonymous readers.

Tokens look like `kb_<prefix>_<secret>`; only their SHA-256 is stored. A namespace token reaches
exactly the namespaces it lists (changing them only with the write scope). A person token has its
owner's current rights, read at each request, read-only without the write scope; a deactivated
owner's, an expired or a revoked token answers exactly like an unknown one. Other signed-in users
read their memberships' namespaces and the public ones, and change only those with write rights;
anonymous callers read public namespaces only.
"""

from __future__ import annotations

import hashlib
import ipaddress
import secrets
from dataclasses import dataclass, replace

from django.contrib.postgres.aggregates import ArrayAgg
from django.db.models import Q, QuerySet
from django.utils import timezone

from kb import ratelimit
from kb.audiences import reach_of
from kb.conf import kb_settings
from kb.errors import AuthenticationRequired, Forbidden, NotFound, TokenInvalid
from kb.models import ApiToken, Namespace, NamespaceMembership

TOKEN_START = "kb_"


@dataclass(frozen=True)
class Principal:
    kind: str  # token (a namespace token) | staff (a superuser) | member (other users) | anonymous
    token_id: int | None = None  # the token it came with: a namespace token's or a person token's
    user_id: int | None = None  # whom it acts for: a signed-in user, a person token's owner
    namespaces: frozenset[str] | None = (
        None  # a token's or a member's own namespaces; None: every one
    )
    can_write: bool = False
    writable: frozenset[str] = frozenset()  # members: the namespaces they may change
    rate_key: str = ""  # the counter its requests are charged to (`charge`)
    rate_limit: int = 0  # requests a minute
    # the audiences it reads inside its namespaces besides open documents; None: every one
    audiences: frozenset[int] | None = frozenset()

    read_only: bool = False  # a person token without the write scope: its owner's reads only

    def __post_init__(self) -> None:
        if self.kind == "staff":  # a superuser reads every document, however it is made
            object.__setattr__(self, "audiences", None)

    def charge(self, requests: int) -> None:
        """Count `requests` more against this caller's rate limit: what a request that makes
        many searches (an eval run) costs beyond the one it was counted as."""
        if self.rate_key and requests > 0:
            ratelimit.hit(self.rate_key, self.rate_limit, cost=requests)

    def readable(self) -> Q:
        """A filter on Namespace for what this principal may read."""
        if self.kind == "staff":
            return Q()
        if self.kind == "token":
            return Q(slug__in=self.namespaces or ())
        if self.kind == "member":  # public namespaces are read by everyone, signed in or not
            return Q(slug__in=self.namespaces or ()) | Q(is_public=True)
        return Q(is_public=True)

    def readable_namespaces(self) -> QuerySet[Namespace]:
        """The namespaces this principal may read."""
        return Namespace.objects.filter(self.readable())

    def member_namespaces(self) -> QuerySet[Namespace]:
        """The namespaces this principal belongs to (a superuser: every one): what a curator's
        pages show. A public namespace a member merely reads is not among them, so reading it
        gives none of its curators' views."""
        if self.kind == "staff":
            return Namespace.objects.all()
        if self.kind == "member":
            return Namespace.objects.filter(slug__in=self.namespaces or ())
        return Namespace.objects.none()

    def access(self, namespace: Namespace) -> str:
        """Why this principal reads `namespace` (one it may read): "superuser", "token", "member"
        (a membership) or "public" (readable by everyone)."""
        if self.kind == "staff":
            return "superuser"
        if self.kind == "token":
            return "token"
        return "member" if namespace.slug in (self.namespaces or ()) else "public"

    def check(self, namespace: str, *, write: bool = False) -> None:
        if write and self.read_only:
            self.check(namespace)  # a namespace its owner may not read answers as for any caller
            raise Forbidden("This token is read-only; writing needs a token with the write scope.")
        if self.kind == "staff":
            return
        if self.kind == "member":
            if namespace not in (self.namespaces or ()):
                self._check_public(namespace, write)
            elif write and namespace not in self.writable:
                raise Forbidden(f"Your membership of {namespace!r} is read-only.")
            return
        if self.kind == "anonymous":
            if write or not Namespace.objects.filter(slug=namespace, is_public=True).exists():
                raise AuthenticationRequired(
                    "Authentication required: sign in at /accounts/login/, or send "
                    "'Authorization: Bearer <token>'.",
                    details={"sign_in": "/accounts/login/"},
                )
            return
        if namespace not in (self.namespaces or ()):
            raise Forbidden(
                f"This token may not use namespace {namespace!r}, or there is none of that name.",
                details={"namespace": namespace},
            )  # one answer for both: names do not leak
        if write and not self.can_write:
            raise Forbidden("This token is read-only; writing needs a token with the write scope.")

    def _check_public(self, namespace: str, write: bool) -> None:
        """A member outside its memberships: a public namespace is read as by anyone; changing it,
        or reading a private one (or one that does not exist: one answer for both), is refused."""
        if not Namespace.objects.filter(slug=namespace, is_public=True).exists():
            raise Forbidden(
                f"You are not a member of namespace {namespace!r}, or there is none of that name.",
                details={"namespace": namespace},
            )
        if write:
            raise Forbidden(
                f"Namespace {namespace!r} is public: you may read it, but changing it needs a "
                "membership with write rights; ask its curators.",
                details={"namespace": namespace},
            )


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def issue_secret(token: ApiToken) -> str:
    """Give an unsaved token its prefix and hash; return the plaintext, which is never stored."""
    token.prefix = secrets.token_hex(4)
    plaintext = f"{TOKEN_START}{token.prefix}_{secrets.token_urlsafe(24)}"
    token.key_hash = _digest(plaintext)
    return plaintext


def issue_token(
    name: str,
    *,
    namespaces: list[Namespace] = (),
    user=None,
    scope: str = ApiToken.Scope.READ,
    rate_limit_per_minute: int = 120,
    expires_at=None,
) -> tuple[ApiToken, str]:
    """Create a token and return it with its plaintext, which is never stored or shown again:
    a namespace token for `namespaces`, or a person token acting for `user` (which lists none)."""
    if user is not None and namespaces:
        raise ValueError("A person token reads what its owner reads: it lists no namespaces.")
    token = ApiToken(
        name=name,
        scope=scope,
        rate_limit_per_minute=rate_limit_per_minute,
        user=user,
        expires_at=expires_at,
    )
    plaintext = issue_secret(token)
    token.save()
    token.namespaces.set(namespaces)
    return token, plaintext


def revoke_tokens(tokens) -> int:
    """Revoke the tokens of a queryset that are still live; return how many were."""
    return tokens.filter(revoked_at=None).update(revoked_at=timezone.now())


def principal_for(request, bearer: str | None, *, sessions: bool = True) -> Principal:
    """Who calls; every caller is counted against its rate limit (tokens their own, staff users
    KB_RATE_LIMIT_STAFF, anonymous clients KB_RATE_LIMIT_ANONYMOUS per address). Without
    `sessions` (the MCP endpoint: agents send tokens, and a browser's cookie must not make a
    cross-site request count as staff) a caller without a token is anonymous."""
    if bearer:
        return _token_principal(bearer, request)
    user = getattr(request, "user", None) if sessions else None
    if user is not None and user.is_authenticated and user.is_active:  # readers count like staff
        key, limit = f"staff:{user.pk}", kb_settings().rate_limit_staff
        ratelimit.hit(key, limit)
        return replace(staff_principal(user), rate_key=key, rate_limit=limit)
    key, limit = f"address:{client_address(request)}", kb_settings().rate_limit_anonymous
    ratelimit.hit(key, limit)
    return Principal("anonymous", rate_key=key, rate_limit=limit)


def staff_principal(user) -> Principal:
    """Superusers reach every namespace; other users (staff or readers) the namespaces they are
    members of, and read every public one: a reader's membership gives the same reads as a staff
    member's."""
    if user.is_superuser:
        return Principal("staff", can_write=True, user_id=user.pk, audiences=None)
    memberships = list(
        NamespaceMembership.objects.filter(user=user).values_list("namespace__slug", "can_write")
    )
    return Principal(
        "member",
        user_id=user.pk,
        namespaces=frozenset(slug for slug, _ in memberships),
        can_write=any(write for _, write in memberships),
        writable=frozenset(slug for slug, write in memberships if write),
        audiences=reach_of(user, (slug for slug, write in memberships if write)),
    )


def client_address(request) -> str:
    """The peer address (behind a reverse proxy, configure it to set REMOTE_ADDR, e.g. through
    gunicorn's --forwarded-allow-ips, so clients are told apart). An IPv6 client is its /64: one
    host is handed a whole /64, and counting per /128 would give it 2^64 rate limits."""
    address = request.META.get("REMOTE_ADDR", "") or "unknown"
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address
    if parsed.version == 4:
        return str(parsed)
    if parsed.ipv4_mapped is not None:
        return str(parsed.ipv4_mapped)
    return str(ipaddress.ip_network(f"{parsed}/64", strict=False))


def _token_principal(bearer: str, request=None) -> Principal:
    # the token, its owner and its namespaces in one round trip: every API request starts here
    token = (
        ApiToken.objects.filter(key_hash=_digest(bearer.strip()))
        .select_related("user")
        .annotate(slugs=ArrayAgg("namespaces__slug", default=[]))
        .first()
    )
    if (
        token is None
        or not token.is_active
        or (token.user is not None and not token.user.is_active)
    ):
        # one answer for unknown, revoked, expired and a deactivated owner's: nothing to tell apart;
        # guessing tokens costs the guesser's address its anonymous limit
        ratelimit.hit(
            f"bad-token:{client_address(request) if request is not None else 'unknown'}",
            kb_settings().rate_limit_anonymous,
        )
        raise TokenInvalid("The API token is unknown or revoked.")
    _rate_limit(token)
    now = timezone.now()
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    if token.user is not None:
        return _person_principal(token)
    namespaces = frozenset(slug for slug in token.slugs if slug is not None)
    return Principal(
        "token",
        token_id=token.pk,
        namespaces=namespaces,
        can_write=token.scope == ApiToken.Scope.WRITE,
        rate_key=f"token:{token.pk}",
        rate_limit=token.rate_limit_per_minute,
    )


def _person_principal(token: ApiToken) -> Principal:
    """A person token's rights: its owner's, from their memberships as they are now (a membership
    removed counts at the next request), without write rights unless the token has the write
    scope; charged to the token's own rate limit."""
    owner = staff_principal(token.user)
    if token.scope != ApiToken.Scope.WRITE:
        owner = replace(owner, read_only=True, can_write=False, writable=frozenset())
    return replace(
        owner,
        token_id=token.pk,
        rate_key=f"token:{token.pk}",
        rate_limit=token.rate_limit_per_minute,
    )


def _rate_limit(token: ApiToken) -> None:
    ratelimit.hit(f"token:{token.pk}", token.rate_limit_per_minute)


def require_readable(principal: Principal, namespace: str, missing: NotFound) -> None:
    """Raise `missing` unless the principal may read `namespace`: an id of another tenant (or a
    private one, for anonymous callers) answers exactly like an id that does not exist, so ids
    cannot be probed across namespaces."""
    try:
        principal.check(namespace)
    except (AuthenticationRequired, Forbidden):
        raise missing from None
