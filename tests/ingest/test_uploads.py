"""Files into file sources, from the API and the admin: single files, many files and .zip
archives (bombs, traversal, nesting), no storage keys from callers, incremental re-ingest, and
the document views a citation opens, with their headers and tenancy."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile

from ingest.errors import ArchiveRejected, UnsupportedType
from ingest.service import start_ingest
from ingest.uploads import add_files, safe_member_path
from kb.auth import issue_token
from kb.models import ApiToken, Chunk, Document, Namespace, Source

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real" / "documents"
pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    from kb.conf import kb_settings

    settings.MEDIA_ROOT = str(tmp_path)
    kb_settings.cache_clear()
    yield tmp_path
    kb_settings.cache_clear()


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


def _source(namespace, name="files"):
    return Source.objects.create(namespace=namespace, name=name, kind="file")


@pytest.mark.child_process
def test_a_zip_becomes_one_document_per_member_with_its_path_as_ref(namespace):
    source = _source(namespace)
    archive = _zip(
        {
            "manuals/cad.pdf": (REAL / "asymptote-CAD.pdf").read_bytes(),
            "slides/charts.pptx": (REAL / "cht-replace-data.pptx").read_bytes(),
            "notes/readme.md": b"# Readme\n\nHello.\n",
            "office/styles.docx": (REAL / "par-known-styles.docx").read_bytes(),
            "office/sheet.xlsx": (REAL / "shp-embedded-xlsx.xlsx").read_bytes(),
            "office/manual.odt": (REAL / "api-for-odfpy.odt").read_bytes(),
            "office/sums.ods": (REAL / "pythagoras-kspread.ods").read_bytes(),
            "data/table.csv": b"name,value\nalpha,1\nbeta,2\n",
            "mail/digest.eml": (REAL / "msg_02.eml").read_bytes(),
            "../../etc/evil.md": b"# no",
            "bundle/../evil.txt": b"climbs out of its folder",
            "inner.zip": _zip({"a.md": b"# A"}),
            "picture.gif": b"GIF89a",  # images other than PNG, JPEG, TIFF and WebP are not read
        }
    )
    report = add_files(source, [("bundle.zip", io.BytesIO(archive))])
    assert sorted(report.added) == [
        "data/table.csv",
        "mail/digest.eml",
        "manuals/cad.pdf",
        "notes/readme.md",
        "office/manual.odt",
        "office/sheet.xlsx",
        "office/styles.docx",
        "office/sums.ods",
        "slides/charts.pptx",
    ]
    assert {s["path"] for s in report.skipped} == {
        "../../etc/evil.md",
        "bundle/../evil.txt",
        "inner.zip",
        "picture.gif",
    }
    run = start_ingest(source, sync=True)
    assert run.status == "succeeded", list(
        run.items.values_list("ref", "error_code", "error_message")
    )
    documents = {d.ref: d for d in Document.objects.filter(source=source)}
    assert set(documents) == set(report.added)
    pdf_chunks = Chunk.objects.filter(document=documents["manuals/cad.pdf"])
    assert {c.page_start for c in pdf_chunks} >= {1, 7}
    slides = Chunk.objects.filter(document=documents["slides/charts.pptx"])
    assert {c.anchor for c in slides} >= {"slide-1", "slide-7"}
    assert Chunk.objects.filter(
        document=documents["office/sheet.xlsx"], page_start=1, anchor="sheet-1"
    ).exists()
    assert ["Heading 1"] in [
        c.heading_path for c in Chunk.objects.filter(document=documents["office/styles.docx"])
    ]
    assert documents["mail/digest.eml"].title == "Ppp digest, Vol 1 #2 - 5 msgs"
    assert "| alpha | 1 |" in documents["data/table.csv"].content


def test_zip_bombs_and_too_many_members_are_refused(namespace, settings):
    from kb.conf import kb_settings

    source = _source(namespace)
    settings.KB_ARCHIVE_MAX_BYTES = 1024 * 1024
    kb_settings.cache_clear()
    bomb = _zip({"big.txt": b"0" * (5 * 1024 * 1024)})  # 5 MB of zeros packs to a few KB
    assert len(bomb) < 64 * 1024
    with pytest.raises(ArchiveRejected, match="unpacks to"):
        add_files(source, [("bomb.zip", io.BytesIO(bomb))])
    settings.KB_ARCHIVE_MAX_FILES = 3
    kb_settings.cache_clear()
    with pytest.raises(ArchiveRejected, match="declares 4 entries"):
        add_files(source, [("many.zip", io.BytesIO(_zip({f"{i}.md": b"# x" for i in range(4)})))])
    assert not source.files.exists()


@pytest.mark.parametrize(
    "path, safe",
    [
        ("docs/a.md", "docs/a.md"),
        ("./docs//a.md", "docs/a.md"),
        ("../a.md", ""),
        ("docs/../../a.md", ""),
        ("/etc/passwd", ""),
        ("C:/Windows/x.md", ""),
        ("a\\..\\..\\b.md", ""),
        ("a\x00.md", ""),
        ("bundle/../evil.txt", ""),
        ("a/b/../c.md", ""),  # a name that climbs is skipped, even back inside
    ],
)
def test_member_paths_never_leave_the_source(path, safe):
    assert safe_member_path(path) == safe


@pytest.mark.child_process
def test_an_unchanged_file_costs_a_hash_and_the_same_upload_again_changes_nothing(namespace):
    source = _source(namespace)
    pdf = (REAL / "asymptote-CAD.pdf").read_bytes()
    add_files(source, [("cad.pdf", io.BytesIO(pdf))])
    first = start_ingest(source, sync=True)
    assert first.items_changed == 1
    again = add_files(source, [("cad.pdf", io.BytesIO(pdf))])
    assert again.unchanged == ["cad.pdf"] and not again.added and not again.replaced
    second = start_ingest(source, sync=True)
    item = second.items.get()
    assert (item.status, item.reason) == ("unchanged", "same bytes")  # no extraction, no embedding
    assert second.chunks_embedded == 0


def test_a_file_sent_loose_and_in_a_zip_of_the_same_upload_is_one_file(namespace):
    """A file sent loose and again inside a .zip is one file, added once; a different file under
    the same path is skipped; the answer names each archive."""
    source = _source(namespace)
    note, other = b"Notes on the pumpkin harvest.", b"Another file named like the note."
    report = add_files(
        source,
        [
            ("note.txt", io.BytesIO(note)),
            ("lot.zip", io.BytesIO(_zip({"note.txt": note, "extra.md": b"# Extra"}))),
            ("again.zip", io.BytesIO(_zip({"note.txt": other}))),
        ],
    )
    assert report.added == ["note.txt", "extra.md"] and not report.unchanged and not report.replaced
    assert report.archives == [{"name": "lot.zip", "files": 2}, {"name": "again.zip", "files": 1}]
    assert [(s["path"], s["code"]) for s in report.skipped] == [("note.txt", "KB_CONFLICT")]
    assert source.files.get(path="note.txt").byte_size == len(note)  # the first one sent is kept


def test_api_upload_is_multipart_and_storage_keys_are_not_accepted(client, namespace):
    other = Namespace.objects.create(slug="tenant:other")
    _, write = issue_token("w", namespaces=[namespace], scope=ApiToken.Scope.WRITE)
    _, other_write = issue_token("o", namespaces=[other], scope=ApiToken.Scope.WRITE)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {write}"}
    victim = _source(other, "victim")
    add_files(victim, [("secret.md", io.BytesIO(b"# Secret of B\n\nThe launch code is 1234.\n"))])
    key = victim.files.get().key

    # a write token for namespace A cannot point a file source at namespace B's bytes
    created = client.post(
        "/api/sources",
        data={"namespace": namespace.slug, "name": "steal", "kind": "file", "location": key},
        content_type="application/json",
        **auth,
    )
    assert created.status_code == 422 and created.json()["code"] == "KB_INVALID_INPUT"

    created = client.post(
        "/api/sources",
        data={"namespace": namespace.slug, "name": "docs", "kind": "file"},
        content_type="application/json",
        **auth,
    )
    assert created.status_code == 201, created.content
    source_id = created.json()["id"]
    patched = client.patch(
        f"/api/sources/{source_id}", data={"location": key}, content_type="application/json", **auth
    )
    assert patched.status_code == 422

    upload = client.post(
        f"/api/sources/{source_id}/files",
        data={
            "files": [
                SimpleUploadedFile("slides.pptx", (REAL / "cht-replace-data.pptx").read_bytes()),
                SimpleUploadedFile("notes.md", b"# Notes\n\nPlain notes.\n"),
            ]
        },
        **auth,
    )
    assert upload.status_code == 201, upload.content
    assert sorted(upload.json()["added"]) == ["notes.md", "slides.pptx"] and upload.json()["run_id"]
    # another namespace's writer sees the source as missing, not as forbidden
    foreign = client.post(
        f"/api/sources/{source_id}/files",
        data={"files": [SimpleUploadedFile("x.md", b"# x")]},
        HTTP_AUTHORIZATION=f"Bearer {other_write}",
    )
    assert foreign.status_code in (403, 404)
    assert not Source.objects.get(pk=source_id).files.filter(path="x.md").exists()


@pytest.mark.child_process
def test_document_views_serve_the_original_safely_and_only_to_readers(client, namespace):
    source = _source(namespace)
    add_files(
        source,
        [
            ("cad.pdf", io.BytesIO((REAL / "asymptote-CAD.pdf").read_bytes())),
            (
                "page.html",
                io.BytesIO(
                    b"<html><body><main><h1 id='t'>Title</h1><p>x</p>"
                    b"<script>alert(1)</script></main></body></html>"
                ),
            ),
        ],
    )
    assert start_ingest(source, sync=True).status == "succeeded"
    pdf = Document.objects.get(source=source, ref="cad.pdf")
    html = Document.objects.get(source=source, ref="page.html")
    staff = get_user_model().objects.create_user(
        "curator", password="pw", is_staff=True, is_superuser=True
    )

    anonymous = client.get(f"/documents/{pdf.pk}/original")
    missing = client.get("/documents/999999/original")
    assert (
        anonymous.status_code == missing.status_code == 404
    )  # a private document reads as missing
    # one page for both: they differ only in the number asked for, which the sign-in link returns to
    assert anonymous.content.replace(
        f"/documents/{pdf.pk}/".encode(), b"/documents/N/"
    ) == missing.content.replace(b"/documents/999999/", b"/documents/N/")

    client.force_login(staff)
    original = client.get(f"/documents/{pdf.pk}/original")
    assert original.status_code == 200 and original.content.startswith(b"%PDF")
    assert (
        original["Content-Type"] == "application/pdf"
        and original["X-Content-Type-Options"] == "nosniff"
    )
    assert original["Content-Disposition"].startswith("inline")
    assert "default-src 'none'" in original["Content-Security-Policy"]
    served_html = client.get(f"/documents/{html.pk}/original")
    assert served_html["Content-Disposition"].startswith("attachment")
    assert served_html["Content-Type"] == "application/octet-stream"
    assert served_html["Content-Security-Policy"].startswith("sandbox")

    view = client.get(f"/documents/{pdf.pk}/")
    assert view.status_code == 200 and b'href="original#page=7"' in view.content

    from retrieval.service import search

    hit = search("Asymptote CAD drawing", namespace.slug, limit=20, log=False).hits
    cited = [h for h in hit if h.document_id == pdf.pk]
    assert (
        cited
        and cited[0].citation_url == f"/documents/{pdf.pk}/original#page={cited[0].page_start}"
    )


@pytest.mark.child_process
def test_page_and_api_show_where_in_the_document_a_passage_is(client, namespace):
    Namespace.objects.filter(pk=namespace.pk).update(is_public=True)
    source = _source(namespace)
    add_files(
        source,
        [
            ("slides.pptx", io.BytesIO((REAL / "cht-replace-data.pptx").read_bytes())),
            ("manual.pdf", io.BytesIO((REAL / "asymptote-CAD.pdf").read_bytes())),
        ],
    )
    assert start_ingest(source, sync=True).status == "succeeded"
    api = client.get(
        "/api/search", {"query": "CAD drawing conventions", "namespace": namespace.slug}
    )
    results = api.json()["results"]
    pdf_hit = next(r for r in results if r["citation_url"].endswith(f"#page={r['page_start']}"))
    pages = (
        f"p. {pdf_hit['page_start']}",
        f"pp. {pdf_hit['page_start']}\u2013{pdf_hit['page_end']}",
    )
    assert pdf_hit["location"] in pages
    page = client.get("/", {"q": "CAD drawing conventions", "namespace": namespace.slug})
    assert f'<span class="location">{pdf_hit["location"]}</span>' in page.content.decode()
    context = client.post(
        "/api/context",
        data={"query": "CAD drawing conventions", "namespace": namespace.slug},
        content_type="application/json",
    )
    assert (
        context.status_code == 200
        and f'location="{pdf_hit["location"]}"' in context.json()["context"]
    )
    detail = client.get(
        f"/api/documents/{pdf_hit['document_id']}"
    ).json()  # what was read, and what is stored
    assert (detail["original_type"], detail["media_type"]) == ("application/pdf", "text/markdown")
    listed = client.get("/api/documents", {"namespace": namespace.slug}).json()["results"]
    assert {d["original_type"] for d in listed} == {
        "application/pdf",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    }
    client.force_login(
        get_user_model().objects.create_superuser("root", "root@example.org", "pw-root-123")
    )
    console = client.get("/admin/kb/document/").content.decode()
    assert (
        '<td class="field-type_read">application/pdf</td>' in console
        and "text/markdown</td>" not in console
    )


def test_admin_takes_many_files_and_a_zip_in_one_save(client, namespace):
    staff = get_user_model().objects.create_user(
        "curator", password="pw", is_staff=True, is_superuser=True
    )
    client.force_login(staff)
    response = client.post(
        "/admin/kb/source/add/",
        {
            "namespace": namespace.pk,
            "name": "uploads",
            "kind": "file",
            "location": "",
            "text": "",
            "options": "{}",
            "enabled": "on",
            "priority": "0",
            "refresh_interval": "",
            "files": [
                SimpleUploadedFile("notes.md", b"# Notes\n\nAdmin upload.\n"),
                SimpleUploadedFile(
                    "more.zip",
                    _zip(
                        {"a/b.md": b"# B\n\nZipped.\n", "c.eml": (REAL / "msg_02.eml").read_bytes()}
                    ),
                ),
            ],
            "files-TOTAL_FORMS": "0",
            "files-INITIAL_FORMS": "0",
            "runs-TOTAL_FORMS": "0",
            "runs-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    source = Source.objects.get(name="uploads")
    assert sorted(source.files.values_list("path", flat=True)) == ["a/b.md", "c.eml", "notes.md"]


def test_a_refused_file_is_the_forms_error_naming_it_and_an_empty_one_is_skipped_with_its_code(
    client, namespace, settings
):
    """A bomb among good files: the admin form says which file was refused and why, and that
    nothing of the upload was stored, and saves nothing (no "changed successfully"). An empty
    file is skipped with INGEST_EMPTY_CONTENT by the console and the API alike, the rest stored."""
    from kb.conf import kb_settings

    settings.KB_ARCHIVE_MAX_BYTES = 1024 * 1024
    kb_settings.cache_clear()
    staff = get_user_model().objects.create_user(
        "curator", password="pw", is_staff=True, is_superuser=True
    )
    client.force_login(staff)
    form = {
        "namespace": namespace.pk,
        "name": "uploads",
        "kind": "file",
        "location": "",
        "text": "",
        "options": "{}",
        "enabled": "on",
        "priority": "0",
        "refresh_interval": "",
        "files-TOTAL_FORMS": "0",
        "files-INITIAL_FORMS": "0",
        "runs-TOTAL_FORMS": "0",
        "runs-INITIAL_FORMS": "0",
    }
    bomb = _zip({"big.txt": b"0" * (5 * 1024 * 1024)})
    refused = client.post(
        "/admin/kb/source/add/",
        {
            **form,
            "files": [
                SimpleUploadedFile("poem.md", b"# Poem\n\nKept only if all is.\n"),
                SimpleUploadedFile("bomb.zip", bomb),
            ],
        },
    )
    page = refused.content.decode()
    assert refused.status_code == 200 and "INGEST_ARCHIVE_REJECTED: bomb.zip: " in page
    with pytest.raises(ArchiveRejected) as raised:  # the API says it alike, and which upload
        add_files(_source(namespace), [("a.txt", io.BytesIO(b"x")), ("e.zip", io.BytesIO(bomb))])
    assert raised.value.message.startswith("e.zip: ") and raised.value.details["upload"] == "e.zip"
    assert "Nothing of this upload was stored." in page and "successfully" not in page
    assert not Source.objects.filter(name="uploads").exists()
    saved = client.post(
        "/admin/kb/source/add/",
        {
            **form,
            "files": [
                SimpleUploadedFile("empty.txt", b""),
                SimpleUploadedFile("poem.md", b"# Poem\n\nStored.\n"),
            ],
        },
        follow=True,
    )
    messages = [str(m) for m in saved.context["messages"]]
    assert any(
        "1 added" in m and "empty.txt: INGEST_EMPTY_CONTENT, the file is empty" in m
        for m in messages
    ), messages
    source = Source.objects.get(name="uploads")
    assert list(source.files.values_list("path", flat=True)) == ["poem.md"]
    _, token = issue_token("uploader", namespaces=[namespace], scope="write")
    answer = client.post(
        f"/api/sources/{source.pk}/files",
        {"files": [SimpleUploadedFile("empty2.txt", b"")]},
        headers={"Authorization": f"Bearer {token}"},
    ).json()
    assert (
        answer["skipped"]
        == [{"path": "empty2.txt", "code": "INGEST_EMPTY_CONTENT", "message": "the file is empty"}]
        and answer["added"] == []
    )


def test_a_loose_file_of_a_type_not_read_refuses_the_upload_as_the_docs_say(client, namespace):
    """docs/ingesting.md: "In the console a refused file is the form's error, naming it, and nothing
    of the upload is saved". A file chosen by hand whose type is not read is refused so (it used to
    be skipped, the rest saved); a .zip's stray members are still skipped and reported."""
    staff = get_user_model().objects.create_user(
        "curator", password="pw", is_staff=True, is_superuser=True
    )
    client.force_login(staff)
    form = {
        "namespace": namespace.pk,
        "name": "uploads",
        "kind": "file",
        "location": "",
        "text": "",
        "enabled": "on",
        "priority": "0",
        "refresh_interval": "",
        "files-TOTAL_FORMS": "0",
        "files-INITIAL_FORMS": "0",
        "runs-TOTAL_FORMS": "0",
        "runs-INITIAL_FORMS": "0",
    }
    refused = client.post(
        "/admin/kb/source/add/?kind=file",
        {
            **form,
            "files": [
                SimpleUploadedFile("poem.md", b"# Poem\n\nKept only if all is.\n"),
                SimpleUploadedFile("setup.exe", b"MZ\x90\x00"),
            ],
        },
    )
    page = refused.content.decode()
    assert refused.status_code == 200 and "INGEST_UNSUPPORTED_TYPE: setup.exe: " in page, page[
        :3000
    ]
    assert "Nothing of this upload was stored." in page and "successfully" not in page
    assert not Source.objects.filter(name="uploads").exists()
    source = _source(namespace)
    with pytest.raises(UnsupportedType) as raised:  # the API alike
        add_files(source, [("poem.md", io.BytesIO(b"# Poem")), ("setup.exe", io.BytesIO(b"MZ"))])
    assert raised.value.details["upload"] == "setup.exe" and not source.files.exists()
    report = add_files(
        source, [("bundle.zip", io.BytesIO(_zip({"poem.md": b"# Poem", "setup.exe": b"MZ"})))]
    )
    assert report.added == ["poem.md"] and [s["path"] for s in report.skipped] == ["setup.exe"]


@pytest.mark.child_process
def test_bad_files_are_item_errors_with_their_codes_and_the_run_goes_on(namespace):
    pdfium = pytest.importorskip("pypdfium2")
    page = pdfium.PdfDocument(REAL / "asymptote-CAD.pdf")[0]
    scan = io.BytesIO()
    page.render(scale=0.5).to_pil().save(scan, format="PDF")
    source = _source(namespace)
    add_files(
        source,
        [
            ("scan.pdf", io.BytesIO(scan.getvalue())),
            ("broken.docx", io.BytesIO(b"PK\x03\x04 not a zip")),
            ("macro.docm", io.BytesIO(b"anything")),
            ("good.md", io.BytesIO(b"# Good\n\nText.\n")),
        ],
    )
    run = start_ingest(source, sync=True)
    assert run.status == "partial"
    codes = dict(run.items.values_list("ref", "error_code"))
    assert codes == {
        "scan.pdf": "INGEST_NO_TEXT_LAYER",
        "broken.docx": "INGEST_CORRUPT_FILE",
        "macro.docm": "INGEST_MACROS_REFUSED",
        "good.md": "",
    }
