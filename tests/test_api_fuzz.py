"""The API under schemathesis: generated requests for every operation of the live schema, through
Django's WSGI app as an admin (a Token), must never answer 5xx and must answer what the schema says
(status documented, body matching). Bounded: ``MAX_EXAMPLES`` per operation, no deadline; the whole
module takes about a minute on two cores (docs/api.md, "Errors")."""

from __future__ import annotations

import json

import pytest
import schemathesis
from api_keys import api_key
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance, status_code_conformance

from fleet.project.wsgi import application

#: Generated requests per operation: enough to reach each field's bounds and types, few enough
#: that ~45 operations stay around a minute.
MAX_EXAMPLES = 10
CHECKS = [not_a_server_error, status_code_conformance, response_schema_conformance]


@pytest.fixture
def admin_headers(make_user) -> dict[str, str]:
    user = make_user("fuzz-admin", "admin")
    return {"Authorization": f"Token {api_key(user)}"}


@pytest.fixture
def keep_connection():
    """The WSGI app closes the database connection after each request (``close_old_connections``),
    which would end the test's transaction; Django's test client holds it open the same way."""
    from django.core import signals
    from django.db import close_old_connections

    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


def live_schema() -> dict:
    """The schema ``/api/v1/schema/`` serves, generated the same way (no request, no database)."""
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.renderers import OpenApiJsonRenderer

    return json.loads(OpenApiJsonRenderer().render(SchemaGenerator().get_schema(request=None, public=True)))


@pytest.fixture(autouse=True)
def catalog(db, keep_connection):
    from django.core.management import call_command

    # The catalogue gives the generated slugs something real to miss or, now and then, hit.
    call_command("load_catalog", verbosity=0)


#: Examples and fuzzing only: the coverage phase adds dozens of deterministic cases per operation
#: (every boundary of every field), minutes in all; tests/test_bad_input.py pins the boundaries.
CONFIG = schemathesis.Config.from_dict(
    {"phases": {"coverage": {"enabled": False}}, "generation": {"max-examples": MAX_EXAMPLES}}
)
schema = schemathesis.openapi.from_dict(live_schema(), config=CONFIG)
schema.app = application


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_no_server_errors_and_answers_match_the_schema(case, admin_headers):
    case.call_and_validate(headers=admin_headers, checks=CHECKS)
