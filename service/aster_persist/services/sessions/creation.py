"""What a create checks before it writes: a retried create (the same id and fields)
answers with the session it made, and an ``alias``, a caller's own name for a session
(an agent framework's ``"user_123"``), names one live session at a time
(``aliases.py``).

The alias is kept in the header, so the files say which session has it; the catalog
finds it. A session in the trash no longer holds its alias: clearing a conversation
and starting it again under the same name makes a new session.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from ...storage.home import normalize_repo_root

if TYPE_CHECKING:
    from .parts import Parts


async def same_create(sessions: Parts, fields: dict[str, Any]) -> dict[str, Any] | None:
    """The header of the live session ``fields`` would create again, when every field
    it asks for is what that session was created with; None otherwise."""
    sid = fields.get("session_id")
    where = sessions.store.locations.get(sid) if isinstance(sid, str) else None
    if where is None or where.trashed:
        return None
    parsed, _info = await asyncio.to_thread(sessions.store.read, str(sid))
    header = parsed.lines[0] if parsed.lines else {}
    wanted = {
        "repo_root": normalize_repo_root(str(fields.get("repo_root"))),
        **{k: fields[k] for k in ("cwd", "model", "title") if fields.get(k) is not None},
        **{k: v for k, v in (fields.get("extra") or {}).items()},
    }
    if fields.get("aster_version"):
        wanted["aster_version"] = fields["aster_version"]
    if any(header.get(key) != value for key, value in wanted.items()):
        return None
    return header
