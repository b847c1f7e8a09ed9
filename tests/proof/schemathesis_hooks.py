"""Hooks schemathesis loads (``hooks`` in schemathesis.toml).

Its coverage phase draws an optional header whose pattern needs characters beyond
letters and digits (``If-Match``: entity tags in double quotes) only as a negative
value, and then sends that value inside cases it labels positive (a valid body with
``If-Match: 0``). Such a case is not schema-valid, so the server's 422 is right: its
"schema-valid request rejected" is dropped. Only that failure, only when the case says
itself that one of its parts was drawn as negative data; every other failure stands.
"""

from __future__ import annotations

import schemathesis
from schemathesis import GenerationMode


@schemathesis.hook
def filter_failure(context: object, failure: object, case: object, response: object) -> bool:
    if getattr(failure, "code", None) != "ST202":
        return True
    meta = getattr(case, "meta", None)
    if meta is None or meta.generation.mode is not GenerationMode.POSITIVE:
        return True
    drawn_negative = any(c.mode is GenerationMode.NEGATIVE for c in meta.components.values())
    return not drawn_negative
