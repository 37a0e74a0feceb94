"""Every content and query path is linear in its input, on adversarial inputs.

Hypothesis picks the adversarial piece (long runs of spaces, `#`, `[`, `(`, `.`, backticks,
nested markup, one huge line, ...) and a way to repeat it; each path is timed at n and at 8n
characters (best of three, so a noisy machine cannot fail it by one slow run) and may cost at
most 20x more at 8n: linear growth passes with room, quadratic growth (64x) cannot.
"""

from __future__ import annotations

import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.boilerplate import block_keys
from ingest.chunk import chunk_markdown, chunk_text
from ingest.errors import ContentRejected
from ingest.extract import extract
from ingest.extract.text import markdown_title, normalise_text
from ingest.links import page_links, parse_sitemap
from ingest.scope import canonical_url
from kb.markup import plain_text, strip_links
from retrieval.query import analyse, normalise_query

PIECES = [
    " ",
    "\t",
    "#",
    "# a",
    "[",
    "](",
    "[](",
    "(",
    ".",
    "!",
    "`",
    "```",
    "~~~",
    "*",
    "**",
    "_",
    "<",
    "<b>",
    "<div>",
    "</div>",
    "&amp;",
    "|",
    "-",
    "\n",
    "\n\n",
    " \n",
    "a" * 7,
    "a00001 ",
    "x.y",
    "/a",
    "{#",
    "¶",
    "\u3316",
    "。",
]
SMALL = 32_000
GROWTH = 8
MAX_RATIO = 20.0


def _best_of_three(function, text) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        function(text)
        best = min(best, time.perf_counter() - started)
    return best


def _assert_linear(function, make):
    small, large = make(SMALL), make(SMALL * GROWTH)
    t_small = max(_best_of_three(function, small), 5e-3)  # a floor: tiny timings are all noise
    t_large = _best_of_three(function, large)
    assert t_large <= MAX_RATIO * t_small, (
        f"{t_small:.4f}s at {len(small)} chars, {t_large:.4f}s at {len(large)}"
    )


adversarial = st.builds(
    lambda head, piece, tail, mode: lambda n: _compose(head, piece, tail, mode, n),
    st.sampled_from(["", "# ", "a ", "<p>", "[x", "```\n"]),
    st.sampled_from(PIECES),
    st.sampled_from(["", "b", "\n", ")", "]", "#"]),
    st.sampled_from(["run", "lines", "nested"]),
)


def _compose(head: str, piece: str, tail: str, mode: str, n: int) -> str:
    if mode == "run":  # one huge run: "# a" + " " * n + "b"
        return head + piece * max(1, n // max(1, len(piece))) + tail
    if mode == "lines":
        line = head + piece * 20 + tail + "\n"
        return line * max(1, n // len(line))
    unit = "<div>" + piece if piece.startswith("<") else "[" + piece
    return unit * max(1, n // len(unit)) + tail


PATHS = {
    "normalise_text": normalise_text,
    "markdown_title": markdown_title,
    "chunk_markdown": chunk_markdown,
    "chunk_text": chunk_text,
    "strip_links": strip_links,
    "plain_text": plain_text,
    "block_keys": block_keys,
    "markdown extraction": lambda text: extract(text.encode(), "text/markdown"),
    "html extraction": lambda text: extract(
        ("<html><body><main>" + text + "</main></body></html>").encode(), "text/html"
    ),
    "html links": lambda text: page_links(
        ("<body>" + text + '<a href="/x">x</a></body>').encode(), "http://e.com/"
    ),
    "query analysis": lambda text: analyse(normalise_query(text[:4000])),
    "sitemap parsing": lambda text: _sitemap(text),
    "canonical url": lambda text: canonical_url("http://e.com/" + text[:2000]),
}


def _sitemap(text: str):
    body = (
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        + "".join(
            f"<url><loc>http://e.com/{i}</loc><lastmod>{text[:50]}</lastmod></url>"
            for i in range(len(text) // 100)
        )
        + "</urlset>"
    ).encode()
    try:
        parse_sitemap(
            body.replace(b"&", b"&amp;").replace(b"<b>", b"").replace(b"</div>", b""),
            "http://e.com/",
        )
    except ContentRejected:
        pass  # adversarial text may make it invalid XML: refused, in linear time all the same


@settings(
    max_examples=16,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(make=adversarial, path=st.sampled_from(sorted(PATHS)))
def test_content_and_query_paths_grow_linearly(make, path):
    _assert_linear(PATHS[path], make)


def test_the_measured_probes_are_linear():
    """The inputs that were measured slow: each must now grow linearly."""
    probes = [
        (markdown_title, lambda n: "# a" + " " * n + "b"),
        (normalise_text, lambda n: "<pre>" + " " * n + "\n"),
        (
            lambda t: extract(("<pre>" + t + "</pre>").encode(), "text/html"),
            lambda n: " " * n + "x\n",
        ),
        (chunk_markdown, lambda n: "." * n),
        (chunk_markdown, lambda n: "# " + " " * n + "#x"),
        (strip_links, lambda n: "[](" * (n // 3)),
        (lambda t: analyse(t), lambda n: "a" + "a/" * (n // 2)),
        (
            lambda t: extract(t.encode(), "text/html"),
            lambda n: "<div>" * (n // 5) + "deep",
        ),  # RecursionError before
        (
            lambda t: extract(("<main>" + t).encode(), "text/html"),
            lambda n: "<b><i>" * (n // 6) + "deep",
        ),
    ]
    for function, make in probes:
        _assert_linear(function, make)


def test_a_megabyte_of_adversarial_markdown_is_processed_within_seconds():
    text = ("# a" + " " * 2000 + "b\n" + "[](" * 1000 + "\n" + "." * 5000 + "\n\n") * 100  # ~1 MB
    assert len(text) > 900_000
    started = time.perf_counter()
    extracted = extract(text.encode(), "text/markdown")
    chunk_markdown(extracted.content, extracted.title)
    assert time.perf_counter() - started < 10  # about 1 s here; the bound is for slow machines
