"""The SSRF guard and the fetcher: every listed target refused with a stable code."""

import gzip
import time

import pytest

from ingest.errors import ContentRejected, FetchBlocked, FetchFailed
from ingest.fetch import Fetcher, FetchPolicy
from ingest.ssrf import parse_allow_rules, resolve_target
from tests.webserver import Route

LOOPBACK = parse_allow_rules(["127.0.0.0/8:*"])  # the test servers listen on ephemeral ports


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/",
        "http://localhost/",
        "http://[::1]/",
        "http://10.0.0.1/",
        "http://172.16.0.1/",
        "http://192.168.1.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://2130706433/",
        "http://0x7f000001/",
        "http://017700000001/",
        "http://0/",
        "http://127.1/",
        "http://100.100.100.200/",
        "http://[fd00:ec2::254]/",
        "http://224.0.0.1/",
    ],
)
def test_private_targets_are_refused_with_a_stable_code(url):
    with pytest.raises(FetchBlocked) as excinfo:
        Fetcher(FetchPolicy()).fetch(url)
    assert excinfo.value.code == "INGEST_FETCH_BLOCKED"
    assert (
        "KB_FETCH_ALLOWED_PRIVATE" in excinfo.value.message
        or "never fetched" in excinfo.value.message
    )


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "gopher://example.com/", "ftp://example.com/x"]
)
def test_non_http_schemes_are_refused(url):
    with pytest.raises(FetchBlocked) as excinfo:
        Fetcher(FetchPolicy()).fetch(url)
    assert excinfo.value.code == "INGEST_URL_SCHEME"


@pytest.mark.parametrize("url", ["http://", "http://exa mple.com:99999/", "http://[::1/"])
def test_malformed_urls_are_refused(url):
    with pytest.raises(FetchBlocked) as excinfo:
        Fetcher(FetchPolicy()).fetch(url)
    assert excinfo.value.code in ("INGEST_URL_INVALID", "INGEST_DNS_FAILED")


def test_hostname_resolving_to_a_private_address_is_refused():
    def resolver(host, port):
        return {"intranet.example": ["93.184.216.34", "10.1.2.3"]}[host]

    private = r"'intranet.example' resolves to a private-use \(RFC 1918\) address"
    with pytest.raises(FetchBlocked, match=private) as caught:
        resolve_target("https://intranet.example/wiki", resolver=resolver)
    assert "10.1.2.3" not in caught.value.message and "10.1.2.3" not in str(
        caught.value.details
    )  # no DNS oracle


def test_public_address_passes_and_is_the_address_connected_to():
    target = resolve_target("https://docs.example.com/a", resolver=lambda h, p: ["93.184.216.34"])
    assert (target.host, target.port, target.address) == ("docs.example.com", 443, "93.184.216.34")


def test_allow_list_admits_private_networks_and_hosts():
    assert (
        resolve_target("http://10.0.0.5/", allowed=parse_allow_rules(["10.0.0.0/8"])).address
        == "10.0.0.5"
    )
    target = resolve_target(
        "http://wiki.corp/",
        allowed=parse_allow_rules(["wiki.corp"]),
        resolver=lambda h, p: ["10.9.9.9"],
    )
    assert target.address == "10.9.9.9"


def test_redirect_to_loopback_is_refused_on_the_second_hop(web):
    # "localhost" is allowed by name for the first hop; the redirect names 127.0.0.1 itself
    web.routes["/start"] = Route(b"", 302, {"Location": web.url("/secret")})
    web.page("/secret", "<p>metadata</p>")
    fetcher = Fetcher(FetchPolicy(allowed=parse_allow_rules(["localhost:*"])))
    with pytest.raises(FetchBlocked, match="'127.0.0.1' resolves to a loopback"):
        fetcher.fetch(web.url("/start", host="localhost"))
    assert web.hits["/start"] == 1
    assert web.hits["/secret"] == 0


def test_connects_to_the_checked_address_without_a_second_lookup(web):
    """The resolver is consulted once; the connection goes to its answer, and the Host header
    still names the URL's host. 'docs.kb-test' exists in no DNS: only pinning can reach it."""
    web.page("/", "<h1>pinned</h1>")
    lookups = []

    def resolver(host, port):
        lookups.append(host)
        return ["127.0.0.1"]

    fetcher = Fetcher(FetchPolicy(resolver=resolver, allowed=LOOPBACK))
    result = fetcher.fetch(f"http://docs.kb-test:{web.port}/")
    assert b"pinned" in result.body
    assert lookups == ["docs.kb-test"]
    assert web.requests[-1][1]["host"] == f"docs.kb-test:{web.port}"


def test_redirects_are_followed_by_hand_and_loops_stop(web):
    web.routes["/a"] = Route(b"", 301, {"Location": "/b"})
    web.routes["/b"] = Route(b"", 302, {"Location": "/c#frag"})
    web.page("/c", "<p>end</p>")
    web.routes["/loop1"] = Route(b"", 302, {"Location": "/loop2"})
    web.routes["/loop2"] = Route(b"", 302, {"Location": "/loop1"})
    fetcher = Fetcher(FetchPolicy(allowed=LOOPBACK))
    result = fetcher.fetch(web.url("/a"))
    assert result.url == web.url("/c")
    assert result.redirects == (web.url("/a"), web.url("/b"))
    with pytest.raises(FetchFailed) as excinfo:
        fetcher.fetch(web.url("/loop1"))
    assert excinfo.value.code == "INGEST_REDIRECT_LOOP"


def test_too_many_redirects(web):
    for i in range(10):
        web.routes[f"/r{i}"] = Route(b"", 302, {"Location": f"/r{i + 1}"})
    with pytest.raises(FetchFailed) as excinfo:
        Fetcher(FetchPolicy(allowed=LOOPBACK, max_redirects=3)).fetch(web.url("/r0"))
    assert excinfo.value.code == "INGEST_TOO_MANY_REDIRECTS"


def test_size_cap_declared_and_streamed_and_gzip_bomb(web):
    web.page("/big", "x" * 5000)
    bomb = gzip.compress(b"a" * 5_000_000)
    web.routes["/bomb"] = Route(
        bomb, 200, {"Content-Type": "text/html", "Content-Encoding": "gzip"}
    )
    small = gzip.compress(b"<p>fine</p>")
    web.routes["/gz"] = Route(small, 200, {"Content-Type": "text/html", "Content-Encoding": "gzip"})
    fetcher = Fetcher(FetchPolicy(allowed=LOOPBACK, max_bytes=4096))
    for path in ("/big", "/bomb"):
        with pytest.raises(ContentRejected) as excinfo:
            fetcher.fetch(web.url(path))
        assert excinfo.value.code == "INGEST_TOO_LARGE"
    assert fetcher.fetch(web.url("/gz")).body == b"<p>fine</p>"


def test_binary_content_type_is_rejected_before_reading(web):
    web.routes["/img"] = Route(b"\x89PNG\r\n" + b"\x00" * 100, 200, {"Content-Type": "image/png"})
    with pytest.raises(ContentRejected) as excinfo:
        Fetcher(FetchPolicy(allowed=LOOPBACK)).fetch(web.url("/img"))
    assert excinfo.value.code == "INGEST_UNSUPPORTED_TYPE"


def test_retries_429_and_5xx_with_backoff_then_succeeds(web):
    calls = []

    def flaky(handler):
        calls.append(1)
        if len(calls) < 3:
            return Route(
                b"busy",
                503 if len(calls) == 1 else 429,
                {"Content-Type": "text/plain", "Retry-After": "0"},
            )
        return Route(b"<p>ok</p>")

    web.routes["/flaky"] = flaky
    slept = []
    fetcher = Fetcher(FetchPolicy(allowed=LOOPBACK, retries=2, sleep=slept.append))
    assert fetcher.fetch(web.url("/flaky")).body == b"<p>ok</p>"
    assert len(calls) == 3
    assert len(slept) == 2


def test_http_error_status_has_a_stable_code(web):
    with pytest.raises(FetchFailed) as excinfo:
        Fetcher(FetchPolicy(allowed=LOOPBACK, retries=0)).fetch(web.url("/missing"))
    assert excinfo.value.code == "INGEST_HTTP_STATUS"
    assert excinfo.value.details["status"] == 404


def test_conditional_request_costs_one_304(web):
    web.page("/doc", "<p>v1</p>", ETag='"v1"')
    fetcher = Fetcher(FetchPolicy(allowed=LOOPBACK))
    first = fetcher.fetch(web.url("/doc"))
    second = fetcher.fetch(web.url("/doc"), etag=first.etag)
    assert first.etag == '"v1"' and second.not_modified and second.body == b""
    assert web.requests[-1][1]["if-none-match"] == '"v1"'


def test_slow_drip_response_hits_the_deadline(web):
    def drip(handler):
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html")
        handler.end_headers()
        try:
            for _ in range(50):
                handler.wfile.write(b"x")
                handler.wfile.flush()
                time.sleep(0.1)
        except OSError:
            pass
        return None

    web.routes["/drip"] = drip
    fetcher = Fetcher(FetchPolicy(allowed=LOOPBACK, timeout=1.0, total_timeout=1.0, retries=0))
    started = time.monotonic()
    with pytest.raises(FetchFailed) as excinfo:
        fetcher.fetch(web.url("/drip"))
    assert excinfo.value.code == "INGEST_FETCH_TIMEOUT"
    assert time.monotonic() - started < 4
