"""Which URLs of a site a source takes, and the one form each URL is known by. Pure.

`canonical_url` strips what varies between links to one page (fragment, case, default port, tracking
parameters), so a page is never ingested twice under two names; the page's own `<link
rel=canonical>` is applied by the loader on top. Include and exclude are globs over path and query
(`*` crosses slashes), not regular expressions: `glob_match` does not backtrack beyond the last `*`.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from ingest.errors import InvalidUrl

TRACKING_PARAMETERS = {
    "gclid",
    "fbclid",
    "msclkid",
    "yclid",
    "mc_cid",
    "mc_eid",
    "_ga",
    "_gl",
    "ref_src",
}
DEFAULT_PORTS = {"http": 80, "https": 443}


URI_SAFE = "/%:@!$&'()*+,;=-._~"  # RFC 3986 reserved and unreserved characters, and escapes


def iri_to_uri(url: str) -> str:
    """An IRI as the URI an HTTP client can send: the host IDNA-encoded, non-ASCII characters of
    path and query percent-encoded as UTF-8 (existing escapes kept)."""
    if url.isascii() and " " not in url:
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        ascii_host = host.encode("idna").decode("ascii") if host and not host.isascii() else host
    except UnicodeError as exc:
        raise InvalidUrl(
            f"The host of {url!r} is not a valid international domain name: {exc}"
        ) from exc
    if ":" in ascii_host:
        ascii_host = f"[{ascii_host}]"
    netloc = ascii_host
    try:
        if parts.port:
            netloc = f"{ascii_host}:{parts.port}"
    except ValueError as exc:
        raise InvalidUrl(f"Malformed URL {url!r}: {exc}") from exc
    if parts.username:
        netloc = f"{quote(parts.username, safe='')}@{netloc}"
    return urlunsplit(
        (
            parts.scheme,
            netloc,
            quote(parts.path, safe=URI_SAFE),
            quote(parts.query, safe=URI_SAFE + "?"),
            quote(parts.fragment, safe=URI_SAFE),
        )
    )


def canonical_url(url: str) -> str:
    """The URL's one name (see the module docstring); "" for a URL that cannot be fetched."""
    try:
        parts = urlsplit(iri_to_uri(url.strip()))
    except InvalidUrl:
        return ""
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        return ""  # an impossible port: no page has this name
    netloc = host if port is None or DEFAULT_PORTS.get(scheme) == port else f"{host}:{port}"
    if parts.username:
        netloc = f"{parts.username}@{netloc}"
    query = [
        (k, v)
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
        if not k.lower().startswith("utm_") and k.lower() not in TRACKING_PARAMETERS
    ]
    return urlunsplit((scheme, netloc, parts.path or "/", urlencode(query), ""))


def glob_match(pattern: str, text: str) -> bool:
    """`*` any run of characters, `?` exactly one; the whole text must match."""
    p = t = 0
    star = -1
    mark = 0
    while t < len(text):
        if p < len(pattern) and (pattern[p] == "?" or pattern[p] == text[t]):
            p += 1
            t += 1
        elif p < len(pattern) and pattern[p] == "*":
            star, mark = p, t
            p += 1
        elif star >= 0:
            p = star + 1
            mark += 1
            t = mark
        else:
            return False
    while p < len(pattern) and pattern[p] == "*":
        p += 1
    return p == len(pattern)


@dataclass(frozen=True)
class UrlScope:
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    @classmethod
    def from_options(cls, options: dict) -> "UrlScope":
        return cls(tuple(options.get("include") or ()), tuple(options.get("exclude") or ()))

    def refusal(self, url: str) -> str:
        """Why the URL is out of scope ("" when it is in)."""
        parts = urlsplit(url)
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        for pattern in self.exclude:
            if glob_match(pattern, target):
                return f"excluded by {pattern!r}"
        if self.include and not any(glob_match(pattern, target) for pattern in self.include):
            return "matches no include pattern"
        return ""
