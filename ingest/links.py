"""What links a fetched document holds: a sitemap's entries, a page's links and its canonical
URL, and which links a crawl never follows. Pure: bytes in, URLs out; the loaders
(`ingest/loaders.py`) fetch."""

from __future__ import annotations

from urllib.parse import urldefrag, urljoin, urlsplit

from bs4 import BeautifulSoup
from defusedxml import ElementTree as SafeXML
from defusedxml.common import DefusedXmlException

from ingest.errors import BadSitemap
from ingest.scope import canonical_url

SKIP_EXTENSIONS = (  # a crawl does not follow links to these files
    ".png",
    ".jpg",
    ".jpeg",
    ".gif",
    ".svg",
    ".webp",
    ".ico",
    ".pdf",
    ".zip",
    ".gz",
    ".tar",
    ".mp4",
    ".mp3",
    ".woff",
    ".woff2",
    ".ttf",
    ".css",
    ".js",
    ".json",
    ".xml",
    ".exe",
    ".dmg",
)


def parse_sitemap(body: bytes, url: str) -> tuple[str, list[dict[str, str]]]:
    """A sitemap document's root tag (`urlset`, `sitemapindex`, ...) and its entries' fields."""
    try:
        root = SafeXML.fromstring(body)
    except (DefusedXmlException, SafeXML.ParseError) as exc:
        raise BadSitemap(f"The sitemap at {url!r} is not valid, safe XML: {exc}") from exc
    entries = [
        {c.tag.rsplit("}", 1)[-1]: (c.text or "").strip() for c in node}
        for node in root
        if node.tag.rsplit("}", 1)[-1] in ("url", "sitemap")
    ]
    return root.tag.rsplit("}", 1)[-1], entries


def page_links(body: bytes, base: str) -> tuple[list[str], str]:
    """Every http(s) link on the page (navigation included: it is how a crawl finds pages),
    without fragments, and the page's `<link rel=canonical>` ("" when it declares none)."""
    soup = BeautifulSoup(body, "html.parser")
    links = []
    for anchor in soup.find_all("a", href=True):
        target = http_url(base, anchor["href"])
        if target:
            links.append(target)
    canonical = ""
    for tag in soup.find_all("link", href=True):
        if "canonical" in [r.lower() for r in (tag.get("rel") or [])]:
            target = http_url(base, tag["href"])
            if target:
                canonical = canonical_url(target)
            break
    return list(dict.fromkeys(links)), canonical


def http_url(base: str, href: str) -> str:
    """The absolute http(s) URL an href names, without its fragment; "" for anything else,
    including an href that is no URL at all (`http://HOST[:PORT]/` in a manual's prose makes
    `urlsplit` raise): such a link is not followed, and the page is read as usual."""
    try:
        target = urldefrag(urljoin(base, href.strip()))[0]
        if urlsplit(target).scheme in ("http", "https"):
            canonical_url(target)  # it must survive the crawl's own normalisation too
            return target
    except ValueError:
        pass
    return ""
