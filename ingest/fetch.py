"""HTTP fetching behind the SSRF guard.

Each redirect hop is checked by the guard, and the connection goes only to the address it approved
(httpcore with a pinned backend: no second DNS lookup; TLS still verified against the host name).
The body is capped after decompression too, so compression bombs stop at the cap, and a total
deadline keeps a slow-drip server from holding a worker.
"""

from __future__ import annotations

import ssl
import time
import zlib
from dataclasses import dataclass, field
from email.message import Message
from typing import Callable, Iterable
from urllib.parse import urldefrag, urljoin

import httpcore

from ingest.errors import (
    ContentRejected,
    ContentTooLarge,
    FetchFailed,
    FetchTimeout,
    HttpStatusError,
    RedirectLoop,
    TooManyRedirects,
    UnsupportedType,
)
from ingest.extract.documents import DOCUMENT_TYPES, MACRO_TYPES
from ingest.scope import iri_to_uri
from ingest.ssrf import (
    AllowRule,
    Resolver,
    Target,
    parse_allow_rules,
    resolve_target,
    system_resolver,
)
from kb.errors import ConfigurationError

USER_AGENT = "kb-ingest/0.1 (self-hosted knowledge base; +robots.txt honoured)"
REDIRECT_STATUSES = (301, 302, 303, 307, 308)
RETRY_STATUSES = (429, 500, 502, 503, 504)
TEXT_TYPES = (
    "text/html",
    "application/xhtml+xml",
    "text/plain",
    "text/markdown",
    "text/x-markdown",
)
# what a page of a web source may be: text, or a document (PDF, Office, ...) linked from a site
PAGE_TYPES = TEXT_TYPES + tuple(t for t in DOCUMENT_TYPES if t not in MACRO_TYPES)
XML_TYPES = ("application/xml", "text/xml", "application/rss+xml", "application/atom+xml")


@dataclass(frozen=True)
class FetchPolicy:
    timeout: float = 20.0
    total_timeout: float = 60.0
    max_bytes: int = 10 * 1024 * 1024
    document_max_bytes: int = 50 * 1024 * 1024  # for PDF, Office and the other document types
    max_redirects: int = 5
    retries: int = 2
    backoff: float = 0.5
    allowed: tuple[AllowRule, ...] = ()  # KB_FETCH_ALLOWED_PRIVATE, parsed
    resolver: Resolver = system_resolver
    sleep: Callable[[float], None] = time.sleep

    @classmethod
    def from_settings(cls, **overrides) -> "FetchPolicy":
        from kb.conf import kb_settings

        conf = kb_settings()
        values = dict(
            timeout=conf.fetch_timeout,
            total_timeout=conf.fetch_timeout * 3,
            max_bytes=conf.fetch_max_bytes,
            document_max_bytes=conf.document_max_bytes,
            allowed=allow_rules_from_settings(conf.fetch_allowed_private),
        )
        values.update(overrides)
        return cls(**values)


def allow_rules_from_settings(entries) -> tuple[AllowRule, ...]:
    try:
        return parse_allow_rules(entries)
    except ValueError as exc:
        raise ConfigurationError(
            f"KB_FETCH_ALLOWED_PRIVATE: {exc}.", details={"setting": "KB_FETCH_ALLOWED_PRIVATE"}
        ) from exc


@dataclass(frozen=True)
class FetchResult:
    url: str  # the final URL after redirects
    status: int
    body: bytes = b""
    media_type: str = ""
    charset: str | None = None
    etag: str = ""
    last_modified: str = ""
    redirects: tuple[str, ...] = field(default_factory=tuple)

    @property
    def not_modified(self) -> bool:
        return self.status == 304


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose every read and write ends by the fetch's deadline: a server that
    sends its headers (or anything else) one byte at a time cannot hold the worker."""

    def __init__(self, inner: httpcore.NetworkStream, deadline: float):
        self._inner = inner
        self._deadline = deadline

    def _timeout(self, timeout: float | None) -> float:
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise httpcore.ReadTimeout("the fetch's total deadline passed")
        return remaining if timeout is None else min(timeout, remaining)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, self._timeout(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, self._timeout(timeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None):
        return _DeadlineStream(
            self._inner.start_tls(ssl_context, server_hostname, self._timeout(timeout)),
            self._deadline,
        )

    def get_extra_info(self, info: str):
        return self._inner.get_extra_info(info)


class _PinnedBackend(httpcore.NetworkBackend):
    """Connects to the address the SSRF guard approved, whatever the URL's host resolves to now,
    and only until the fetch's deadline."""

    def __init__(self, target: Target, deadline: float):
        self._target = target
        self._deadline = deadline
        self._inner = httpcore.SyncBackend()

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        if (
            host.lower().rstrip(".").strip("[]") != self._target.host.strip("[]")
            or port != self._target.port
        ):
            raise httpcore.ConnectError(f"unexpected connection to {host}:{port}")
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise httpcore.ConnectTimeout("the fetch's total deadline passed")
        timeout = remaining if timeout is None else min(timeout, remaining)
        stream = self._inner.connect_tcp(
            self._target.address, port, timeout, local_address, socket_options
        )
        return _DeadlineStream(stream, self._deadline)

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        raise httpcore.ConnectError("unix sockets are never fetched")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _is_header_value(value: str) -> bool:
    return value.isascii() and value.isprintable()


def _validator(value: str) -> str:
    """An ETag or Last-Modified worth sending back: printable ASCII, else nothing (a non-ASCII
    validator would break every later conditional request)."""
    return value if _is_header_value(value) else ""


def _content_type(headers: dict[str, str]) -> tuple[str, str | None]:
    raw = headers.get("content-type", "")
    if not raw:
        return "", None
    message = Message()
    message["content-type"] = raw
    return message.get_content_type().lower(), message.get_param("charset")


class Fetcher:
    def __init__(self, policy: FetchPolicy | None = None):
        self.policy = policy or FetchPolicy.from_settings()
        self._ssl = ssl.create_default_context()

    def fetch(
        self,
        url: str,
        *,
        accept: Iterable[str] = TEXT_TYPES,
        etag: str = "",
        last_modified: str = "",
    ) -> FetchResult:
        accept = tuple(accept)
        deadline = time.monotonic() + self.policy.total_timeout
        current = iri_to_uri(urldefrag(url)[0])
        hops: list[str] = []
        for _ in range(self.policy.max_redirects + 1):
            target = self._resolve(current)
            headers = {
                "user-agent": USER_AGENT,
                "accept-encoding": "gzip, deflate",
                "accept": "*/*",
            }
            if etag and _is_header_value(etag):
                headers["if-none-match"] = etag
            if last_modified and _is_header_value(last_modified):
                headers["if-modified-since"] = last_modified
            status, response_headers, body = self._request_with_retry(
                target, headers, accept, deadline
            )
            if status in REDIRECT_STATUSES:
                location = response_headers.get("location")
                if not location:
                    raise FetchFailed(f"{current!r} redirected without a Location header.")
                hops.append(current)
                current = iri_to_uri(urldefrag(urljoin(current, location))[0])
                if current in hops:
                    raise RedirectLoop(
                        f"Redirect loop: {current!r} redirects back to itself.",
                        details={"chain": hops + [current]},
                    )
                continue
            media_type, charset = _content_type(response_headers)
            return FetchResult(
                url=current,
                status=status,
                body=body,
                media_type=media_type,
                charset=charset,
                etag=_validator(response_headers.get("etag", "")),
                last_modified=_validator(response_headers.get("last-modified", "")),
                redirects=tuple(hops),
            )
        raise TooManyRedirects(
            f"Too many redirects (more than {self.policy.max_redirects}) starting at {url!r}.",
            details={"chain": hops},
        )

    def _resolve(self, url: str) -> Target:
        return resolve_target(
            url,
            allowed=self.policy.allowed,
            resolver=self.policy.resolver,
        )

    def _request_with_retry(self, target, headers, accept, deadline):
        attempt = 0
        while True:
            try:
                status, response_headers, body = self._request(target, headers, accept, deadline)
            except (httpcore.NetworkError, httpcore.RemoteProtocolError) as exc:
                if attempt >= self.policy.retries:
                    raise FetchFailed(
                        f"Could not fetch {target.url!r}: {type(exc).__name__}: {exc}",
                        details={"url": target.url},
                    ) from exc
                delay = self.policy.backoff * 2**attempt
            else:
                if status not in RETRY_STATUSES or attempt >= self.policy.retries:
                    if status >= 400 and status not in REDIRECT_STATUSES:
                        raise HttpStatusError(
                            f"{target.url!r} answered HTTP {status}.",
                            details={"url": target.url, "status": status},
                        )
                    return status, response_headers, body
                delay = (
                    _retry_after(response_headers.get("retry-after"))
                    or self.policy.backoff * 2**attempt
                )
            attempt += 1
            if time.monotonic() + delay > deadline:
                raise FetchTimeout(f"Gave up on {target.url!r}: out of time for retries.")
            self.policy.sleep(delay)

    def _request(self, target: Target, headers: dict, accept: tuple, deadline: float):
        timeouts = {
            "connect": self.policy.timeout,
            "read": self.policy.timeout,
            "write": self.policy.timeout,
            "pool": self.policy.timeout,
        }
        try:
            with (
                httpcore.ConnectionPool(
                    ssl_context=self._ssl,
                    network_backend=_PinnedBackend(target, deadline),
                    max_connections=1,
                ) as pool,
                pool.stream(
                    "GET",
                    target.url,
                    headers=list(headers.items()),
                    extensions={"timeout": timeouts},
                ) as response,
            ):
                response_headers = {
                    k.decode("latin-1").lower(): v.decode("latin-1") for k, v in response.headers
                }
                status = response.status
                if status != 200:
                    return status, response_headers, b""
                media_type, _ = _content_type(response_headers)
                if media_type and accept and media_type not in accept:
                    raise UnsupportedType(
                        f"{target.url!r} is {media_type!r}, which is not ingested "
                        f"(accepted: {', '.join(accept)}).",
                        details={"media_type": media_type},
                    )
                cap = (
                    self.policy.document_max_bytes
                    if media_type in DOCUMENT_TYPES
                    else self.policy.max_bytes
                )
                declared = response_headers.get("content-length", "")
                if declared.isdigit() and int(declared) > cap:
                    raise self._too_large(target.url, int(declared), cap)
                body = self._read_body(response, response_headers, target.url, deadline, cap)
                return status, response_headers, body
        except httpcore.TimeoutException as exc:
            raise FetchTimeout(f"Timed out fetching {target.url!r}.") from exc
        except httpcore.UnsupportedProtocol as exc:
            raise FetchFailed(f"Unsupported protocol for {target.url!r}: {exc}") from exc

    def _read_body(self, response, headers, url: str, deadline: float, cap: int) -> bytes:
        encoding = headers.get("content-encoding", "identity").lower().strip()
        decoder = None
        if encoding in ("gzip", "x-gzip"):
            decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            decoder = zlib.decompressobj(zlib.MAX_WBITS | 32)
        elif encoding not in ("", "identity"):
            raise ContentRejected(f"{url!r} uses unsupported content encoding {encoding!r}.")
        out = bytearray()
        for piece in response.iter_stream():
            if time.monotonic() > deadline:
                raise FetchTimeout(f"{url!r} sent its body too slowly; gave up.")
            if decoder is not None:
                try:
                    piece = decoder.decompress(piece, cap + 1 - len(out))
                except zlib.error as exc:
                    raise ContentRejected(f"{url!r} sent a corrupt {encoding} body: {exc}") from exc
                if decoder.unconsumed_tail:
                    raise self._too_large(url, None, cap)
            out += piece
            if len(out) > cap:
                raise self._too_large(url, None, cap)
        return bytes(out)

    def _too_large(self, url: str, size: int | None, cap: int) -> ContentRejected:
        shown = f"{size} bytes" if size else "more than the limit"
        setting = (
            "KB_DOCUMENT_MAX_BYTES"
            if cap == self.policy.document_max_bytes
            else "KB_FETCH_MAX_BYTES"
        )
        return ContentTooLarge(
            f"{url!r} is too large ({shown}; {setting} is {cap}).",
            details={"url": url, "max_bytes": cap},
        )


def _retry_after(value: str | None) -> float | None:
    if value and value.strip().isdigit():
        return min(10.0, float(value.strip()))
    return None
