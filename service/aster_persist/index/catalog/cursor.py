"""Listing cursors: the (updated_at, id) of the last session on a page, opaque to clients.

Decoding never raises: a cursor that is not one of ours is None.
"""

from __future__ import annotations

import base64

import orjson


def encode_cursor(updated_at: str, session_id: str) -> str:
    return base64.urlsafe_b64encode(orjson.dumps([updated_at, session_id])).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[str, str] | None:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        value = orjson.loads(raw)
    except (ValueError, orjson.JSONDecodeError):
        return None
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value):
        return value[0], value[1]
    return None
