"""Names whose digits are part of the name ("POP3", "IPv6", "UTF-8") are not versioned names: the
names channel lifts a document for a version a question asks about ("Qwen 3.8"), not for the
protocol it mentions. The rule (`kb.names.is_versioned_name`), its keys (`find_name_keys`), and a
small real collection where the protocol's namesake page would be lifted above the answer."""

from pathlib import Path

import pytest

from evaluation.search_parts import search_variant
from ingest.chunk import chunk_markdown
from ingest.extract import extract
from kb.models import Document
from kb.names import is_versioned_name
from retrieval.query import find_identifiers, find_name_keys
from retrieval.ranker import IDENTIFIERS, LEXICAL, NAMES
from tests.corpus import ingest

PAGES = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "python-net"


@pytest.mark.parametrize(
    "token",
    [
        pytest.param("Qwen3", id="capitalised-name"),
        pytest.param("python3.11", id="dotted-release"),
        pytest.param("gpt4o", id="release-with-variant"),
        pytest.param("llama-3.1-8b", id="hyphens-and-size"),
        pytest.param("Windows10", id="glued-release"),
        pytest.param("TLS1.3", id="dotted-after-capitals"),
        pytest.param("iOS17", id="mixed-case-name"),
    ],
)
def test_a_name_followed_by_its_release_is_versioned(token):
    assert is_versioned_name(token)


@pytest.mark.parametrize(
    "token",
    [
        pytest.param("POP3", id="capitals"),
        pytest.param("HTTP2", id="protocol"),
        pytest.param("UTF-8", id="hyphen"),
        pytest.param("IPv6", id="capitals-and-v"),
        pytest.param("MP3", id="two-letters"),
        pytest.param("p53", id="gene"),
        pytest.param("BRCA1", id="gene-capitals"),
        pytest.param("PI3K", id="digit-inside"),
        pytest.param("k8s", id="numeronym"),
        pytest.param("x86", id="one-letter"),
        pytest.param("GPT-4", id="an-abbreviation-with-an-integer-is-read-as-a-name"),
        pytest.param("2024", id="no-name"),
    ],
)
def test_digits_that_belong_to_the_name_are_no_version(token):
    assert not is_versioned_name(token)


@pytest.mark.parametrize(
    "query, keys",
    [
        ("port forwarding for SMTP/POP3", ()),
        ("Wie richte ich ein POP3-Konto ein?", ()),  # German: a compound of the protocol and a word
        ("如何 配置 POP3 服务器", ()),
        ("listen on an IPv6 address over HTTP/2 in UTF-8", ()),
        ("POP 3 or HTTP 2", ()),  # an abbreviation and an integer apart: still the protocol
        (
            "HTTP 1.1 and (python3.12)",
            ("python312", "http11"),
        ),  # a dotted release is a version whatever precedes it
        ("Qwen/Qwen3-8B", ("qwen38b",)),
        ("the 1,000 Genomes Project in 2015", ("1000", "2015")),  # numbers alone are keys as before
    ],
)
def test_name_keys_leave_out_protocol_and_product_tokens(query, keys):
    assert find_name_keys(query) == keys


def test_the_identifier_channel_never_sees_these_tokens():
    assert find_identifiers("POP3 IPv6 HTTP2 UTF-8 MP3 HTTP/2") == ()


def _sections(pages: Path) -> dict[str, tuple[str, str]]:
    """Each section of each page as a document of its own, named by its heading (as a manual's
    sections are: the held-out handbook sets of issue 58 have 436)."""
    sections = {}
    for page in sorted(pages.glob("*.html")):
        extracted = extract(page.read_bytes(), "text/html", charset="utf-8")
        for n, chunk in enumerate(
            chunk_markdown(extracted.content, extracted.title, web_page=True)
        ):
            sections[f"{page.stem}#{n}"] = (
                chunk.heading_path[-1] if chunk.heading_path else extracted.title,
                chunk.body,
            )
    return sections


@pytest.mark.django_db
def test_a_section_named_for_a_protocol_is_not_lifted_above_the_answer():
    """The sections of five pages of the Python 3.11 library reference (poplib, smtplib,
    email.parser, http.server, ipaddress), searched by words alone as a namespace in a language
    the model does not read is: "POP3.capa()" and "IPv6Address.__format__(fmt)" are named for
    the protocol a question mentions and answer neither question."""
    ingest("python-net", _sections(PAGES))
    titles = dict(Document.objects.filter(namespace__slug="python-net").values_list("id", "title"))
    cases = [
        (
            "How do I parse a message I downloaded over POP3 into its headers and body?",
            "parse(fp, headersonly=False)",
            "POP3.capa()",
        ),
        ("send mail over IPv6", "SMTP.sendmail(", "IPv6Address.__format__(fmt)"),
    ]
    for query, answer, namesake in cases:
        hits = search_variant(
            query, "python-net", limit=5, channels=(LEXICAL, NAMES, IDENTIFIERS)
        ).hits
        ranked = [titles[hit.document_id] for hit in hits]
        place = {
            title: n for n, title in reversed(list(enumerate(ranked)))
        }  # each title's best place
        found = [n for title, n in place.items() if title.startswith(answer)]
        assert found, (query, ranked)
        assert min(found) < place.get(namesake, len(ranked)), (query, ranked)
