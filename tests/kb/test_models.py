"""Model constraints and column round-trips against real PostgreSQL."""

import numpy as np
import pytest
from django.core.exceptions import ValidationError
from django.db import DataError, IntegrityError, connection, transaction

from kb.embedding.embedders import check_embedder_dimension, get_embedder
from kb.errors import ConfigurationError, EmbeddingDimensionMismatch
from kb.models import Chunk, Document, Namespace, Provider, ProviderRevision, Source

pytestmark = pytest.mark.django_db


@pytest.fixture
def source(namespace):
    return Source.objects.create(namespace=namespace, name="Notes", kind="text", text="hello")


@pytest.mark.parametrize(
    "slug", ["tenant:acme", "agent:support", "demo", "team_1:docs.v2"], ids=str
)
def test_namespace_slug_accepts_documented_forms(slug):
    Namespace(slug=slug).full_clean()


@pytest.mark.parametrize(
    "slug", ["Tenant:Acme", "a:b:c", ":x", "has space", "x" * 100, "tenant:"], ids=repr
)
def test_bad_namespace_slug_is_rejected_with_a_clear_message(slug):
    with pytest.raises(ValidationError) as excinfo:
        Namespace(slug=slug).full_clean()
    message = excinfo.value.message_dict["slug"][0]
    assert message.startswith(f"{slug!r} is not a valid namespace")
    assert "e.g. 'tenant:acme'" in message


def test_bad_namespace_slug_cannot_be_saved_directly():
    with pytest.raises(ValidationError, match="'Bad Slug' is not a valid namespace"):
        Namespace.objects.create(slug="Bad Slug")


def test_duplicate_ref_per_source_is_rejected(source, namespace):
    Document.objects.create(source=source, namespace=namespace, ref="page-1")
    with pytest.raises(IntegrityError, match="document_unique_ref"), transaction.atomic():
        Document.objects.create(source=source, namespace=namespace, ref="page-1")
    other = Source.objects.create(namespace=namespace, name="Other", kind="text", text="x")
    Document.objects.create(source=other, namespace=namespace, ref="page-1")  # fine elsewhere


@pytest.mark.parametrize(
    "kind, location, options, message",
    [
        (
            "crawl",
            "https://docs.example.com/",
            {"max_depth": 99},
            "'max_depth' must be between 0 and 10, got 99",
        ),
        (
            "crawl",
            "https://docs.example.com/",
            {"max_pages": "many"},
            "'max_pages' must be a whole number",
        ),
        (
            "crawl",
            "https://docs.example.com/",
            {"allowed_domains": "x.com"},
            "'allowed_domains' must be a list",
        ),
        (
            "url",
            "https://docs.example.com/",
            {"max_depth": 2},
            "'max_depth' does not apply to 'url'",
        ),
        ("url", "https://docs.example.com/", {"colour": "red"}, "unknown option 'colour'"),
        ("url", "ftp://docs.example.com/x", {}, "is not an http(s) URL"),
        ("sitemap", "not a url", {}, "is not an http(s) URL"),
    ],
    ids=["depth-range", "pages-type", "domains-type", "wrong-kind", "unknown", "ftp", "garbage"],
)
def test_bad_source_options_are_rejected_with_clear_messages(
    namespace, kind, location, options, message
):
    source = Source(namespace=namespace, name="s", kind=kind, location=location, options=options)
    with pytest.raises(ValidationError) as excinfo:
        source.full_clean()
    assert message in str(excinfo.value)


def test_good_crawl_source_validates(namespace):
    Source(
        namespace=namespace,
        name="docs",
        kind="crawl",
        location="https://docs.example.com/",
        options={"max_depth": 2, "max_pages": 50, "allowed_domains": ["docs.example.com"]},
    ).full_clean()


def test_source_priority_is_bounded_in_the_database(namespace):
    with pytest.raises(IntegrityError, match="source_priority_range"), transaction.atomic():
        Source.objects.create(namespace=namespace, name="p", kind="text", text="x", priority=3)


def test_only_one_current_revision_per_provider():
    provider = Provider.objects.create(slug="tools")
    ProviderRevision.objects.create(provider=provider, revision="a" * 64, is_current=True)
    with pytest.raises(IntegrityError, match="revision_one_current"), transaction.atomic():
        ProviderRevision.objects.create(provider=provider, revision="b" * 64, is_current=True)


def _chunk(document, namespace, **fields):
    return Chunk.objects.create(
        document=document,
        namespace=namespace,
        position=fields.pop("position", 0),
        start_byte=0,
        end_byte=5,
        **fields,
    )


def test_vector_and_search_vector_round_trip(source, namespace):
    document = Document.objects.create(source=source, namespace=namespace, ref="d", title="Pumpkin")
    vector = np.linspace(-1, 1, 384).astype(np.float32)
    chunk = _chunk(
        document, namespace, title="Pumpkin soup", text="Roasting the seeds first", embedding=vector
    )
    chunk.refresh_from_db()
    assert np.allclose(chunk.embedding, vector, atol=1e-6)
    # the stored tsvector is generated by PostgreSQL: stemmed, weighted title A and text D
    assert "'pumpkin':1A" in chunk.search_vector
    assert "'roast':3" in chunk.search_vector
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id FROM kb_chunk WHERE search_vector @@ to_tsquery('english', 'seed')"
        )
        assert [row[0] for row in cursor.fetchall()] == [chunk.id]
        cursor.execute(
            "SELECT round((1 - (embedding <=> %s::vector))::numeric, 4) FROM kb_chunk WHERE id = %s",  # noqa: E501
            [vector.tolist(), chunk.id],
        )
        assert cursor.fetchone()[0] == 1


def test_chunk_without_embedding_is_allowed(source, namespace):
    document = Document.objects.create(source=source, namespace=namespace, ref="d")
    chunk = _chunk(document, namespace, text="phase one")
    chunk.refresh_from_db()
    assert chunk.embedding is None


def test_wrong_dimension_vector_is_refused_by_the_column(source, namespace):
    document = Document.objects.create(source=source, namespace=namespace, ref="d")
    with pytest.raises(DataError, match="expected 384 dimensions"), transaction.atomic():
        _chunk(document, namespace, text="x", embedding=np.ones(512, dtype=np.float32))


def test_byte_range_constraint(source, namespace):
    document = Document.objects.create(source=source, namespace=namespace, ref="d")
    with pytest.raises(IntegrityError, match="chunk_byte_range"), transaction.atomic():
        Chunk.objects.create(
            document=document, namespace=namespace, position=0, text="x", start_byte=9, end_byte=2
        )


class _WideEmbedder:
    model_id = "test:wide"
    dimension = 768


def test_dimension_mismatch_is_a_clear_error():
    with pytest.raises(EmbeddingDimensionMismatch) as excinfo:
        check_embedder_dimension(_WideEmbedder())
    message = excinfo.value.message
    assert "produces 768-dimensional vectors" in message
    assert "holds 384" in message
    assert "KB_EMBEDDING_DIM=768" in message
    assert excinfo.value.code == "KB_CONFIG_EMBEDDING_DIMENSION"


def test_default_embedder_matches_the_column():
    embedder = get_embedder()
    check_embedder_dimension(embedder)
    assert embedder.dimension == 384


def test_dimension_mismatch_stops_start_up():
    from tests.pgserver import run_manage

    result = run_manage("check", env={"KB_EMBEDDING_DIM": "512"})
    assert result.returncode != 0
    assert "kb.KB_CONFIG_EMBEDDING_DIMENSION" in result.stderr
    assert (
        "produces 384-dimensional vectors but the chunk embedding column holds 512" in result.stderr
    )


def test_unknown_query_runtime_stops_start_up():
    from tests.pgserver import run_manage

    result = run_manage("check", env={"KB_EMBEDDING_QUERY_RUNTIME": "gpu"})
    assert result.returncode != 0
    assert "kb.KB_CONFIG_INVALID" in result.stderr
    assert "KB_EMBEDDING_QUERY_RUNTIME must be 'onnx' or 'torch', got 'gpu'" in result.stderr


def test_a_language_name_instead_of_a_code_stops_start_up():
    """ "english" would match no detected language: meaning would be left out of every namespace."""
    from tests.pgserver import run_manage

    result = run_manage("check", env={"KB_EMBEDDING_LANGUAGES": "en,english"})
    assert result.returncode != 0
    assert "kb.KB_CONFIG_INVALID" in result.stderr
    assert "KB_EMBEDDING_LANGUAGES takes ISO 639-1 codes (en,de) or *, got english" in result.stderr


def test_a_strong_match_floor_that_is_no_cosine_stops_start_up():
    """35 (a percentage) would cite nothing, ever: every search would say "no strong match"."""
    from tests.pgserver import run_manage

    result = run_manage("check", env={"KB_STRONG_COSINE": "35"})
    assert result.returncode != 0
    assert "KB_STRONG_COSINE is a cosine, between -1 and 1, got '35'" in result.stderr
    assert "kb.KB_CONFIG_INVALID" in result.stderr


@pytest.mark.parametrize(
    "value, expected", [("", None), (" ", None), ("0.5", 0.5), ("-0.2", -0.2), ("1", 1.0)]
)
def test_the_strong_match_floor_is_read_as_a_cosine_or_left_to_the_model(settings, value, expected):
    from kb.conf import kb_settings

    settings.KB_STRONG_COSINE = value
    kb_settings.cache_clear()
    try:
        assert kb_settings().strong_cosine == expected
    finally:
        kb_settings.cache_clear()


@pytest.mark.parametrize("value", ["35", "nan", "high", "-1.5"])
def test_a_strong_match_floor_that_is_no_cosine_is_refused(settings, value):
    from kb.conf import kb_settings

    settings.KB_STRONG_COSINE = value
    kb_settings.cache_clear()
    try:
        with pytest.raises(ConfigurationError, match="KB_STRONG_COSINE is a cosine"):
            kb_settings()
    finally:
        kb_settings.cache_clear()


def test_the_strong_match_floor_is_the_setting_then_the_models_own_then_assumed(settings):
    """An unmeasured model gets the bundled model's floor, and /healthz says it is assumed."""
    from kb.conf import kb_settings
    from kb.embedding.embedders import get_embedder, strong_floor
    from kb.embedding.local import bundled_model_path

    def floor(**changes):
        for name, value in changes.items():
            setattr(settings, name, value)
        kb_settings.cache_clear(), get_embedder.cache_clear()
        return strong_floor()

    try:
        assert floor() == (0.35, "the model's own, measured")
        assert floor(KB_STRONG_COSINE="0.6") == (0.6, "set by KB_STRONG_COSINE")
        # the same weights named by path: the product cannot know they are the bundled model's
        value, why = floor(KB_STRONG_COSINE="", KB_EMBEDDING_MODEL=str(bundled_model_path()))
        assert value == 0.35 and why.startswith(
            "assumed: the bundled model's, not measured for this model"
        )
        assert floor(KB_EMBEDDING_MODEL="", KB_EMBEDDER="e5") == (0.85, "the model's own, measured")
    finally:  # the settings fixture restores the settings themselves
        kb_settings.cache_clear(), get_embedder.cache_clear()


def test_source_kinds_are_stated_once_and_labelled_by_the_model():
    from kb.models import Source
    from kb.vocabulary import MULTI_PAGE_KINDS, SOURCE_KINDS, URL_KINDS

    assert tuple(Source.Kind.values) == SOURCE_KINDS
    assert set(MULTI_PAGE_KINDS) <= set(URL_KINDS) <= set(SOURCE_KINDS)


def test_the_language_list_offers_detection_and_none_first_then_languages_by_name():
    from kb.languages import AUTO, LANGUAGE_CHOICES, SIMPLE

    assert [value for value, _ in LANGUAGE_CHOICES[:2]] == [AUTO, SIMPLE]
    names = [label for _, label in LANGUAGE_CHOICES[2:]]
    assert (
        names == sorted(names)
        and "German" in names
        and "Chinese, Japanese, Korean (character pairs)" in names
    )


def test_a_runs_percent_is_one_figure_for_its_bar_and_the_api_and_never_full_when_it_failed():
    from kb.models import IngestRun

    def percent(status, total, done, failed=0):
        return IngestRun(
            status=status, items_total=total, items_done=done, items_failed=failed
        ).progress_percent

    assert (
        percent("running", 8, 2) == 25
        and percent("succeeded", 0, 0) == 100
        and percent("queued", 0, 0) == 0
    )
    assert (
        percent("failed", 0, 0) == 0
    )  # failed before listing anything: an empty bar, not a full one
    assert percent("failed", 4, 4, failed=1) == 75 and percent("partial", 4, 4, failed=1) == 100
