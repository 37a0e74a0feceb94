"""Results by document and the fusion weights, through the real service, API and page."""

import re

import pytest
from django.utils import timezone

from ingest.loaders import LoadedItem
from ingest.pipeline import IngestPipeline
from kb.models import FusionCalibration, IngestRun, Namespace, Source
from retrieval.errors import InvalidQuery
from retrieval.service import search
from tests.corpus import ingest

pytestmark = pytest.mark.django_db

SECTIONS = {
    "watering": "Water pumpkins deeply once a week; the roots go down far and shallow watering "
    "keeps them weak.",
    "soil": "Pumpkins want rich soil with plenty of compost dug in before planting, and full sun "
    "all day.",
    "harvest": "Harvest pumpkins when the rind is hard and the stem has dried; cure them in the "
    "sun for a week.",
}


def guide(namespace):
    """One markdown page with three sections, beside the six one-passage documents."""
    source = Source.objects.create(namespace=namespace, name="guide", kind="text", text="x")
    body = "# Pumpkin growing guide\n\n" + "\n\n".join(
        f"## {name.title()} {{#{name}}}\n\n{text} " * 1 for name, text in SECTIONS.items()
    )
    run = IngestPipeline(IngestRun.objects.create(source=source)).execute(
        [
            LoadedItem(
                ref="guide.md", body=body.encode(), media_type="text/markdown", path="guide.md"
            )
        ]
    )
    assert run.status == "succeeded", run.error


@pytest.fixture
def corpus_namespace():
    return "grouped"


@pytest.fixture
def corpus(corpus):
    """The shared corpus with the long guide beside it."""
    guide(corpus)
    return corpus


def test_group_by_document_counts_documents_and_keeps_the_best_sections(corpus):
    flat = search("how to grow pumpkins: watering, soil and harvest", "grouped", limit=10)
    guide_hits = [h for h in flat.hits if h.title == "Pumpkin growing guide"]
    assert len(guide_hits) >= 2  # the page answers with several of its sections

    grouped = search(
        "how to grow pumpkins: watering, soil and harvest", "grouped", limit=2, group="document"
    )
    assert grouped.grouped and len(grouped.documents) == 2  # limit counts documents
    assert len({d.document_id for d in grouped.documents}) == 2
    page = next(d for d in grouped.documents if d.title == "Pumpkin growing guide")
    assert [s.anchor for s in page.sections] == [h.anchor for h in guide_hits][:3]  # best first
    assert {s.anchor for s in page.sections} <= set(SECTIONS)
    assert page.score == page.sections[0].score  # the document's score is its best section's
    assert page.citation_url == page.sections[0].citation_url.split("#")[0]
    # documents keep the chunk ranking's order
    order = list(dict.fromkeys(h.document_id for h in flat.hits))
    assert [d.document_id for d in grouped.documents] == order[:2]
    # the tiers read the same list
    assert [d.document_id for d in grouped.suggested] == [d.document_id for d in grouped.documents][
        :3
    ]


def test_a_document_lists_a_place_once_though_neighbouring_passages_overlap(db):
    """Passages overlap so each reads alone: two neighbours that both match are one place of the
    document, listed once."""
    text = " ".join(
        f"Sentence {n} says the zeppelin hangar keeps airships dry in winter storms."
        for n in range(120)
    )
    ingest("overlap", {"hangar": ("Zeppelin hangars", text)})

    def overlapping(hits):
        return [
            (a.chunk_id, b.chunk_id)
            for i, a in enumerate(hits)
            for b in hits[i + 1 :]
            if a.start_byte < b.end_byte and b.start_byte < a.end_byte
        ]

    flat = search("zeppelin hangar airships", "overlap", limit=10, log=False).hits
    assert overlapping(flat)  # neighbours share text
    sections = (
        search("zeppelin hangar airships", "overlap", limit=1, group="document", log=False)
        .documents[0]
        .sections
    )
    assert (
        sections[0].chunk_id == flat[0].chunk_id
        and len(sections) >= 2
        and not overlapping(sections)
    )


def test_grouping_hydrates_only_the_documents_it_returns_and_keeps_their_sections(
    corpus, monkeypatch
):
    """A grouped search ranks four passages per document wanted and hydrates only those of the
    documents it returns: the same documents and sections as grouping the flat ranking."""
    from retrieval import passage_rows
    from retrieval.hits import SECTIONS_PER_DOCUMENT
    from retrieval.planning import SECTIONS_PER_GROUPED_DOCUMENT
    from retrieval.results import group_by_document

    hydrated: list[int] = []
    hydrate = passage_rows.hydrate

    def recording(scope, chunk_ids, text_ids=None):  # the real read, its arguments noted
        hydrated.extend(chunk_ids)
        return hydrate(scope, chunk_ids, text_ids)

    monkeypatch.setattr(passage_rows, "hydrate", recording)
    query = "pumpkin soil water harvest sun"
    skipped = set()
    for documents in (1, 2, 3):
        flat = search(query, "grouped", limit=documents * SECTIONS_PER_GROUPED_DOCUMENT, log=False)
        hydrated.clear()
        grouped = search(query, "grouped", limit=documents, group="document", log=False)
        expected = group_by_document(flat.hits, SECTIONS_PER_DOCUMENT)[:documents]
        assert len(expected) == documents
        assert [(d.document_id, [s.chunk_id for s in d.sections]) for d in grouped.documents] == [
            (d.document_id, [s.chunk_id for s in d.sections]) for d in expected
        ]
        returned = {d.document_id for d in expected}
        assert {h.document_id for h in grouped.hits} == returned
        others = {h.chunk_id for h in flat.hits if h.document_id not in returned}
        assert not others & set(hydrated)  # ranked, yet never read in full
        skipped |= others
    assert skipped


def test_a_page_reads_the_documents_up_to_its_end_and_counts_the_rest(monkeypatch):
    """The search page asks for fifty documents and shows ten: it reads (hydrates) the documents
    up to the end of the page it shows (at least the eight of the tiers) and counts the others."""
    from retrieval import passage_rows

    ingest(
        "paged",
        {
            f"note-{n}": (
                f"Pumpkin note {n}",
                f"Pumpkin note number {n}: pumpkins like sun and water.",
            )
            for n in range(14)
        },
    )
    hydrated: set[int] = set()
    hydrate = passage_rows.hydrate

    def recording(scope, chunk_ids, text_ids=None):
        hydrated.update(chunk_ids)
        return hydrate(scope, chunk_ids, text_ids)

    monkeypatch.setattr(passage_rows, "hydrate", recording)
    whole = search("pumpkin note sun water", "paged", limit=12, group="document", log=False)
    assert whole.document_count == len(whole.documents) == 12
    first_page = search(
        "pumpkin note sun water", "paged", limit=12, group="document", log=False, text_window=(0, 2)
    )
    assert first_page.document_count == 12
    assert [d.document_id for d in first_page.documents] == [
        d.document_id for d in whole.documents
    ][:8]
    hydrated.clear()
    last_page = search(
        "pumpkin note sun water",
        "paged",
        limit=12,
        group="document",
        log=False,
        text_window=(10, 12),
    )
    assert [d.document_id for d in last_page.documents] == [d.document_id for d in whole.documents]
    assert len(hydrated) == 12
    hydrated.clear()
    search(
        "pumpkin note sun water", "paged", limit=12, group="document", log=False, text_window=(0, 2)
    )
    assert len(hydrated) == 8  # of twelve documents, one passage each


def test_a_page_reads_as_far_as_its_first_cited_document():
    """Whether anything is cited (the page's "no strong match" notice) stays what reading every
    document would say, even when the first cited document lies beyond the page: ranked here by
    rising cosine, ten unrelated notes come before the two about pumpkins."""
    import dataclasses

    from evaluation.search_parts import plain_rrf
    from kb.embedding.embedders import strong_cosine
    from retrieval.service import run_search

    notes = {
        f"meeting-{n}": (
            f"Meeting note {n}",
            f"Meeting note {n}: the budget review moved to Tuesday at ten.",
        )
        for n in range(10)
    }
    notes |= {
        f"pumpkin-{n}": (
            f"Pumpkin note {n}",
            "Pumpkins need full sun, rich soil and deep watering once a week.",
        )
        for n in range(2)
    }
    ingest("cited-late", notes)

    def by_rising_cosine(candidates, params):
        ranking = plain_rrf(candidates, params)
        return dataclasses.replace(
            ranking, kept=sorted(ranking.kept, key=lambda d: (d.cosine or -1.0, str(d.key)))
        )

    def page(window):
        return run_search(
            "note on growing pumpkins in the sun",
            "cited-late",
            limit=12,
            group="document",
            log=False,
            fuse=by_rising_cosine,
            text_window=window,
        )

    whole = page(None)
    cosines = [d.best_cosine for d in whole.documents]
    assert len(cosines) == 12 and all(c < strong_cosine() for c in cosines[:10])
    assert [d.title.startswith("Pumpkin") for d in whole.cited] == [True, True]
    first = page((0, 2))
    assert (
        len(first.documents) == 11 and first.document_count == 12
    )  # read up to the first cited one
    assert [d.document_id for d in first.cited] == [whole.cited[0].document_id]


def test_unknown_grouping_is_a_stable_error(corpus):
    with pytest.raises(InvalidQuery) as caught:
        search("pumpkin", "grouped", group="section")
    assert caught.value.code == "SEARCH_INVALID_GROUP"


def test_api_group_document_and_fusion_in_the_explanation(corpus, client, django_user_model):
    client.force_login(
        django_user_model.objects.create_user("staff", is_staff=True, is_superuser=True)
    )
    response = client.get(
        "/api/search",
        {
            "query": "pumpkin watering",
            "namespace": "grouped",
            "limit": 2,
            "group": "document",
            "explain": True,
        },
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["grouped"] and len(body["documents"]) == 2
    first = body["documents"][0]
    assert first["score_rule"].startswith("the document's score is its best section")
    assert first["sections"][0]["explanation"]["base_channel"] == "fused"
    assert first["sections"][0]["explanation"]["vector_z"] is not None
    fusion = body["summary"]["fusion"]
    assert (fusion["vector"], fusion["lexical"], fusion["source"]) == (0.5, 0.5, "default")
    assert "no judged queries" in fusion["reason"]
    flat = client.get("/api/search", {"query": "pumpkin watering", "namespace": "grouped"}).json()
    assert flat["grouped"] is False and flat["documents"] is None
    bad = client.get("/api/search", {"query": "pumpkin", "namespace": "grouped", "group": "page"})
    assert bad.status_code == 422


def test_a_fitted_calibration_sets_the_weights_and_says_so(corpus):
    default = search("pumpkin soup", "grouped", limit=5)
    assert default.fusion.source == "default" and default.summary.lexical_weight == pytest.approx(
        0.5
    )
    FusionCalibration.objects.create(
        namespace=corpus,
        lexical_weight=0.0,
        fitted_on="eval suite garden",
        queries=12,
        cross_validated_ndcg=0.81,
        default_ndcg=0.74,
        version=3,
        fitted_at=timezone.now(),
    )
    fitted = search("pumpkin soup", "grouped", limit=5)
    assert fitted.fusion.source == "fitted" and fitted.fusion.version == 3
    assert fitted.fusion.lexical == 0.0 and fitted.summary.lexical_weight == 0.0
    assert (
        "12 judged queries (eval suite garden)" in fitted.fusion.reason
        and "0.810" in fitted.fusion.reason
    )
    # weight 0: the base is the cosine itself, whatever the words say
    assert all(h.details.base == pytest.approx(max(h.cosine, 1e-6)) for h in fitted.hits)
    other, _ = ingest("other-tenant", {"x": ("Pumpkin soup", "Roast the pumpkin.")})
    assert search("pumpkin soup", "other-tenant").fusion.source == "default"  # per namespace


def test_page_groups_by_document_by_default_and_shows_the_weights(corpus, client):
    Namespace.objects.filter(pk=corpus.pk).update(is_public=True)
    page = client.get(
        "/", {"q": "how to grow pumpkins: watering, soil and harvest", "namespace": "grouped"}
    )
    html = page.content.decode()
    assert page.status_code == 200
    titles = re.findall(r'<h3 dir="auto"><a href="[^"]*">([^<]*)</a></h3>', html)
    assert titles and len(titles) == len(set(titles))  # one result per document
    assert (
        "one result per document (" in html and 'class="sections"' in html
    )  # in the folded ranking notes
    assert "Meaning weighs 0.50 and words 0.50" in html
    flat = client.get(
        "/",
        {
            "q": "how to grow pumpkins: watering, soil and harvest",
            "namespace": "grouped",
            "group": "chunk",
        },
    ).content.decode()
    assert "one result per document (" not in flat
    assert flat.count('<li class="result">') > html.count('<li class="result">')


def test_admin_shows_each_namespace_weights_and_never_lets_them_be_typed_in(
    corpus, client, django_user_model
):
    client.force_login(django_user_model.objects.create_superuser("root", password="pw"))
    listing = client.get("/admin/kb/namespace/").content.decode()
    assert "default (no judged queries fitted)" in listing
    FusionCalibration.objects.create(
        namespace=corpus,
        lexical_weight=0.25,
        fitted_on="eval suite garden.json",
        queries=12,
        cross_validated_ndcg=0.81,
        default_ndcg=0.74,
        version=2,
        fitted_at=timezone.now(),
    )
    listing = client.get("/admin/kb/namespace/").content.decode()
    assert "0.75 / 0.25 (fitted" in listing and "eval suite garden.json, v2" in listing
    assert client.get("/admin/kb/fusioncalibration/add/").status_code == 403
    assert "garden.json" in client.get("/admin/kb/fusioncalibration/").content.decode()


def test_a_query_sharing_no_word_with_the_namespace_says_so_in_the_api_and_on_the_page(
    corpus, client
):
    """ "zyxwvut" occurs nowhere: the lexical channel runs and finds nothing, the ranking rests on
    meaning, and the summary and the page say so in plain words."""
    Namespace.objects.filter(pk=corpus.pk).update(is_public=True)
    result = search("zyxwvut qqqplomb", "grouped", log=False)
    assert result.summary.per_channel["lexical"] == 0 and result.hits  # meaning still answers
    assert [n.channel for n in result.summary.channel_notes] == ["lexical"]
    assert result.summary.lexical_weight == 0.0
    assert search("pumpkin watering", "grouped", log=False).summary.channel_notes == ()
    api = client.get("/api/search", {"query": "zyxwvut qqqplomb", "namespace": "grouped"}).json()
    assert api["summary"]["channel_notes"][0]["channel"] == "lexical"
    assert "ranked by meaning alone" in api["summary"]["channel_notes"][0]["reason"]
    assert api["summary"]["fusion"]["lexical_this_query"] == 0.0
    html = client.get("/", {"q": "zyxwvut qqqplomb", "namespace": "grouped"}).content.decode()
    assert "No word of the query occurs in this namespace" in html
    assert "covers little of the query" not in html


def test_no_two_links_of_a_result_read_alike(client):
    """Three passages of one long section found together: each link of the result tells which
    passage it opens by its first words, as a breadcrumb alone cannot."""
    namespace = Namespace.objects.create(slug="long-section", title="Long section", is_public=True)
    source = Source.objects.create(namespace=namespace, name="guide", kind="text", text="x")
    paragraphs = [
        f"Pumpkin watering note {n}: water the pumpkin bed deeply at dawn, soak the soil around "
        "the "
        f"vines, and keep the leaves dry so the pumpkin plants stay healthy through summer. " * 3
        for n in range(1, 13)
    ]
    body = "# Pumpkin guide\n\n## Watering {#watering}\n\n" + "\n\n".join(paragraphs)
    run = IngestPipeline(IngestRun.objects.create(source=source)).execute(
        [
            LoadedItem(
                ref="guide.md", body=body.encode(), media_type="text/markdown", path="guide.md"
            )
        ]
    )
    assert run.status == "succeeded" and run.chunks_written >= 3, run.error
    html = client.get(
        "/", {"q": "watering the pumpkin bed at dawn", "namespace": "long-section"}
    ).content.decode()
    links = re.findall(r'<ul class="sections"[^>]*>(.*?)</ul>', html, re.S)
    labels = re.findall(r'<a href="[^"]*">([^<]*)</a>', links[0])
    assert len(labels) >= 2 and len(set(labels)) == len(labels), labels
    assert all(
        label.startswith("Pumpkin guide › Watering: “Pumpkin watering note") for label in labels
    ), labels


def test_a_section_link_with_no_words_of_its_own_keeps_its_bare_breadcrumb(corpus):
    import dataclasses

    from retrieval.page import section_links

    hit = search("pumpkin", "grouped", limit=1, log=False).hits[0]
    best = dataclasses.replace(
        hit, heading_path=("Guide", "Tips"), text="Guide > Tips\n\nWater daily."
    )
    bare = dataclasses.replace(
        hit, heading_path=("Guide", "Tips"), text="Guide > Tips\n\n## Tips {#tips}"
    )
    worded = dataclasses.replace(
        hit, heading_path=("Guide", "Tips"), text="Guide > Tips\n\nFeed weekly."
    )
    assert [link.label for link in section_links(best, [bare, worded])] == [
        "Guide › Tips",
        "Guide › Tips: “Feed weekly.”",
    ]
