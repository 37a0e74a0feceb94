"""Documents built to hurt the worker: each ends as one failed or truncated item within the parser
budget, the worker's memory barely moves, and the rest of the run is stored."""

from __future__ import annotations

import pytest

from ingest.chunk import chunk_markdown
from ingest.extract.isolated import ParserBudget, extract_isolated
from ingest.loaders import LoadedItem
from ingest.pipeline import IngestPipeline
from kb.conf import kb_settings
from kb.models import Document, IngestRun, Namespace, Source
from tests.hostile.bombs import (
    DOCX_MIME,
    ODS_MIME,
    docx_bomb,
    encoded_word_email,
    headings_html,
    ods_bomb,
)

pytestmark = pytest.mark.django_db

SMALL_BOMB = (
    140 * 1024
)  # bytes of encoded words: small enough to be parsed inline were it not an e-mail
CPU_SECONDS = 10  # the test's parser budget: the default's 60 s would only make it slower


@pytest.fixture
def budget(settings):
    settings.KB_PARSER_CPU_SECONDS = CPU_SECONDS
    settings.KB_EXTRACT_MAX_CHARS = 200_000
    kb_settings.cache_clear()
    yield
    kb_settings.cache_clear()


def _source() -> Source:
    namespace = Namespace.objects.create(slug="tenant:hostile")
    return Source.objects.create(namespace=namespace, name="hostile", kind="text", text="x")


def _peak_rss_reset() -> None:
    with open("/proc/self/clear_refs", "w") as handle:  # resets VmHWM, the peak resident size
        handle.write("5")


def _rss_mb(field: str) -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise AssertionError(field)


def _run(items) -> IngestRun:
    run = IngestRun.objects.create(source=_source())
    return IngestPipeline(run).execute(items)


@pytest.mark.parametrize(
    "body, media_type",
    [
        pytest.param(encoded_word_email(), "message/rfc822", id="1MB-encoded-word-eml"),
        pytest.param(ods_bomb(), ODS_MIME, id="495B-ods-bomb"),
        pytest.param(headings_html(), "text/html", id="10MB-of-h2"),
    ],
)
@pytest.mark.child_process
def test_a_hostile_document_is_one_bounded_item_and_the_worker_stays_small(
    budget, body, media_type
):
    good = LoadedItem(
        ref="good", body=b"A plain page about pumpkins.", media_type="text/plain", title_hint="good"
    )
    hostile = LoadedItem(ref="hostile", body=body, media_type=media_type, title_hint="hostile")
    warm = IngestRun.objects.create(
        source=Source.objects.create(
            namespace=Namespace.objects.create(slug="warm"), name="warm", kind="text", text="x"
        )
    )
    IngestPipeline(warm).execute([good])  # the embedding model loaded before measuring
    before = _rss_mb("VmRSS")
    _peak_rss_reset()
    run = _run([hostile, good])
    growth = _rss_mb("VmHWM") - before
    print(f"{media_type} {len(body):,} bytes: worker peak RSS growth {growth:.0f} MB")
    items = {item.ref: item for item in run.items.all()}
    assert items["good"].status == "changed"
    outcome = items["hostile"]
    if outcome.status == "failed":
        assert outcome.error_code == "INGEST_PARSER_BUDGET", outcome.error_message
    else:
        stored = Document.objects.get(ref="hostile")
        assert len(stored.content) <= 200_000 + 200 and "truncated" in stored.content
    assert outcome.duration_ms <= (CPU_SECONDS * 2 + 10) * 1000
    assert growth < 200


@pytest.mark.parametrize(
    "body, media_type",
    [
        pytest.param(encoded_word_email(256 * 1024), "message/rfc822", id="email-headers"),
        # libxml2 reports its failed allocation as an XMLSyntaxError, "unknown error"
        pytest.param(docx_bomb(), DOCX_MIME, id="docx-bomb"),
    ],
)
@pytest.mark.child_process
def test_a_memory_budget_kill_is_a_budget_error_not_a_corrupt_file(body, media_type):
    with pytest.raises(Exception) as caught:
        extract_isolated(
            body, media_type, budget=ParserBudget(cpu_seconds=30, memory_bytes=1024**3)
        )
    assert caught.value.code == "INGEST_PARSER_BUDGET"


@pytest.mark.child_process
def test_text_over_the_cap_is_cut_with_a_marker(budget):
    body = ("word " * 100_000).encode()  # 500,000 characters, over the 200,000 kept
    run = _run([LoadedItem(ref="long", body=body, media_type="text/plain", title_hint="long")])
    assert run.status == "succeeded"
    content = Document.objects.get(ref="long").content
    assert len(content) < 200_200 and "truncated: the first" in content
    reason = run.items.get(
        ref="long"
    ).reason  # the run report says so, not only the stored text's end
    assert (
        reason == "new; text cut to its first 200,000 of 500,000 characters (KB_EXTRACT_MAX_CHARS)"
    )
    # and so does a run that embeds the stored text again, without reading the file
    again = IngestPipeline(
        IngestRun.objects.create(source=run.source, mode=IngestRun.Mode.REEMBED)
    ).execute(iter(()))
    assert again.items.get(ref="long").reason.endswith(
        "; text cut to its first 200,000 of 500,000 characters (KB_EXTRACT_MAX_CHARS)"
    )


@pytest.mark.child_process
def test_the_parser_child_says_how_much_it_kept_of_a_cut_text():
    html = ("<html><body>" + "<p>word word word</p>\n" * 20_000 + "</body></html>").encode()
    extracted = extract_isolated(html, "text/html", budget=ParserBudget(max_chars=50_000))
    kept, total = extracted.cut
    assert kept <= 50_000 < total and "truncated: the first" in extracted.content
    assert extract_isolated(b"<p>short</p>", "text/html").cut is None


def test_tiny_sections_are_merged_and_chunks_capped(settings):
    assert len(chunk_markdown("# a\n\n" * 20_000)) < 200  # 100 KB of headings: was 20,000 chunks
    settings.KB_MAX_CHUNKS_PER_DOCUMENT = 5
    kb_settings.cache_clear()
    try:
        body = "\n\n".join(
            f"Paragraph {i} " + "about pumpkins and soup " * 60 for i in range(40)
        ).encode()
        run = _run([LoadedItem(ref="many", body=body, media_type="text/plain", title_hint="many")])
    finally:
        kb_settings.cache_clear()
    assert run.status == "succeeded"
    assert Document.objects.get(ref="many").chunks.count() == 5
    assert "only its first 5 of " in run.items.get(ref="many").reason


def test_a_nul_byte_after_the_first_8_kb_costs_nothing_but_itself():
    body = b"a" * 9000 + b"\x00 and the rest of the text"
    run = _run(
        [
            LoadedItem(ref="nul", body=body, media_type="text/plain", title_hint="nul"),
            LoadedItem(ref="fine", body=b"fine text", media_type="text/plain", title_hint="fine"),
        ]
    )
    assert run.status == "succeeded", run.error
    assert "\x00" not in Document.objects.get(ref="nul").content
    assert Document.objects.filter(ref="fine").exists()


def test_a_document_the_database_refuses_fails_alone():
    too_long = "r" * 3000  # over Document.ref's 2048 characters (the report keeps its first 2048)
    run = _run(
        [
            LoadedItem(
                ref=too_long, body=b"some text", media_type="text/plain", title_hint="long ref"
            ),
            LoadedItem(ref="fine", body=b"fine text", media_type="text/plain", title_hint="fine"),
        ]
    )
    items = {item.ref: item for item in run.items.all()}
    refused = items[too_long[:2048]]
    assert refused.status == "failed" and refused.error_code == "INGEST_DOCUMENT_NOT_STORED", (
        refused.error_message
    )
    assert items["fine"].status == "changed"
    assert Document.objects.filter(ref="fine").exists()
    assert run.status == "partial"


@pytest.mark.child_process
def test_a_crawled_page_served_as_an_email_is_parsed_in_the_budgeted_child(
    budget, settings, allow_loopback
):
    """The encoded-word bomb served by a web server as `message/rfc822` reaches the e-mail parser
    through a crawl, and that parser runs in the child even below `KB_PARSER_INLINE_MAX_BYTES`:
    with 512 MB the child is killed (the same 140 KB took 0.7 GB in the worker's own process, and
    passed there) and the page is one failed item, while
    the pages linked from the start page are stored and the worker's memory barely moves."""
    from ingest.service import start_ingest
    from tests.webserver import Route, WebServer

    settings.KB_PARSER_MEMORY_MB = 512
    settings.KB_PARSER_INLINE_MAX_BYTES = 10 * 1024**2  # only its type sends it to the child
    kb_settings.cache_clear()
    namespace = Namespace.objects.create(slug="tenant:crawl")
    good = LoadedItem(
        ref="good", body=b"A plain page about pumpkins.", media_type="text/plain", title_hint="good"
    )
    IngestPipeline(
        IngestRun.objects.create(
            source=Source.objects.create(namespace=namespace, name="warm", kind="text", text="x")
        )
    ).execute([good])  # the embedding model loaded
    with WebServer() as web:
        web.page(
            "/",
            "<main><h1>Home</h1><p>The start page.</p><a href='/mail'>mail</a> "
            "<a href='/after.html'>after</a></main>",
        )
        web.routes["/mail"] = Route(
            encoded_word_email(SMALL_BOMB), 200, {"Content-Type": "message/rfc822"}
        )
        web.page(
            "/after.html", "<main><h1>After</h1><p>A page about pumpkins after the mail.</p></main>"
        )
        source = Source.objects.create(
            namespace=namespace,
            name="site",
            kind="crawl",
            location=web.url("/"),
            options={"use_llms_txt": False, "respect_robots": False, "max_depth": 2},
        )
        before = _rss_mb("VmRSS")
        _peak_rss_reset()
        run = start_ingest(source, sync=True)
        growth = _rss_mb("VmHWM") - before
        assert web.hits["/mail"] == 1
    print(f"crawled message/rfc822 {SMALL_BOMB:,} bytes: worker peak RSS growth {growth:.0f} MB")
    items = {item.ref: item for item in run.items.all()}
    mail = items[web.url("/mail")]
    assert (mail.status, mail.error_code) == ("failed", "INGEST_PARSER_BUDGET"), mail.error_message
    assert mail.duration_ms <= (CPU_SECONDS * 2 + 10) * 1000
    assert items[web.url("/after.html")].status == "changed"
    assert run.status == "partial"
    assert growth < 200
