"""The event kinds agree on the fields the server fills, and the lists of kinds are
read from the unions, so a new kind is declared in one place."""

from __future__ import annotations

from typing import get_type_hints

from aster_persist.schemas import events
from aster_persist.schemas.validation import validate_events


def test_every_event_kind_ends_with_the_server_fields() -> None:
    server = get_type_hints(events.ServerFields, include_extras=True)
    kinds = events.members(events.Event)
    assert len(kinds) == 9  # four messages, and five other kinds
    for kind in kinds:
        hints = get_type_hints(kind, include_extras=True)
        assert list(hints)[-len(server) :] == list(server), kind.__name__
        assert {k: hints[k] for k in server} == server, kind.__name__


def test_a_stored_event_keeps_the_order_its_client_sent() -> None:
    sent = {
        "type": "message",
        "role": "user",
        "content": "hi",
        "ts": "2026-01-01T00:00:00Z",
        "x_note": 1,
    }
    (checked,) = validate_events([sent])
    assert list(checked) == ["type", "role", "content", "ts", "x_note"]
