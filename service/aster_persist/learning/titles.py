"""Titles: a short title asked of the model for a session nobody has named.

A title from the session itself (an event or the header) is never overwritten: it is
checked before the model is asked and again before the title is appended. A title with
a secret in it, or none at all, is an error of the job, never appended.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..secrets import scan_text
from .model import ModelClient, ModelError
from .prompts import TITLE_PROMPT, TITLE_SCHEMA
from .turns import render_turn, turn_of

if TYPE_CHECKING:
    from .transcripts import Transcripts


class Titles:
    """Names an untitled session from its first turn."""

    def __init__(self, sessions: Transcripts, model: ModelClient) -> None:
        self.sessions = sessions
        self.model = model

    async def title(self, job: dict[str, Any]) -> str | None:
        """Title the job's session, unless someone named it meanwhile; what went wrong,
        or None."""
        session = str(job["session"])
        lines, _raw, info = await self.sessions.read(session)
        if info.title_source in ("event", "header"):
            return None  # someone named it meanwhile: never overwritten
        turn, _first, _last = turn_of(lines, None, int(job["to_seq"]))
        text = render_turn(turn, 2000)
        try:
            answer = await self.model.json(
                [{"role": "system", "content": TITLE_PROMPT}, {"role": "user", "content": text}],
                schema=TITLE_SCHEMA,
                name="session_title",
                max_tokens=60,
            )
        except ModelError as exc:
            return str(exc)
        title = " ".join(str(answer.get("title") or "").split())[:120]
        if not title or scan_text(title):
            return "the model gave no usable title"
        _lines, _raw, info = await self.sessions.read(session)
        if info.title_source in ("event", "header"):
            return None
        await self.sessions.append(session, [{"type": "title", "title": title, "source": "model"}])
        return None
