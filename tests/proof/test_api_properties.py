"""API property tests: schemathesis generates requests from openapi/openapi.json, valid
and invalid, and sends them to a real daemon. No server error, no response that breaks
its documented schema, status or content type, no invalid input accepted."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import negative_data_rejection, positive_data_acceptance

from ..conftest import Daemon
from .scale import record, rounds

OPENAPI = Path(__file__).resolve().parents[2] / "openapi" / "openapi.json"
STREAMS = ("events-stream", "sessions-events-stream")  # endless by design

schema = schemathesis.openapi.from_path(OPENAPI)
schema.config.generation.update(modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
# A refused precondition (412) refuses the request too: nothing was written. (A text
# body cannot say whether it was generated as a string or as an object printed.)
rejection = schema.config.checks.negative_data_rejection
rejection.expected_statuses = [*rejection.expected_statuses, "412"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    daemon = Daemon(tmp_path_factory.mktemp("properties") / "home").start()
    yield daemon
    daemon.kill()


# Text has no type to violate: a markdown body or a string query value generated "as a
# number" arrives as text, so these operations are not sent invalid data.
TEXT_ONLY = ("memory-core-put", "memory-blocks-put", "memory-blocks-list")
EXAMPLES = settings(
    max_examples=rounds(8, 150), deadline=None, suppress_health_check=list(HealthCheck)
)


@schema.exclude(operation_id=list(STREAMS)).parametrize()
@EXAMPLES
def test_every_operation_keeps_its_contract(case: schemathesis.Case, server: Daemon) -> None:
    case.call_and_validate(base_url=server.url, excluded_checks=not_applying(case))


def not_applying(case: schemathesis.Case) -> list[Any]:
    """Every check applies but "valid data is accepted" (a schema-valid value can still
    name nothing, a cursor or a session id, and be refused with a 4xx), and for
    text-only operations, "invalid data is refused"."""
    excluded: list[Any] = [positive_data_acceptance]
    if case.operation.definition.raw.get("operationId") in TEXT_ONLY:
        excluded.append(negative_data_rejection)
    return excluded


def test_regression_a_json_block_that_is_not_an_object_is_422(server: Daemon) -> None:
    import httpx

    r = httpx.put(f"{server.url}/v1/memory/blocks/x", json=[None, None])
    assert r.status_code == 422 and "not valid" in r.json()["detail"]


def test_stateful_create_append_read_rename_delete_read(server: Daemon) -> None:
    """Sequences along the OpenAPI links: create → append → read → rename → delete →
    read (and restore), each response checked as above."""
    machine = schema.exclude(operation_id=list(STREAMS)).as_state_machine()

    class Walk(machine):  # type: ignore[misc,valid-type]
        def get_call_kwargs(self, case: schemathesis.Case) -> dict[str, object]:
            return {"base_url": server.url}

        def validate_response(
            self, response: object, case: schemathesis.Case, **kwargs: object
        ) -> None:
            case.validate_response(response, excluded_checks=not_applying(case))  # type: ignore[arg-type]

    # no shrinking: the daemon's state lives on between examples, so a replay would not
    # see the same responses; the first failure is reported as it happened. (Past a few
    # dozen walks hypothesis's own replay of rule choices diverges for the same reason.)
    Walk.run(settings=settings(max_examples=rounds(10, 25), stateful_step_count=6, deadline=None,
                               phases=[Phase.explicit, Phase.generate],
                               suppress_health_check=list(HealthCheck)))  # fmt: skip


def test_the_property_run_is_recorded() -> None:
    operations = len(list(schema.exclude(operation_id=list(STREAMS)).get_all_operations()))
    examples = rounds(8, 150)
    record("schemathesis: every operation, valid and invalid data, stateful walks",
           rounds=examples, faults=operations * examples, checked=operations * examples, lost=0)  # fmt: skip
