"""The product's fixed vocabulary, stated once: namespace slugs, capability ids, source kinds and
the options each kind takes. Pure: Django's validators (`kb/validators.py`), the models, the
definitions parser and the pipeline all read it from here."""

from __future__ import annotations

import re
from typing import Any

NAMESPACE_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}(:[a-z0-9][a-z0-9_.-]{0,62})?$")
CAPABILITY_ID_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]*/[a-z0-9][a-z0-9_.-]*$")

# The source kinds, stated here once (kb.models.Source.Kind gives them their labels)
URL_KINDS = ("url", "sitemap", "crawl", "llms")  # fetched from a location
MULTI_PAGE_KINDS = (
    "crawl",
    "sitemap",
    "llms",
)  # many pages of one site: they share its boilerplate
REPOSITORY_KINDS = ("folder", "git")  # listed whole from a path or repository: files with paths
SOURCE_KINDS = URL_KINDS + ("file", "text") + REPOSITORY_KINDS

# Option name -> (type, minimum, maximum) for numeric options; kinds that accept it.
SOURCE_OPTIONS: dict[str, tuple[tuple[str, ...], type, Any, Any]] = {
    "max_depth": (("crawl",), int, 0, 10),
    "max_pages": (MULTI_PAGE_KINDS, int, 1, 10000),
    "allowed_domains": (("crawl",), list, None, None),
    "use_llms_txt": (("crawl", "sitemap"), bool, None, None),
    "keep_removed": (SOURCE_KINDS, bool, None, None),
    "respect_robots": (("crawl",), bool, None, None),
    # URL path globs (`*` any run of characters, `?` one); never regular expressions; for folders
    # and repositories, globs of the file's path inside it (`docs/*.md`)
    "include": (MULTI_PAGE_KINDS + REPOSITORY_KINDS, list, None, None),
    "exclude": (MULTI_PAGE_KINDS + REPOSITORY_KINDS, list, None, None),
    # git: the branch to index ("": the remote's default), the <NAME> of the KB_GIT_TOKEN_<NAME>
    # setting that holds its token, and the forge's URL of a file at a commit, with {commit},
    # {path} and {line} (https://forge.example/group/docs/blob/{commit}/{path}#L{line})
    "branch": (("git",), str, None, None),
    "token": (("git",), str, None, None),
    "web_url": (("git",), str, None, None),
}
TEXT_OPTION_MAX_CHARS = 300
MAX_PATTERNS = 50
MAX_PATTERN_CHARS = 200
