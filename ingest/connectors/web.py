"""Web sources (a page, a sitemap, a crawl, an llms.txt): today's `SourceLoader` behind the
connector contract. The version of a page is its HTTP validator (ETag, Last-Modified, the
sitemap's lastmod): an unchanged page answers 304 and costs no parse. A moved page is a new
URL: the old one is removed, the new one read (the web says nothing of renames)."""

from __future__ import annotations

from typing import Iterator

from ingest.connectors.base import Connector
from ingest.fetch import Fetcher
from ingest.loaders import LoadedItem, SourceLoader
from kb.vocabulary import URL_KINDS


class LoaderConnector(Connector):
    """A connector that hands the work to `SourceLoader`, whose `complete` says whether it
    listed the whole source."""

    def __init__(self, spec, **kwargs):
        super().__init__(spec, **kwargs)
        self.loader = SourceLoader(
            spec,
            fetcher=self.fetcher,
            known=self.known,
            open_file=self.open_file,
            only_refs=self.only_refs,
        )

    def items(self) -> Iterator[LoadedItem]:
        for item in self.loader.items():
            self.discovered = self.loader.discovered
            yield item
        self.discovered = self.loader.discovered

    @property
    def complete(self) -> bool:
        return self.loader.complete

    @complete.setter
    def complete(self, value: bool) -> None:
        pass  # the loader decides, as it reads


class WebConnector(LoaderConnector):
    kinds = URL_KINDS

    def __init__(self, spec, *, fetcher: Fetcher | None = None, **kwargs):
        super().__init__(
            spec, fetcher=fetcher or Fetcher(), **kwargs
        )  # every hop through the SSRF guard
