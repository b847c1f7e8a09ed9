"""What the OpenAPI document shows of the sessions routes beyond their types: examples
of an append's body and the NDJSON form of events."""

from __future__ import annotations

from ..schemas.sessions import AppendOut
from .rules import IF_MATCH_RE

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
    "parameters": [
        {
            "name": "Idempotency-Key",
            "in": "header",
            "required": False,
            "description": "Makes a retry safe: the same key on the same session answers "
            "with the first append's seqs (200, `Idempotent-Replayed: true`) and writes "
            "nothing again.",
            "schema": {"type": "string", "minLength": 1, "maxLength": 200},
        },
        {
            "name": "If-Match",
            "in": "header",
            "required": False,
            "description": 'Append only while the session\'s last seq is this one (`"12"`, '
            "its ETag; a list matches when any of its strong tags does, `*` always); 412 "
            "with the current ETag otherwise (a weak tag never matches). Only a header that "
            "is not entity tags in double quotes is 422 (RFC 9110).",
            "schema": {"type": "string", "pattern": IF_MATCH_RE.pattern},
        },
    ],
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
    },
}


REPLAYED = {
    "model": AppendOut,
    "description": "A retry with an Idempotency-Key already used on this session: the first "
    "append's seqs, nothing written again",
    "headers": {
        "Idempotent-Replayed": {"schema": {"type": "string", "enum": ["true"]}},
        "ETag": {"schema": {"type": "string"}, "description": "The session's last seq, quoted"},
    },
}
