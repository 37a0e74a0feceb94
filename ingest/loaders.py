"""Loaders: a source's settings in, the raw items it holds out. No ORM here.

Items are yielded lazily, so a run shows progress while it fetches. `complete` says the whole source
was listed: only then may the pipeline remove vanished documents. Web loaders fetch only through
`ingest.fetch.Fetcher`, so every hop passes the SSRF guard.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import PurePosixPath
from typing import Callable, Iterator
from urllib.parse import urljoin, urlsplit

from protego import Protego

from ingest.errors import (
    BadSitemap,
    FetchFailed,
    IngestError,
    IngestInternalError,
    UnknownSourceKind,
)
from ingest.fetch import PAGE_TYPES, TEXT_TYPES, USER_AGENT, XML_TYPES, Fetcher
from ingest.filetypes import media_type_for
from ingest.links import SKIP_EXTENSIONS, http_url, page_links, parse_sitemap
from ingest.scope import UrlScope, canonical_url
from kb.errors import KBError
from kb.markup import markdown_links

logger = logging.getLogger(__name__)
MAX_SITEMAP_FETCHES = 50  # sitemap documents one run reads, indexes included
MAX_REFERRERS = 3  # pages remembered as linking to a crawled URL, for the report of a broken link
DEFAULTS = {
    "max_depth": 2,
    "max_pages": 500,
    "use_llms_txt": True,
    "respect_robots": True,
    "keep_removed": False,
}


@dataclass(frozen=True)
class SourceSpec:
    kind: str
    location: str = ""
    text: str = ""
    name: str = ""
    options: dict = field(default_factory=dict)
    files: tuple[tuple[str, str, str], ...] = ()  # file sources: (path, storage key, sha256)

    def option(self, name: str):
        return self.options.get(name, DEFAULTS.get(name))


@dataclass(frozen=True)
class KnownDocument:
    """What the store remembers of a document: enough for conditional, cheap re-fetching."""

    ref: str
    etag: str = ""
    last_modified: str = ""
    lastmod: str = ""  # the sitemap's lastmod at the last ingest
    links: tuple[str, ...] = ()  # for crawls: outgoing links, to keep crawling past a 304


@dataclass
class LoadedItem:
    ref: str
    url: str = ""
    body: bytes | None = None
    media_type: str = ""
    charset: str | None = None
    title_hint: str = ""
    path: str = ""
    not_modified: bool = False
    error: KBError | None = None
    etag: str = ""
    last_modified: str = ""
    lastmod: str = ""
    created_at: datetime | None = None
    links: tuple[str, ...] = ()
    skipped: str = ""  # why the source's scope leaves this URL out (nothing was fetched)
    linked_from: tuple[
        str, ...
    ] = ()  # crawls: the first pages that linked here (a broken link's report)
    renamed_from: str = (
        ""  # the ref this item had before a rename or move (its document is moved, not re-read)
    )
    anchor_of: Callable[..., str] | None = (
        None  # a passage (a ChunkSpec) -> its citation anchor (a forge's #L12)
    )


FileOpener = Callable[[str, str], tuple[bytes, str]]  # (key, media type) -> (bytes, display name)


class SourceLoader:
    def __init__(
        self,
        spec: SourceSpec,
        *,
        fetcher: Fetcher | None = None,
        known: dict[str, KnownDocument] | None = None,
        open_file: FileOpener | None = None,
        only_refs: set[str] | None = None,
    ):
        self.spec = spec
        self.fetcher = fetcher
        self.known = known or {}
        self.open_file = open_file
        self.only_refs = only_refs
        self.complete = only_refs is None
        self.discovered = 0
        self.scope = UrlScope.from_options(spec.options)
        self._sitemap_fetches = 0

    def items(self) -> Iterator[LoadedItem]:
        kind = self.spec.kind
        if kind == "text":
            yield from self._counted([self._text_item()])
        elif kind == "file":
            yield from self._file_items()
        elif self.only_refs is not None:
            yield from self._counted(
                self._fetch_each([(ref, "", "") for ref in sorted(self.only_refs)])
            )
        elif kind == "url":
            yield from self._counted([self._page(self.spec.location)])
        elif kind == "llms":
            yield from self._counted(
                self._fetch_each(self._llms_links(self.spec.location, required=True))
            )
        elif kind == "sitemap":
            yield from self._counted(self._sitemap())
        elif kind == "crawl":
            yield from self._crawl()
        else:
            raise UnknownSourceKind(f"Unknown source kind {kind!r}.")

    def _counted(self, items):
        if isinstance(items, list):
            self.discovered = len(items)
        yield from items

    # --- inline text and files --------------------------------------------------------------
    def _text_item(self) -> LoadedItem:
        return LoadedItem(
            ref="inline",
            body=self.spec.text.encode("utf-8"),
            media_type="text/markdown",
            charset="utf-8",
            title_hint=self.spec.name,
            path=self.spec.name,
        )

    def _file_items(self) -> Iterator[LoadedItem]:
        self.discovered = len(self.spec.files)
        for path, key, _ in self.spec.files:
            if self.only_refs is not None and path not in self.only_refs:
                continue
            try:
                if self.open_file is None:
                    raise IngestError("No file storage is configured for file sources.")
                body, _ = self.open_file(key, media_type_for(path))
            except KBError as exc:
                yield LoadedItem(ref=path, path=path, error=exc)
                continue
            stem = PurePosixPath(path).stem.replace("-", " ").replace("_", " ")
            yield LoadedItem(
                ref=path, body=body, media_type=media_type_for(path), title_hint=stem, path=path
            )

    # --- the web ------------------------------------------------------------------------------
    def _page(self, url: str, title_hint: str = "", lastmod: str = "") -> LoadedItem:
        known = self.known.get(url)
        if known and lastmod and known.lastmod == lastmod:
            return LoadedItem(
                ref=url, url=url, not_modified=True, lastmod=lastmod, links=known.links
            )
        try:
            result = self.fetcher.fetch(
                url,
                accept=PAGE_TYPES,
                etag=known.etag if known else "",
                last_modified=known.last_modified if known else "",
            )
        except KBError as exc:
            return LoadedItem(ref=url, url=url, error=exc)
        except Exception as exc:  # a client bug on one page must not stop the source
            logger.exception("unexpected error fetching %s", url)
            return LoadedItem(
                ref=url, url=url, error=IngestInternalError(f"{type(exc).__name__}: {exc}")
            )
        if result.not_modified:
            return LoadedItem(
                ref=url,
                url=url,
                not_modified=True,
                lastmod=lastmod,
                etag=known.etag if known else "",
                links=known.links if known else (),
            )
        return LoadedItem(
            ref=url,
            url=result.url,
            body=result.body,
            media_type=result.media_type,
            charset=result.charset,
            title_hint=title_hint,
            path=urlsplit(result.url).path,
            etag=result.etag,
            last_modified=result.last_modified,
            lastmod=lastmod,
        )

    def _fetch_each(self, links) -> Iterator[LoadedItem]:
        canonical = ((canonical_url(url), title, lastmod) for url, title, lastmod in links)
        links = list(dict.fromkeys(link for link in canonical if link[0]))
        self.discovered = len(links)
        seen: set[str] = set()
        for url, title, lastmod in links:
            if url in seen:
                continue
            seen.add(url)
            refusal = self.scope.refusal(url)
            if refusal:
                yield LoadedItem(ref=url, url=url, skipped=refusal)
                continue
            yield self._page(url, title, lastmod)

    def _llms_links(self, url: str, *, required: bool) -> list[tuple[str, str, str]]:
        try:
            result = self.fetcher.fetch(url, accept=TEXT_TYPES)
        except KBError:
            if required:
                raise
            return []
        text = result.body.decode("utf-8", errors="replace")
        links, seen = [], set()
        for link in markdown_links(text):
            title, href = link.label, link.url
            target = http_url(result.url, href)
            if target and target not in seen:
                seen.add(target)
                links.append((target, title.strip(), ""))
        return links[: self.spec.option("max_pages")]

    def _probe_llms(self) -> list[tuple[str, str, str]]:
        if not self.spec.option("use_llms_txt"):
            return []
        parts = urlsplit(self.spec.location)
        return self._llms_links(f"{parts.scheme}://{parts.netloc}/llms.txt", required=False)

    def _sitemap(self) -> Iterator[LoadedItem]:
        links = self._probe_llms() or self._sitemap_links(self.spec.location, depth=0)
        yield from self._fetch_each(links[: self.spec.option("max_pages")])

    def _sitemap_links(self, url: str, depth: int) -> list[tuple[str, str, str]]:
        self._sitemap_fetches += 1
        if self._sitemap_fetches > MAX_SITEMAP_FETCHES:
            raise BadSitemap(
                f"The sitemap index lists more than {MAX_SITEMAP_FETCHES} sitemaps; "
                "point the source at one of them."
            )
        result = self.fetcher.fetch(url, accept=XML_TYPES + ("text/plain", ""))
        tag, entries = parse_sitemap(result.body, url)
        links: list[tuple[str, str, str]] = []
        if tag == "sitemapindex":
            if depth >= 3:
                raise BadSitemap(f"Sitemap indexes nest too deeply at {url!r}.")
            for entry in entries:
                if entry.get("loc"):
                    links.extend(self._sitemap_links(urljoin(url, entry["loc"]), depth + 1))
                if len(links) >= self.spec.option("max_pages"):
                    break
        elif tag == "urlset":
            links = [
                (urljoin(url, e["loc"]), "", e.get("lastmod", "")) for e in entries if e.get("loc")
            ]
        else:
            raise BadSitemap(f"{url!r} is XML but not a sitemap (<{tag}>).")
        return links

    def _crawl(self) -> Iterator[LoadedItem]:
        llms = self._probe_llms()
        if llms:
            yield from self._fetch_each(llms)
            return
        start = canonical_url(self.spec.location)
        allowed = {d.lower() for d in (self.spec.option("allowed_domains") or [])}
        origin = urlsplit(start).netloc.lower()
        robots = self._robots(start) if self.spec.option("respect_robots") else None
        max_pages, max_depth = self.spec.option("max_pages"), self.spec.option("max_depth")
        queue: deque[tuple[str, int]] = deque([(start, 0)])
        seen = {start}
        referrers: dict[str, list[str]] = {}  # queued URL -> the first pages that link to it
        ingested: set[str] = set()  # canonical URLs of the pages taken, to skip their duplicates
        fetched = 0
        while queue and fetched < max_pages:
            url, depth = queue.popleft()
            if robots is not None and not robots.can_fetch(url, USER_AGENT):
                continue
            refusal = self.scope.refusal(url) if depth > 0 else ""
            item = LoadedItem(ref=url, url=url, skipped=refusal) if refusal else self._page(url)
            item.linked_from = tuple(referrers.pop(url, ()))
            if not refusal:
                fetched += 1
            self.discovered = fetched + min(len(queue), max_pages - fetched)
            if item.body is not None and item.error is None and "html" in item.media_type:
                try:
                    links, canonical = page_links(item.body, item.url or url)
                except Exception as exc:  # a parser bug on one page must not stop the crawl
                    logger.exception("unexpected error reading the links of %s", url)
                    links, canonical = [], ""
                    item = LoadedItem(
                        ref=url,
                        url=url,
                        error=IngestInternalError(
                            f"The page's links could not be read: {type(exc).__name__}: {exc}"
                        ),
                    )
                item.links = tuple(links)
                if canonical and canonical != url and urlsplit(canonical).netloc.lower() == origin:
                    if canonical in ingested:
                        item = LoadedItem(
                            ref=url,
                            url=url,
                            skipped=f"a duplicate of {canonical}",
                            links=item.links,
                        )
                    else:
                        item.ref = canonical
            if not item.skipped and item.ref in ingested:
                # an earlier page named this one as its canonical URL (Javadoc's overview-summary
                # redirects to index.html): it is ingested once, under that name
                item = LoadedItem(
                    ref=url, url=url, skipped=f"a duplicate of {item.ref}", links=item.links
                )
            if item.error is not None:
                self.complete = False  # what lies behind a failed page was not listed
            if not item.skipped:
                ingested.add(item.ref)
            yield item
            if depth >= max_depth or (refusal and not item.links):
                continue
            for link in item.links:
                link = canonical_url(link)
                host = urlsplit(link).netloc.lower()
                if (
                    link in referrers
                    and url not in referrers[link]
                    and len(referrers[link]) < MAX_REFERRERS
                ):
                    referrers[link].append(url)
                if not link or link in seen or not (host == origin or host in allowed):
                    continue
                if urlsplit(link).path.lower().endswith(SKIP_EXTENSIONS):
                    continue
                seen.add(link)
                referrers[link] = [url]
                queue.append((link, depth + 1))
        if queue:
            self.complete = False  # stopped at max_pages: pages not reached are not "removed"

    def _robots(self, start: str) -> Protego | None:
        parts = urlsplit(start)
        try:
            result = self.fetcher.fetch(f"{parts.scheme}://{parts.netloc}/robots.txt", accept=())
        except FetchFailed:
            return None  # no robots.txt: everything is allowed
        return Protego.parse(result.body.decode("utf-8", errors="replace"))
