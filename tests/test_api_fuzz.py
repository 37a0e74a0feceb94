"""Schemathesis against the project's own OpenAPI document: every operation, with and without a
token, a bounded number of generated requests each, and each of those again made hostile: every
integer past PostgreSQL's bigint, every string in the body with a lone surrogate, the body nested
past any request's depth. No response may be a 5xx, break its documented schema or content type,
or (for errors) leave the one error shape."""

import re

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance

from kb import jsonbody
from kb.auth import issue_token
from kb.models import ApiToken, Namespace
from tests.corpus import CORPUS, ingest

MAX_EXAMPLES = 15


@pytest.fixture(autouse=True)
def world(db):
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    namespace, _ = ingest("tenant:a", CORPUS)
    Namespace.objects.filter(pk=namespace.pk).update(is_public=True)
    # as Django's test client does: requests must not close the test's connection (and transaction)
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def write_token(db):
    _, secret = issue_token(
        "fuzz",
        namespaces=list(Namespace.objects.all()),
        scope=ApiToken.Scope.WRITE,
        rate_limit_per_minute=10**6,
    )
    return secret


def error_shape(ctx, response, case):
    """Every 4xx answer is the documented error object with a stable code."""
    if 400 <= response.status_code < 500:
        assert response.headers.get("content-type", [""])[0].startswith("application/json"), (
            response.status_code,
            response.headers,
            response.text[:300],
        )
        body = response.json()
        assert set(body) == {"code", "message", "details"}, body
        assert isinstance(body["code"], str) and body["code"].isupper(), body


CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance, error_shape]

HUGE = 2**63  # one past PostgreSQL's bigint
SURROGATE = "\ud800"  # sent as its escape: no character, so nothing can store or search for it
DEPTH = jsonbody.MAX_DEPTH * 3  # past the limit, and within what the client's encoder can write


def _leaves(value, change):
    """`value` with `change` applied to every leaf inside its dicts and lists."""
    if isinstance(value, dict):
        return {key: _leaves(item, change) for key, item in value.items()}
    if isinstance(value, list):
        return [_leaves(item, change) for item in value]
    return change(value)


def _huge(leaf):
    """An integer past bigint for an integer, or for digits (as the query and the path carry
    them)."""
    if isinstance(leaf, int) and not isinstance(leaf, bool):
        return HUGE
    return str(HUGE) if isinstance(leaf, str) and re.fullmatch(r"-?\d+", leaf) else leaf


def _with_surrogate(leaf):
    return leaf + SURROGATE if isinstance(leaf, str) else leaf


def _nested(depth: int):
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


def hostile_variants(case):
    """The generated case again, made hostile each way the audit found a 500 with. Built with
    `operation.Case` (explicit data), since schemathesis cannot re-check a lone surrogate itself."""

    def variant(path_parameters=None, query=None, body=None):
        return case.operation.Case(
            path_parameters=case.path_parameters if path_parameters is None else path_parameters,
            query=case.query if query is None else query,
            headers=case.headers.copy(),
            body=case.body if body is None else body,
            media_type=case.media_type,
        )

    yield variant(
        path_parameters=_leaves(case.path_parameters, _huge),
        query=_leaves(case.query, _huge),
        body=_leaves(case.body, _huge) if isinstance(case.body, (dict, list)) else None,
    )
    if (
        case.media_type != "application/json"
    ):  # a form or upload cannot carry a surrogate: it is UTF-8 text
        return
    if isinstance(case.body, dict):
        yield variant(body=_leaves(case.body, _with_surrogate))
        yield variant(body={**case.body, next(iter(case.body), "nested"): _nested(DEPTH)})
    elif isinstance(case.body, list):
        yield variant(body=_leaves(case.body, _with_surrogate))
        yield variant(body=[_nested(DEPTH)])


def _application():
    from config.wsgi import application

    return application


# the OpenAPI document is read once, from the app itself (no database involved)
schema = schemathesis.openapi.from_wsgi("/api/openapi.json", _application())


@pytest.mark.slow
@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
    ],
)
def test_api_with_a_write_token(case, write_token):
    headers = {"Authorization": f"Bearer {write_token}"}
    case.call_and_validate(headers=headers, checks=CHECKS)
    for variant in hostile_variants(case):
        variant.call_and_validate(headers=headers, checks=CHECKS)


@pytest.mark.slow
@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
    ],
)
def test_api_without_auth(case):
    case.call_and_validate(checks=CHECKS)
    for variant in hostile_variants(case):
        variant.call_and_validate(checks=CHECKS)
