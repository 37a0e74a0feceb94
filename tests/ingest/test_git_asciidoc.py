"""AsciiDoc in git and folder sources, read by Asciidoctor in the parser child's sandbox, and
forge citations at the line the readers' own source positions give.

The trees are real (tests/fixtures/real/asciidoc-sources/: Git LFS's man pages, a FreeRADIUS
Antora component, Git's SubmittingPatches) and served by `git http-backend` on loopback. The
ids a section must get are those plain `asciidoctor` gives it (its HTML, what the projects
publish), read here from the command's own output, not from the product's code."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ingest.chunk import ChunkOptions, chunk_markdown
from ingest.connectors.forge import forge_citation, line_of
from ingest.pipeline import IngestPipeline
from kb.conf import kb_settings
from kb.embedding.embedders import get_embedder
from kb.models import Chunk, Document, IngestRun, Source
from tests.gitserver import GitHttpServer, WorkRepo

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real" / "asciidoc-sources"
FORGE = "https://forge.example/docs/blob/{commit}/{path}#L{line}"
MIGRATE = "lfs/docs/man/git-lfs-migrate.adoc"
PATCHES = "git/Documentation/SubmittingPatches.adoc"
RETURN_CODES = "freeradius/doc/antora/modules/unlang/pages/return_codes.adoc"
needs_asciidoctor = pytest.mark.skipif(
    shutil.which("asciidoctor") is None,
    reason="Debian's asciidoctor is not installed (scripts/asciidoctor.sh)",
)


@pytest.fixture
def served(tmp_path):
    repo = WorkRepo(tmp_path / "served" / "docs")
    shutil.copytree(REAL / "git-lfs", repo.path / "lfs")
    shutil.copytree(REAL / "freeradius", repo.path / "freeradius")
    repo.write(PATCHES, (REAL / "git/Documentation/SubmittingPatches.txt").read_bytes())
    repo.write(
        "hostile.adoc",
        "= Hostile\n:source-highlighter: pygments\n:allow-uri-read:\n:data-uri:\n"
        ":toc: preamble\n:docinfo: shared\n\n== Reads\n\ninclude::/etc/passwd[]\n\n"
        "include::../TOPSECRET.txt[]\n\n"
        "image::https://example.com/tracker.png[]\n\n[source,python]\n----\nprint(1)\n----\n\n"
        "Visible text.\n",
    )
    repo.write("TOPSECRET.txt", "TOPSECRET the server's own file\n")
    repo.commit("three AsciiDoc trees")
    with GitHttpServer(tmp_path / "served") as server:
        server.repo = repo
        yield server


def _sync(source) -> IngestRun:
    run = IngestRun.objects.create(source=source)
    IngestPipeline(run, embedder=get_embedder()).execute()
    run.refresh_from_db()
    source.refresh_from_db()
    return run


def _asciidoctor_ids(path: Path) -> list[str]:
    """The section ids Debian's plain `asciidoctor` command writes into the page it publishes."""
    html = subprocess.run(
        ["asciidoctor", "-s", "-o", "-", str(path)], capture_output=True, check=True
    ).stdout.decode()
    return re.findall(r'<h[2-6] id="([^"]+)"', html)


def _line(lines: list[str], text: str) -> int:
    return lines.index(text) + 1


@pytest.mark.slow
@pytest.mark.django_db
@needs_asciidoctor
def test_real_asciidoc_trees_become_sections_with_asciidoctors_ids_cited_at_their_heading_lines(
    namespace, git_settings, allow_loopback, served
):
    source = Source.objects.create(
        namespace=namespace,
        name="docs",
        kind="git",
        location=served.url("docs/.git"),
        options={"include": ["*.adoc"], "web_url": FORGE},
    )
    run = _sync(source)
    assert (run.status, run.items_failed) == ("succeeded", 0), run.error
    commit = served.repo.git("rev-parse", "HEAD")
    refs = set(Document.objects.filter(source=source).values_list("ref", flat=True))
    assert {MIGRATE, PATCHES, RETURN_CODES, "lfs/docs/man/git-lfs-config.adoc"} <= refs
    assert "freeradius/doc/antora/antora.yml" not in refs

    migrate = Document.objects.get(source=source, ref=MIGRATE)
    assert migrate.title == "git-lfs-migrate(1)"
    written = re.findall(r"^#+ .*\{#([^}]+)\}$", migrate.content, flags=re.M)
    assert written == _asciidoctor_ids(served.repo.path / MIGRATE)
    # the id the page's own cross-reference names: <<_import_without_rewriting_history>>
    assert "_import_without_rewriting_history" in written
    patches = Document.objects.get(source=source, ref=PATCHES)
    explicit = re.findall(r"^#+ .*\{#([^}]+)\}$", patches.content, flags=re.M)
    assert explicit == _asciidoctor_ids(served.repo.path / PATCHES)
    assert explicit[1:3] == [
        "base-branch",
        "separate-commits",
    ]  # written [[base-branch]] in the file

    # each section's first passage opens the file at its heading, as Asciidoctor's sourcemap has it
    lines = (served.repo.path / MIGRATE).read_text().splitlines()
    for heading in ("=== IMPORT", "== INCLUDE AND EXCLUDE REFERENCES", "=== Migrate local history"):
        title = heading.lstrip("= ")
        chunk = (
            Chunk.objects.filter(document=migrate, heading_path__contains=[title])
            .order_by("position")
            .first()
        )
        assert chunk.anchor == f"L{_line(lines, heading)}", heading
    assert migrate.metadata["url"] == f"https://forge.example/docs/blob/{commit}/{MIGRATE}"

    # an Antora include of a partial is not followed (secure mode), the page still reads
    codes = Document.objects.get(source=source, ref=RETURN_CODES)
    assert "rcodes give a course indication" in codes.content

    hostile = Document.objects.get(source=source, ref="hostile.adoc")
    assert "Visible text." in hostile.content and "print(1)" in hostile.content
    # secure mode writes an include as a link to its target, never the target's bytes
    assert "root:x:0" not in hostile.content and "the server's own file" not in hostile.content
    assert "data:image" not in hostile.content and "Table of Contents" not in hostile.content


@pytest.mark.slow
@needs_asciidoctor
def test_the_first_words_of_a_real_section_find_another_one_and_the_sourcemap_does_not(tmp_path):
    """Git LFS's "INCLUDE AND EXCLUDE REFERENCES" starts with the words of "INCLUDE AND EXCLUDE",
    20 lines above it: the word match cites the wrong section, Asciidoctor's line does not."""
    from ingest.extract.isolated import extract_isolated

    body = (REAL / "git-lfs/docs/man/git-lfs-migrate.adoc").read_bytes()
    extracted = extract_isolated(body, "text/asciidoc")
    lines = body.decode().splitlines()
    chunks = chunk_markdown(extracted.content, extracted.title, ChunkOptions())
    chunk = next(c for c in chunks if c.heading_path[-1:] == ("INCLUDE AND EXCLUDE REFERENCES",))
    heading = _line(lines, "== INCLUDE AND EXCLUDE REFERENCES")
    assert line_of(chunk.body, lines) != heading  # the first words' line: another section's
    _, anchor_of = forge_citation(FORGE, "abc", MIGRATE, body, dict(extracted.heading_lines))
    assert anchor_of(chunk) == f"L{heading}"


@pytest.mark.slow
@needs_asciidoctor
def test_a_documents_own_idprefix_idseparator_and_explicit_ids_are_the_anchors():
    from ingest.extract.isolated import extract_isolated

    body = (
        b"= Guide\n:idprefix:\n:idseparator: -\n\n== Getting Started\n\ntext\n\n[#own-id]\n== "
        b"Next Steps\n\n"
        b"more\n\n[[legacy]]\n=== Old Style\n\nend\n"
    )
    extracted = extract_isolated(body, "text/asciidoc")
    assert re.findall(r"\{#([^}]+)\}", extracted.content) == ["getting-started", "own-id", "legacy"]
    assert dict(extracted.heading_lines) == {"getting-started": 5, "own-id": 10, "legacy": 15}
    assert extracted.title == "Guide"


@pytest.mark.slow
@needs_asciidoctor
def test_asciidoctor_is_held_to_the_parser_childs_cpu_budget():
    from ingest.errors import ParserBudgetExceeded
    from ingest.extract.isolated import ParserBudget, extract_isolated

    body = b"= Big\n\n" + b"".join(
        b"== Section %d\n\nSome *text* and a link:https://example.com[link].\n\n" % number
        for number in range(60_000)
    )
    with pytest.raises(ParserBudgetExceeded, match="Asciidoctor exceeded its CPU or memory budget"):
        extract_isolated(body, "text/asciidoc", budget=ParserBudget(cpu_seconds=1))


@pytest.mark.slow
@pytest.mark.django_db
def test_without_asciidoctor_an_asciidoc_file_fails_alone_with_a_stable_code(
    namespace, settings, tmp_path, monkeypatch
):
    root = tmp_path / "shares"
    (root / "docs").mkdir(parents=True)
    shutil.copy(REAL / "git-lfs/docs/man/git-lfs-fetch.adoc", root / "docs/git-lfs-fetch.adoc")
    (root / "docs/notes.md").write_text("# Notes\n\nStill read.\n")
    settings.KB_FOLDER_ROOTS = [str(root)]
    kb_settings.cache_clear()
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # the parser child finds no ruby
    try:
        source = Source.objects.create(
            namespace=namespace, name="share", kind="folder", location=str(root / "docs")
        )
        run = _sync(source)
    finally:
        kb_settings.cache_clear()
    items = {item.ref: (item.status, item.error_code) for item in run.items.all()}
    assert run.status == "partial" and run.items_failed == 1
    assert items["git-lfs-fetch.adoc"] == ("failed", "INGEST_CONVERTER_MISSING")
    assert items["notes.md"][0] == "changed"
    failed = run.items.get(ref="git-lfs-fetch.adoc")
    assert "operator installs Debian's 'asciidoctor' package" in failed.error_message
