"""What the OpenAPI document shows of the sessions routes beyond their types: examples
of an append's body and the NDJSON form of events."""

from __future__ import annotations

NDJSON_DOC = {
    "schema": {"type": "string", "description": "One JSON object per line, each ending in \\n."},
    "example": '{"type":"session","seq":0,"id":"01JD2X9Q6B7T1S8W2R4N5M3K0H","v":1}\n',
}


_USER = {"type": "message", "role": "user", "content": "Why does the build fail?"}


_CALL = {
    "type": "message",
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "run", "arguments": '{"cmd": "make"}'},
        }
    ],
}


_RESULT = {"type": "message", "role": "tool", "tool_call_id": "call_1", "content": "error: x.h"}


APPEND_DOC = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {"$ref": "#/components/schemas/AppendBody"},
                "examples": {
                    "one event": {"value": _USER},
                    "a batch": {"value": [_CALL, _RESULT]},
                    "with a key": {"value": {"events": [_USER], "idempotency_key": "turn-7"}},
                },
            }
        },
    }
}
