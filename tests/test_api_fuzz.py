"""Schemathesis against the project's own OpenAPI document: every operation, with and without a
token, a bounded number of generated requests each. No response may be a 5xx, break its
documented schema or content type, or (for errors) leave the one error shape."""

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance

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
    _, secret = issue_token("fuzz", namespaces=list(Namespace.objects.all()), scope=ApiToken.Scope.WRITE,
                            rate_limit_per_minute=10**6)
    return secret


def error_shape(ctx, response, case):
    """Every 4xx answer is the documented error object with a stable code."""
    if 400 <= response.status_code < 500:
        assert response.headers.get("content-type", [""])[0].startswith("application/json"), \
            (response.status_code, response.headers, response.text[:300])
        body = response.json()
        assert set(body) == {"code", "message", "details"}, body
        assert isinstance(body["code"], str) and body["code"].isupper(), body


CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance, error_shape]

def _application():
    from kb.wsgi import application

    return application


# the OpenAPI document is read once, from the app itself (no database involved)
schema = schemathesis.openapi.from_wsgi("/api/openapi.json", _application())


@pytest.mark.slow
@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.filter_too_much])
def test_api_with_a_write_token(case, write_token):
    case.call_and_validate(headers={"Authorization": f"Bearer {write_token}"}, checks=CHECKS)


@pytest.mark.slow
@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.filter_too_much])
def test_api_without_auth(case):
    case.call_and_validate(checks=CHECKS)
