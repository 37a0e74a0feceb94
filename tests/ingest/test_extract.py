"""HTML, markdown and text extraction: golden cases."""

import pytest

from ingest.errors import ContentRejected
from ingest.extract import extract

PAGE = """<!doctype html><html><head><title>Install &amp; configure</title>
<style>.x{color:red}</style><script>track()</script></head>
<body><nav><a href="/">Home</a></nav><header>Site header</header>
<main><h1>Install</h1>
<p>Use <code>pip</code> &mdash; it&#39;s easy. Text &lt;b&gt;stays&lt;/b&gt; text.</p>
<!-- hidden comment -->
<h2>With <em>pnpm</em></h2>
<pre><code class="language-bash">pnpm add kb
echo "done"</code></pre>
<ol><li>First <strong>step</strong></li><li>Second<ul><li>nested</li></ul></li></ol>
<table><tr><th>Option</th><th>Default</th></tr><tr><td>depth</td><td>2</td></tr></table>
<p>See <a href="guide/next.html">the next page</a> or <a href="javascript:alert(1)">this</a>.</p>
<form><input name="q"><button>Go</button></form>
</main><aside>Related</aside><footer>© footer</footer></body></html>"""

EXPECTED = """# Install

Use `pip` — it's easy. Text <b>stays</b> text.

## With pnpm

```bash
pnpm add kb
echo "done"
```

1. First **step**
2. Second
   - nested

| Option | Default |
|---|---|
| depth | 2 |

See the next page or this.
"""


def test_html_to_markdown_golden():
    result = extract(PAGE.encode(), "text/html", url="https://docs.example.com/start/index.html")
    assert result.title == "Install & configure"
    assert result.content == EXPECTED
    assert result.media_type == "text/markdown"
    assert result.links == ("https://docs.example.com/start/guide/next.html",)


def test_title_falls_back_to_first_h1():
    assert (
        extract(b"<body><h1>Only heading</h1><p>x</p></body>", "text/html").title == "Only heading"
    )


def test_code_fence_outgrows_backticks_inside_it():
    html = b'<pre class="lang-md"><code>```\nnested\n```</code></pre>'
    assert extract(html, "text/html").content == "````md\n```\nnested\n```\n````\n"


def test_broken_html_still_extracts():
    result = extract(b"<html><body><h2>Unclosed <p>para <b>bold <i>both</body", "text/html")
    assert "para" in result.content and "bold" in result.content


def test_markdown_passes_through_with_title():
    text = "---\ntitle: Front Title\n---\n# Heading\n\nBody\r\n"
    result = extract(text.encode(), "text/markdown")
    assert result.title == "Front Title"
    assert result.content == "---\ntitle: Front Title\n---\n# Heading\n\nBody\n"


def test_a_comment_or_prompt_inside_a_code_fence_is_not_the_title():
    # as in the Debian Administrator's Handbook's backup section in Chinese, whose crontab block
    # opens with a comment
    text = "## 备份和恢复\n\n```\n# MIN HR DOM MON DOW STRFTIME_FMT\n0 * * * * backup\n```\n\n# 备份工具\n"  # noqa: E501
    assert extract(text.encode(), "text/markdown").title == "备份工具"
    fenced_only = "## Setup\n\n~~~\n# apt install foo\n~~~\n"
    assert (
        extract(fenced_only.encode(), "text/markdown", fallback_title="notes.md").title
        == "notes.md"
    )


def test_plain_text_stays_plain():
    result = extract(b"line one\n\n\n\nline <b>two</b>\n", "text/plain", fallback_title="notes")
    assert result.content == "line one\n\nline <b>two</b>\n"
    assert result.media_type == "text/plain"
    assert result.title == "notes"


GERMAN = (
    "Die Straßenbahn fährt täglich über die Brücke. Müller und Schäfer grüßen die Gäste "
    "im Café am Fluss; später gehen sie zur Bäckerei, wo es süße Brötchen gibt."
)


@pytest.mark.parametrize(
    "raw, charset, expected",
    [
        (
            "Grüße aus Köln – naïve café".encode("cp1252"),
            "windows-1252",
            "Grüße aus Köln – naïve café",
        ),
        (GERMAN.encode("latin-1"), None, GERMAN),
        ("中文文本，编码检测。".encode("utf-8"), None, "中文文本，编码检测。"),
    ],
    ids=["declared", "detected-latin1", "utf8"],
)
def test_encodings_are_detected_not_assumed(raw, charset, expected):
    assert extract(raw, "text/plain", charset=charset).content.strip() == expected


def test_html_meta_charset_is_honoured():
    body = '<html><head><meta charset="iso-8859-1"></head><body><p>Café</p></body></html>'.encode(
        "latin-1"
    )
    assert extract(body, "text/html").content.strip() == "Café"


def test_binary_content_is_rejected():
    with pytest.raises(ContentRejected) as excinfo:
        extract(b"%PDF-1.7\x00\x00\x01binary", "application/octet-stream")
    assert excinfo.value.code == "INGEST_BINARY_CONTENT"
