"""A combining mark standing alone, with no letter before it, on every surface of a namespace whose
lexemes lose their accents (kb migrations 0035 and 0045). The Spanish man page `iso_8859-7.7`
(tests/fixtures/real/languages/) lists U+037A GREEK YPOGEGRAMMENI, which NFKC makes a space and
U+0345, a mark the parser reads as a word of its own: folded, it was an empty lexeme PostgreSQL
refused, so the page failed the whole ingest run and a query holding it failed."""

from __future__ import annotations

import importlib
import unicodedata
from pathlib import Path

import pytest
from django.db import connection

from ingest.errors import DocumentNotStored
from ingest.loaders import LoadedItem
from ingest.pipeline import IngestPipeline
from kb.lookalikes import unaccented
from kb.models import Chunk, Document, IngestItem, IngestRun, Namespace, Source
from retrieval.query import normalise_query
from tests.retrieval.test_languages import _lexical_refs

pytestmark = pytest.mark.django_db

PAGE = "iso_8859-7.es.7"  # its first 60 lines, as the package ships them
PAGES = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "languages"
MARKS = "\u0345", "\u0301", "\u0308", "\u0345\u0301\u0308\u0345"  # alone, and a run of marks only
NOTE = (
    "Notas de la red: el servidor de nombres responde en el puerto cincuenta y tres. "
    f"Marcas sueltas {MARKS[0]} y {MARKS[1]} y {MARKS[2]} y {MARKS[3]} entre palabras del texto."
)
# (namespace language, configuration its passages are lexed with): detected, and set
NAMESPACES = [
    pytest.param("auto", "spanish", id="spanish-detected"),
    pytest.param("french", "french", id="french"),
]
QUERIES = [
    *MARKS,
    "\u037a",
    "cortafuegos \u0345",
    "PAQUETES \u037a INTERFAZ",
    "\u0301\u0308 servidor",
]


PLAIN = (
    "El cortafuegos filtra los paquetes que llegan por la interfaz de red antes de "
    "entregarlos al servidor."
)


def _item(ref: str, body: bytes) -> LoadedItem:
    return LoadedItem(ref=ref, body=body, media_type="text/plain", charset="utf-8", path=ref)


def _ingest(slug: str, language: str, *more: LoadedItem) -> tuple[Namespace, IngestRun]:
    namespace = Namespace.objects.create(slug=slug, title=slug, is_public=True, language=language)
    source = Source.objects.create(
        namespace=namespace, name="paginas", kind=Source.Kind.TEXT, text="x"
    )
    run = IngestRun.objects.create(source=source)
    items = [_item(PAGE, (PAGES / PAGE).read_bytes()), _item("notas.txt", NOTE.encode()), *more]
    IngestPipeline(run).execute(iter(items))
    run.refresh_from_db()
    return namespace, run


@pytest.mark.parametrize("language, config", NAMESPACES)
def test_a_page_holding_lone_combining_marks_is_stored_and_found_by_its_other_words(
    language, config
):
    namespace, run = _ingest(f"marks-{config}", language)
    assert (run.status, run.items_failed, run.error) == ("succeeded", 0, "")
    assert set(
        Chunk.objects.filter(namespace=namespace).values_list("search_config", flat=True)
    ) == {config}
    if language == "auto":
        assert dict(
            Document.objects.filter(namespace=namespace).values_list("ref", "language")
        ) == {PAGE: "es", "notas.txt": "es"}
    with (
        connection.cursor() as cursor
    ):  # nothing lost: the mark is a lexeme of both pages, as written
        cursor.execute(
            "SELECT d.ref FROM kb_chunk c JOIN kb_document d ON d.id = c.document_id "
            "WHERE c.namespace_id = %s AND c.search_vector @@ %s::tsquery ORDER BY 1",
            [namespace.pk, "'\u0345'"],
        )
        assert [ref for (ref,) in cursor.fetchall()] == ["iso_8859-7.es.7", "notas.txt"]
    assert _lexical_refs(namespace, "ypogegrammeni") == [PAGE]
    assert _lexical_refs(namespace, "monotonico griego") == [PAGE]  # typed without its accent
    assert _lexical_refs(namespace, "servidor de nombres")[:1] == ["notas.txt"]


@pytest.mark.parametrize("language, config", NAMESPACES)
def test_a_query_made_of_or_holding_lone_marks_is_answered(client, language, config):
    namespace = Namespace.objects.create(
        slug=f"marks-query-{config}", title="q", is_public=True, language=language
    )
    source = Source.objects.create(
        namespace=namespace, name="paginas", kind=Source.Kind.TEXT, text="x"
    )
    IngestPipeline(IngestRun.objects.create(source=source)).execute(
        iter([_item("cortafuegos.txt", PLAIN.encode())])
    )
    assert set(
        Chunk.objects.filter(namespace=namespace).values_list("search_config", flat=True)
    ) == {config}
    page = Document.objects.get(namespace=namespace).pk
    for query in QUERIES:
        response = client.get("/api/search", {"query": query, "namespace": namespace.slug})
        assert response.status_code == 200, (query, response.content)
        if any(
            letter.isascii() and letter.isalpha() for letter in query
        ):  # a word beside the marks finds its page
            assert [hit["document_id"] for hit in response.json()["results"]][:1] == [page], query


FOLDED = [
    *MARKS,
    "\u037a",
    " \u0345 ",
    "a \u0345 b",
    "\u0345\u03b1",
    "caf\u00e9 \u0345\u0301 x",
    "x\u0345",
]


@pytest.mark.parametrize("config", ["spanish", "french", "italian", "portuguese", "romanian"])
def test_lone_marks_fold_in_python_as_in_the_database(config):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT s, kb_fold(s), tsvector_to_array(kb_lex(%s, s)),"
            " tsvector_to_array(to_tsvector(%s::regconfig, kb_fold(s))), querytree(kb_query(%s, s))"
            " FROM unnest(%s::text[]) WITH ORDINALITY AS t(s, i) ORDER BY i",
            [config, config, config, FOLDED],
        )
        rows = cursor.fetchall()
    checked = 0
    for text, folded, lexemes, stemmed, query in rows:
        assert folded.strip() == normalise_query(text), (
            text
        )  # a query strips its ends; the lexemes are alike
        assert "" not in lexemes and "''" not in query, (
            text
        )  # never an empty lexeme, in a passage or a query
        # a lexeme of marks only is kept as written in the database, as `unaccented` keeps it in
        # Python
        marks_only = [stem for stem in stemmed if all(unicodedata.combining(c) for c in stem)]
        assert all(unaccented(stem) == stem and stem in lexemes for stem in marks_only), text
        checked += len(marks_only)
    assert checked == 6  # U+0345 alone, in a run of marks, and made by NFKC of U+037A


def test_a_lexeme_the_database_refuses_fails_its_page_only():
    # the functions as they were before 0045, inside this test's transaction: a lone mark folds to
    # an empty lexeme, which PostgreSQL cannot read back (a syntax error, not a DataError)
    before = importlib.import_module(
        "kb.migrations.0045_lone_marks_keep_their_lexeme"
    ).PREVIOUS_FUNCTIONS
    with connection.cursor() as cursor:
        cursor.execute(before)
    namespace, run = _ingest("marks-refused", "auto", _item("cortafuegos.txt", PLAIN.encode()))
    assert (run.status, run.items_failed) == ("partial", 2), run.error
    assert _lexical_refs(namespace, "cortafuegos") == [
        "cortafuegos.txt"
    ]  # the rest of the batch is stored
    failed = IngestItem.objects.filter(run=run, status=IngestItem.Status.FAILED)
    assert {(item.ref, item.error_code) for item in failed} == {
        (PAGE, DocumentNotStored.code),
        ("notas.txt", DocumentNotStored.code),
    }
    assert "syntax error in tsvector" in failed.first().error_message
