"""Capability providers and the two retriever contracts, against real PostgreSQL, the real
pipeline and the real model. Backends that break a rule wrap the built-in one (backends.py)."""

import json

import pytest
from django.core.management import call_command
from django.test import Client
from django_q.models import OrmQ

from capabilities import service
from capabilities.contracts import KnowledgeHit, Target, check_hit
from capabilities.definitions import parse_provider
from capabilities.tasks import index_provider
from kb.auth import Principal, issue_token
from kb.errors import KBError
from kb.models import ApiToken, Document, Namespace, Provider, ProviderRevision, Source
from tests.capabilities import backends
from tests.corpus import ingest

pytestmark = pytest.mark.django_db

STAFF = Principal("staff")
ZH = "退款政策\n\n客户可以在三十天内申请退款。退款将退回原支付方式，通常需要五个工作日。"
DOCS = {
    "refunds.md": (
        "Refunds",
        "To refund a payment, open the payment and press Refund. Partial refunds are "
        "allowed for captured payments within 90 days.",
    ),
    "invoices.md": (
        "Invoices",
        "Invoices are created at the end of each billing period and sent by email.",
    ),
    "zh-refunds.md": ("退款政策", ZH),
}


def definition(summary="Give money back for a captured payment.", extra=()):
    return {
        "id": "billing",
        "title": "Billing",
        "namespace": "tenant:cg",
        "capabilities": [
            {
                "name": "refund",
                "title": "Refund a payment",
                "summary": summary,
                "knowledge": [
                    {"source": "corpus", "document": "refunds.md", "role": "howto", "locale": "en"},
                    {
                        "source": "corpus",
                        "document": "zh-refunds.md",
                        "role": "howto",
                        "locale": "zh",
                    },
                ],
            },
            {
                "name": "invoices",
                "title": "Send invoices",
                "summary": "Create and email invoices each period.",
                "knowledge": [{"source": "corpus", "role": "reference", "locale": "en"}],
            },
            *extra,
        ],
    }


@pytest.fixture
def world():
    namespace, source = ingest("tenant:cg", DOCS)
    ingest("tenant:other", {"secret.md": ("Secret", "Refund secrets of another tenant.")})
    Source.objects.create(namespace=namespace, name="empty", kind="text", text="")
    report = service.load_definitions(definition())
    return {"namespace": namespace, "source": source, "report": report}


@pytest.fixture
def use(settings):
    """Plug a backend by dotted path, as an operator would in settings."""
    from kb.conf import kb_settings

    def plug(capability=None, knowledge=None, **extra):
        if capability is not None:
            settings.KB_CAPABILITY_RETRIEVER = capability
        if knowledge is not None:
            settings.KB_KNOWLEDGE_RETRIEVER = knowledge
        for key, value in extra.items():
            setattr(settings, key, value)
        kb_settings.cache_clear()

    yield plug
    kb_settings.cache_clear()


def revision():
    return ProviderRevision.objects.get(provider__slug="billing", is_current=True).revision


def code_of(call):
    with pytest.raises(KBError) as caught:
        call()
    return caught.value.code


# --- definitions and the catalog ---------------------------------------------------------------


def test_static_revision_is_stable_under_reordering_and_changes_with_content():
    base = parse_provider(definition())
    shuffled = definition()
    shuffled["capabilities"].reverse()
    shuffled["capabilities"][1]["knowledge"].reverse()
    assert parse_provider(shuffled).static_revision == base.static_revision
    assert (
        parse_provider(definition(summary="Another summary.")).static_revision
        != base.static_revision
    )


def test_loading_records_a_revision_only_when_the_definition_changes(world, tmp_path):
    first = revision()
    assert world["report"][0]["changed"] and world["report"][0]["indexed"] == 2
    assert service.load_definitions(definition())[0]["changed"] is False
    path = tmp_path / "billing.yaml"
    import yaml

    path.write_text(yaml.safe_dump(definition(summary="Return money to the customer.")))
    call_command("kb_providers", str(path))
    assert revision() != first
    history = list(
        ProviderRevision.objects.filter(provider__slug="billing").values_list(
            "revision", "is_current"
        )
    )
    assert sorted(history) == sorted([(first, False), (revision(), True)])
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {
                "id": "billing",
                "namespace": "tenant:cg",
                "capabilities": [
                    {"name": "x", "title": "X", "knowledge": [{"source": "no-such-source"}]}
                ],
            }
        )
    )
    from django.core.management.base import CommandError

    before = revision()
    with pytest.raises(CommandError, match="CG_TARGET_UNKNOWN"):
        call_command("kb_providers", str(bad))
    assert revision() == before  # the failed load changed nothing
    assert Provider.objects.get(slug="billing").capabilities.count() == 2


def test_catalog_is_deterministic_paginated_and_independent_of_retrievers(world, use):
    use(capability="none", knowledge="none")
    service.load_definitions(
        {
            "id": "alpha",
            "namespace": "tenant:cg",
            "capabilities": [{"name": n, "title": n.upper()} for n in ("c", "a", "b")],
        }
    )
    first = service.catalog(STAFF, page=1, page_size=2)
    second = service.catalog(STAFF, page=2, page_size=2)
    third = service.catalog(STAFF, page=3, page_size=2)
    ids = [c["id"] for page in (first, second, third) for c in page["capabilities"]]
    assert ids == ["alpha/a", "alpha/b", "alpha/c", "billing/invoices", "billing/refund"]
    assert first["total"] == 5 and service.catalog(STAFF, page=1, page_size=2) == first
    reader = Principal("token", namespaces=frozenset({"tenant:other"}))
    assert (
        service.catalog(reader)["capabilities"] == []
    )  # providers in unreadable namespaces stay hidden
    assert code_of(lambda: service.catalog(reader, ["billing"])) == "CG_UNKNOWN_PROVIDER"


# --- capability retrieval ----------------------------------------------------------------------


def test_builtin_capability_retriever_ranks_by_title_and_summary(world):
    result = service.retrieve_capabilities(STAFF, "give a customer their money back", ["billing"])
    assert result.candidates[0]["id"] == "billing/refund"
    assert (
        result.candidates[0]["rank"] == 1 and result.candidates[0]["static_revision"] == revision()
    )
    assert result.warnings == []


def test_capability_texts_are_folded_as_queries_are(world):
    from capabilities.store import capability_lexemes
    from kb.models import Capability
    from retrieval.lookups import query_terms

    refund = Capability.objects.get(canonical_id="billing/refund")
    # fullwidth letters and a soft hyphen
    Capability.objects.filter(pk=refund.pk).update(indexed_text="Ｒｅｆｕｎｄ a pay\u00adment")
    words = set(capability_lexemes([refund.pk])[refund.pk])
    assert {lexeme for lexeme, _ in query_terms("refund payment")} <= words


def test_rejected_candidates_leave_rank_gaps_and_warnings(world, use):
    service.load_definitions(
        {"id": "other", "namespace": "tenant:cg", "capabilities": [{"name": "x", "title": "X"}]}
    )
    use(capability="tests.capabilities.backends.ScriptedCapabilityRetriever")
    current = revision()
    backends.SCRIPT["candidates"] = [
        backends.candidate("billing/invoices", current, 0.9),
        backends.candidate("other/x", current, 0.8),  # exists, but not in the requested scope
        backends.candidate("billing/refund", "stale-rev", 0.7),  # index built from an old revision
        backends.candidate("billing/nope", current, 0.6),  # no such capability
        backends.candidate("billing/refund", current, 0.5),
    ]
    result = service.retrieve_capabilities(STAFF, "money", ["billing"])
    assert [(c["id"], c["rank"], c["score"]) for c in result.candidates] == [
        ("billing/invoices", 1, 0.9),
        ("billing/refund", 5, 0.5),
    ]
    assert [(w.code, w.rank) for w in result.warnings] == [
        ("CG_OUT_OF_SCOPE", 2),
        ("CG_REVISION_MISMATCH", 3),
        ("CG_UNKNOWN_CAPABILITY", 4),
    ]
    assert backends.SCRIPT["query"].provider_ids == ("billing",)


def test_builtin_index_behind_the_definition_is_rejected_not_served(world):
    from capabilities import store

    service.load_definitions(definition(summary="Return money to the customer."), reindex=False)
    assert not store.index_status(Provider.objects.get(slug="billing"))["current"]
    result = service.retrieve_capabilities(STAFF, "refund a payment", ["billing"])
    assert result.candidates == []
    assert {w.code for w in result.warnings} == {"CG_REVISION_MISMATCH"}


def test_failing_and_unconfigured_capability_retrievers_are_errors(world, use):
    use(capability="tests.capabilities.backends.FailingRetriever")
    assert (
        code_of(lambda: service.retrieve_capabilities(STAFF, "refund", ["billing"]))
        == "CG_RETRIEVER_FAILED"
    )
    use(capability="none")
    assert (
        code_of(lambda: service.retrieve_capabilities(STAFF, "refund", ["billing"]))
        == "CG_RETRIEVER_UNCONFIGURED"
    )


# --- knowledge retrieval -----------------------------------------------------------------------


def test_a_hit_is_byte_exact_and_described_from_our_records(world):
    result = service.retrieve_knowledge(
        STAFF, ["billing/refund"], "how do I refund a captured payment", locales=["en"]
    )
    hit = result.hits[0]
    document = Document.objects.get(ref="refunds.md")
    assert hit["document_id"] == document.pk and hit["title"] == "Refunds"
    assert (
        hit["role"] == "howto"
        and hit["locale"] == "en"
        and hit["capability_ids"] == ["billing/refund"]
    )
    assert document.content.encode()[hit["start_byte"] : hit["end_byte"]].decode() == hit["snippet"]
    assert "refund a payment" in hit["snippet"]
    assert hit["citation_url"].startswith(f"/documents/{document.pk}/")
    evidence = result.evidence
    assert evidence["static_revision_by_provider"] == {"billing": revision()}
    assert [t["id"] for t in evidence["targets"]] == [f"document:{document.pk}"]
    assert evidence["targets"][0]["content_id"] == document.content_hash
    assert result.warnings == []


def test_chinese_offsets_slice_the_stored_bytes_exactly(world):
    result = service.retrieve_knowledge(STAFF, ["billing/refund"], "退款", locales=["zh"])
    document = Document.objects.get(ref="zh-refunds.md")
    hit = result.hits[0]
    data = document.content.encode("utf-8")
    assert hit["document_id"] == document.pk
    assert data[hit["start_byte"] : hit["end_byte"]].decode("utf-8") == hit["snippet"]
    assert (
        "退款" in hit["snippet"]
        and len(hit["snippet"].encode()) == hit["end_byte"] - hit["start_byte"]
    )
    assert len(hit["snippet"]) < hit["end_byte"] - hit["start_byte"]  # multi-byte characters


def test_a_true_zero_hit_still_carries_complete_evidence(world):
    # an exact identifier no document contains: meaning-only matches are not eligible
    result = service.retrieve_knowledge(
        STAFF, ["billing/refund"], "ERR_XQZ_0x7F3A9C", locales=["en"]
    )
    assert result.hits == []
    target = result.evidence["targets"][0]
    assert target["freshness"] == "indexed" and target["content_id"]
    assert result.evidence["mapping_revision"] and result.evidence["indexed_config_revision"]


def test_a_target_never_indexed_is_told_apart_from_no_match(world):
    service.load_definitions(
        definition(
            extra=[{"name": "empty", "title": "Nothing yet", "knowledge": [{"source": "empty"}]}]
        )
    )
    result = service.retrieve_knowledge(STAFF, ["billing/empty"], "anything at all")
    assert result.hits == []
    assert [(t["freshness"], t["content_id"]) for t in result.evidence["targets"]] == [
        ("not_indexed", None)
    ]


def test_content_updated_after_indexing_is_stale(world):
    Source.objects.filter(pk=world["source"].pk).update(text="edited but not re-ingested")
    assert (
        code_of(lambda: service.retrieve_knowledge(STAFF, ["billing/refund"], "refund"))
        == "CG_INDEX_STALE"
    )
    ingest("tenant:cg", DOCS)  # a successful ingest of the edited source catches the index up
    assert service.retrieve_knowledge(STAFF, ["billing/refund"], "refund").hits


@pytest.mark.parametrize(
    "backend, code",
    [
        ("OldMappingRetriever", "CG_REVISION_MISMATCH"),
        ("WrongProviderRevisionRetriever", "CG_REVISION_MISMATCH"),
        ("MissingEvidenceRetriever", "CG_REVISION_MISMATCH"),
        ("StaleContentRetriever", "CG_INDEX_STALE"),
        ("FailingRetriever", "CG_RETRIEVER_FAILED"),
    ],
)
def test_evidence_the_core_cannot_match_fails(world, use, backend, code):
    use(knowledge=f"tests.capabilities.backends.{backend}")
    assert (
        code_of(lambda: service.retrieve_knowledge(STAFF, ["billing/refund"], "refund a payment"))
        == code
    )


def test_a_caller_holding_an_old_revision_is_told(world):
    old = revision()
    service.load_definitions(definition(summary="Return money to the customer."))
    selected = [{"id": "billing/refund", "static_revision": old}]
    assert (
        code_of(lambda: service.retrieve_knowledge(STAFF, selected, "refund"))
        == "CG_REVISION_MISMATCH"
    )
    ok = service.retrieve_knowledge(
        STAFF, [{"id": "billing/refund", "static_revision": revision()}], "refund"
    )
    assert ok.hits


def test_a_backend_cannot_read_an_unselected_target_or_keep_its_access(world, use):
    other = Document.objects.get(ref="invoices.md")
    backends.ReadsUnselectedTarget.target = f"document:{other.pk}"
    use(knowledge="tests.capabilities.backends.ReadsUnselectedTarget")
    assert (
        code_of(lambda: service.retrieve_knowledge(STAFF, ["billing/refund"], "refund"))
        == "CG_ACCESS_DENIED"
    )
    use(knowledge="tests.capabilities.backends.KeepsAccess")
    service.retrieve_knowledge(STAFF, ["billing/refund"], "refund")
    kept = backends.KeepsAccess.kept
    assert code_of(lambda: kept.read(kept.target_ids[0], 1)) == "CG_ACCESS_CLOSED"


def test_every_hit_is_verified_against_the_bytes(world, use):
    use(knowledge="tests.capabilities.backends.TamperedHits")
    result = service.retrieve_knowledge(
        STAFF, ["billing/refund"], "refund a payment", locales=["en"]
    )
    assert len(result.hits) == 1 and result.hits[0]["rank"] == 1
    reasons = [w.message for w in result.warnings]
    assert [w.rank for w in result.warnings] == [2, 3, 4, 5]
    assert "snippet differs" in reasons[0] and "snippet differs" in reasons[1]
    assert "outside" in reasons[2] and "not selected" in reasons[3]


def test_budgets_are_checked_before_the_backend_is_called(world, use):
    backends.FailingRetriever.calls = 0
    use(knowledge="tests.capabilities.backends.FailingRetriever", KB_KNOWLEDGE_MAX_TARGETS=1)
    assert (
        code_of(lambda: service.retrieve_knowledge(STAFF, ["billing/refund"], "refund"))
        == "CG_BUDGET_EXCEEDED"
    )
    use(KB_KNOWLEDGE_MAX_TARGETS=50, KB_KNOWLEDGE_MAX_BYTES=10)
    assert (
        code_of(lambda: service.retrieve_knowledge(STAFF, ["billing/refund"], "refund"))
        == "CG_BUDGET_EXCEEDED"
    )
    assert backends.FailingRetriever.calls == 0
    use(knowledge="none", KB_KNOWLEDGE_MAX_BYTES=10**9)
    unconfigured = code_of(lambda: service.retrieve_knowledge(STAFF, ["billing/refund"], "refund"))
    assert unconfigured == "CG_RETRIEVER_UNCONFIGURED"


def test_filters_by_knowledge_id_role_and_locale(world):
    zh = Document.objects.get(ref="zh-refunds.md")
    result = service.retrieve_knowledge(
        STAFF, ["billing/refund", "billing/invoices"], "refund", knowledge_ids=[f"document:{zh.pk}"]
    )
    assert {t["id"] for t in result.evidence["targets"]} == {f"document:{zh.pk}"}
    assert all(h["document_id"] == zh.pk for h in result.hits)
    by_role = service.retrieve_knowledge(
        STAFF, ["billing/refund", "billing/invoices"], "invoice", roles=["reference"]
    )
    assert {t["role"] for t in by_role.evidence["targets"]} == {"reference"}


@pytest.mark.parametrize(
    "hit, problem",
    [
        (KnowledgeHit("document:1", 1, 0, 3, "退"), None),
        (KnowledgeHit("document:1", 1, 0, 2, "\ufffd"), "cuts a UTF-8 character"),
        (KnowledgeHit("document:1", 1, 3, 3, ""), "outside"),
        (KnowledgeHit("document:1", 2, 0, 3, "退"), "not part of target"),
        (KnowledgeHit("document:2", 1, 0, 3, "退"), "not selected"),
    ],
)
def test_check_hit_rules(hit, problem):
    target = Target("document:1", "p", ("p/c",), "howto", "zh", 1, (1,), 6)
    outcome = check_hit(hit, {"document:1": target}, {1: "退款".encode()})
    assert (outcome is None) if problem is None else (problem in outcome)


# --- API ---------------------------------------------------------------------------------------


def test_api_endpoints_and_scoped_access(world):
    client = Client()
    _, reader = issue_token("cg-reader", namespaces=[world["namespace"]])
    _, outsider = issue_token("outsider", namespaces=[])
    auth = {"HTTP_AUTHORIZATION": f"Bearer {reader}"}
    catalog = client.get("/api/capabilities/catalog", {"page_size": 1}, **auth)
    assert catalog.status_code == 200 and catalog.json()["total"] == 2
    found = client.post(
        "/api/capabilities/retrieve",
        json.dumps({"text": "refund", "provider_ids": ["billing"]}),
        content_type="application/json",
        **auth,
    )
    assert found.status_code == 200 and found.json()["candidates"][0]["id"] == "billing/refund"
    knowledge = client.post(
        "/api/knowledge/retrieve",
        json.dumps({"selected": ["billing/refund"], "text": "refund a payment", "locales": ["en"]}),
        content_type="application/json",
        **auth,
    )
    assert knowledge.status_code == 200, knowledge.content
    assert knowledge.json()["hits"][0]["title"] == "Refunds"
    denied = client.post(
        "/api/knowledge/retrieve",
        json.dumps({"selected": ["billing/refund"], "text": "x"}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {outsider}",
    )
    # another tenant's capability answers exactly like one that does not exist
    assert denied.status_code == 404 and denied.json() == {
        "code": "CG_UNKNOWN_CAPABILITY",
        "message": "Unknown capability id(s): billing/refund.",
        "details": {"ids": ["billing/refund"]},
    }
    anonymous = client.get("/api/capabilities/catalog")
    assert anonymous.status_code == 200 and anonymous.json()["capabilities"] == []
    unknown = client.post(
        "/api/knowledge/retrieve",
        json.dumps({"selected": ["billing/nope"], "text": "x"}),
        content_type="application/json",
        **auth,
    )
    assert unknown.status_code == 404 and unknown.json()["code"] == "CG_UNKNOWN_CAPABILITY"
    assert ApiToken.objects.filter(name="cg-reader").exists()


# --- admin -------------------------------------------------------------------------------------


def test_admin_edits_the_definition_and_shows_revisions_and_index_state(world):
    from django.contrib.auth import get_user_model

    staff = get_user_model().objects.create_superuser("curator", password="pw-123456789")
    client = Client()
    client.force_login(staff)
    provider = Provider.objects.get(slug="billing")
    listing = client.get("/admin/kb/provider/").content.decode()
    assert "billing" in listing and "current" in listing
    edited = definition(summary="Return money to the customer.")
    form = {
        "slug": "billing",
        "definition": json.dumps(edited),
        "capabilities-TOTAL_FORMS": "0",
        "capabilities-INITIAL_FORMS": "2",
        "capabilities-MIN_NUM_FORMS": "0",
        "capabilities-MAX_NUM_FORMS": "0",
        "revisions-TOTAL_FORMS": "0",
        "revisions-INITIAL_FORMS": "1",
        "revisions-MIN_NUM_FORMS": "0",
        "revisions-MAX_NUM_FORMS": "0",
    }
    response = client.post(f"/admin/kb/provider/{provider.pk}/change/", form)
    assert response.status_code == 302, response.content.decode()[:3000]
    assert ProviderRevision.objects.filter(provider=provider).count() == 2
    assert (
        provider.capabilities.get(canonical_id="billing/refund").summary
        == "Return money to the customer."
    )
    page = client.get(f"/admin/kb/provider/{provider.pk}/change/").content.decode()
    assert (
        revision()[:12] in page and "behind: 0/2 indexed" in page
    )  # the embedding is the worker's job
    queued = OrmQ.objects.get()
    assert queued.func() == "capabilities.tasks.index_provider"
    assert "2 capabilities indexed" in index_provider(*queued.args())
    page = client.get(f"/admin/kb/provider/{provider.pk}/change/").content.decode()
    assert "behind" not in page and "current" in page
    broken = dict(form, definition=json.dumps({**edited, "namespace": "tenant:nope"}))
    refused = client.post(f"/admin/kb/provider/{provider.pk}/change/", broken)
    assert refused.status_code == 200 and "KB_NAMESPACE_UNKNOWN" in refused.content.decode()


def test_knowledge_targets_outside_the_callers_namespaces_are_left_out(world):
    """Defence in depth: a target whose documents live in a namespace the caller may not read
    is dropped before any backend sees it, whatever the capability definition says."""
    reader = Principal("token", namespaces=frozenset({"tenant:cg"}))
    assert service.retrieve_knowledge(
        reader, ["billing/refund"], "refund a payment", locales=["en"]
    ).hits
    other = Namespace.objects.get(slug="tenant:other")
    Source.objects.filter(pk=world["source"].pk).update(namespace=other, name="moved")
    Document.objects.filter(source=world["source"]).update(namespace=other)
    after = service.retrieve_knowledge(
        reader, ["billing/refund"], "refund a payment", locales=["en"]
    )
    assert after.hits == [] and after.evidence["targets"] == []


@pytest.mark.django_db
@pytest.mark.parametrize(
    "bad_id", ["a/b\x00", "\udb4c\udef5)", "not an id"], ids=["nul", "surrogate", "shape"]
)
def test_a_capability_id_no_capability_can_have_is_unknown_not_a_server_error(client, bad_id):
    response = client.post(
        "/api/knowledge/retrieve",
        json.dumps({"selected": [bad_id], "text": "pumpkin"}),
        content_type="application/json",
    )
    assert response.status_code != 500, response.content
    # a NUL is refused with the body (kb.jsonbody), before any id is looked at
    assert response.json()["code"] in (
        "CG_UNKNOWN_CAPABILITY",
        "KB_AUTH_REQUIRED",
        "KB_BAD_REQUEST",
    ), response.json()
