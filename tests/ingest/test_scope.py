"""Crawl scope: path globs (never regular expressions) and the one canonical name of a URL."""

import pytest

from ingest.scope import UrlScope, canonical_url, glob_match


@pytest.mark.parametrize(
    "pattern, text, matches",
    [
        ("/docs/*", "/docs/a/b.html", True),
        ("/docs/*", "/blog/x", False),
        ("*/", "/user-guide/", True),
        ("*/", "/index.html", False),
        ("/genindex*", "/genindex-A.html", True),
        ("/a?c", "/abc", True),
        ("/a?c", "/ac", False),
        ("*.html", "/x/y.html", True),
        ("/_modules/*", "/_modules", False),
        ("**", "", True),
        ("/*/*.md", "/a/b.md", True),
        ("/*/*.md", "/a.md", False),
    ],
)
def test_glob_match(pattern, text, matches):
    assert glob_match(pattern, text) is matches


def test_scope_includes_then_excludes_and_says_why():
    scope = UrlScope(include=("/docs/*",), exclude=("/docs/_modules/*", "*?q=*"))
    assert scope.refusal("https://e.com/docs/guide.html") == ""
    assert scope.refusal("https://e.com/blog/") == "matches no include pattern"
    assert scope.refusal("https://e.com/docs/_modules/os.html") == "excluded by '/docs/_modules/*'"
    assert scope.refusal("https://e.com/docs/search.html?q=x") == "excluded by '*?q=*'"


@pytest.mark.parametrize(
    "url, canonical",
    [
        (
            "HTTPS://Docs.Example.com:443/a?utm_source=x&id=3#part",
            "https://docs.example.com/a?id=3",
        ),
        ("http://e.com", "http://e.com/"),
        ("http://e.com:8080/x?gclid=1&fbclid=2", "http://e.com:8080/x"),
        ("http://e.com/café", "http://e.com/caf%C3%A9"),
        ("http://bücher.example/", "http://xn--bcher-kva.example/"),
        ("http://e.com:99999/", ""),
    ],
)
def test_canonical_url(url, canonical):
    assert canonical_url(url) == canonical
