"""What a listing shows of a session, folded from its lines without keeping them.

``SessionInfo`` can absorb lines incrementally, so the catalog can catch up from a
file's last known offset instead of reading the whole transcript again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..schemas.rendering import text_parts

TITLE_CUT = 80


@dataclass
class SessionInfo:
    """What listings show of a session, worked out from its lines as they are read."""

    id: str
    slug: str
    repo_root: str = ""
    created_at: str = ""
    updated_at: str = ""
    events: int = 0
    last_seq: int = 0
    header_title: str | None = None
    title_event: str | None = None
    first_user: str | None = None
    state: str = "ok"  # ok | damaged | read_only
    bad_lines: list[int] = field(default_factory=list)
    offset: int = 0  # bytes folded in so far (end of the last complete line)
    lines: int = 0  # complete lines folded in so far
    file_size: int = 0
    file_mtime_ns: int = 0

    def absorb(self, lines: list[dict[str, Any]], bad: list[int]) -> None:
        """Fold readable lines (and the numbers of bad ones) into the summary."""
        for line in lines:
            kind = line.get("type")
            if kind == "session":
                if self.lines == 0 or not self.created_at:
                    self.repo_root = str(line.get("repo_root") or "")
                    self.created_at = str(line.get("created_at") or "")
                    title = line.get("title")
                    self.header_title = title if isinstance(title, str) and title else None
                    if not self.updated_at:
                        self.updated_at = self.created_at
                continue
            self.events += 1
            seq = line.get("seq")
            if isinstance(seq, int) and seq > self.last_seq:
                self.last_seq = seq
            ts = line.get("ts")
            if isinstance(ts, str):
                ts = canonical_ts(ts)
                if ts > self.updated_at:
                    self.updated_at = ts
            if kind == "title":
                title = line.get("title")
                if isinstance(title, str) and title:
                    self.title_event = title
            elif kind == "message" and self.first_user is None and line.get("role") == "user":
                self.first_user = said_first(line)
        if bad:
            self.bad_lines.extend(bad)
            self.state = "damaged"

    @property
    def title(self) -> str | None:
        return self.title_event or self.header_title or self.first_user

    @property
    def title_source(self) -> str | None:
        if self.title_event:
            return "event"
        if self.header_title:
            return "header"
        if self.first_user:
            return "first_message"
        return None


def canonical_ts(ts: str) -> str:
    """A client's RFC 3339 time as the server writes it (UTC, ms, Z), so times compare as text."""
    if len(ts) == 24 and ts.endswith("Z") and ts[10] == "T":
        return ts
    try:
        moment = datetime.fromisoformat(
            ts.replace("z", "+00:00").replace("Z", "+00:00").replace("t", "T")
        )
    except ValueError:
        return ts
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        moment = moment.astimezone(UTC)
    except OverflowError:  # a valid form, but before year 1 or after 9999 in UTC
        return ts
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


# What tools put in a user turn that the user did not say: Claude Code's command and
# hook wrappers and reminders, Codex's environment and AGENTS.md instructions.
INJECTED = re.compile(
    r"\s*(<(command-[a-z]+|local-command-[a-z]+|system-reminder|user-prompt-submit-hook|"
    r"environment_context|user_instructions|permissions instructions)>"
    r"|# AGENTS\.md instructions|Caveat: The messages below were generated)"
)


COMMAND = re.compile(
    r"<command-name>\s*(.*?)\s*</command-name>(?:.*?<command-args>\s*(.*?)\s*</command-args>)?",
    re.S,
)


def said_first(line: dict[str, Any]) -> str | None:
    """What a user message gives a session's fallback title: its first text, unless a
    tool put it there (marked ``x_meta``, or one of the wrappers ``INJECTED`` knows); of
    a slash command's wrapper, the command the user typed (``/init``)."""
    if line.get("x_meta"):
        return None
    text = first_text(line.get("content"))
    if text is None or not INJECTED.match(text):
        return text
    command = COMMAND.search(" ".join(text_parts(line.get("content"), previews=False)))
    if command is None:
        return None
    typed = " ".join(f"{command[1]} {command[2] or ''}".split())
    return typed[:TITLE_CUT] or None


def first_text(content: Any) -> str | None:
    """The first 80 characters of a message's first text, whatever its content shape."""
    parts = text_parts(content, previews=False)
    text = next((part for part in parts if part.strip()), "")
    text = " ".join(text.split())
    return text[:TITLE_CUT] or None
