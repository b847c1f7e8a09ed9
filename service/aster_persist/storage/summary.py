"""What a listing shows of a session, folded from its lines without keeping them.

``SessionInfo`` can absorb lines incrementally, so the catalog can catch up from a
file's last known offset instead of reading the whole transcript again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, NamedTuple

from ..schemas.rendering import text_parts

TITLE_CUT = 80


MAX_MODELS = 8  # models a summary names, the first ones used
# a ledger's counts: turns, tool calls, tool errors, tokens in, out, cached in
LEDGER = ("turns", "tool_calls", "tool_errors", "tokens_in", "tokens_out", "cached_in")
LEDGER_KINDS = len(LEDGER)


@dataclass
class Stats:
    """What a session is made of, counted as its lines are folded in: conversation turns
    (user and assistant messages), tool calls and the results that were errors, tokens
    in and out where the turns say, the models that wrote it, and its first time."""

    turns: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    models: list[str] = field(default_factory=list)
    first_ts: str = ""
    # the sessions it started, by their source (a sub-agent's): the call that did
    spawned: dict[str, str] = field(default_factory=dict)
    days: dict[str, int] = field(default_factory=dict)  # events by day (UTC) of their time
    # what the turns cost, by "<day>|<model>" (a day or model unknown: empty): turns, tool
    # calls, tool errors, tokens in (cached ones too), out, and read from a cache
    ledger: dict[str, list[int]] = field(default_factory=dict)
    # the first source record its events came from known by its own id (an import's
    # key: tool:source:record; a place, #n, is no record's own)
    first_record: str | None = None
    counted: int = 0  # events folded in

    def count(self, line: dict[str, Any], ts: str | None) -> None:
        """Fold one event in (a summary's own copy: ``copy`` first if it is shared)."""
        if ts and (not self.first_ts or ts < self.first_ts):
            self.first_ts = ts
        if ts and len(ts) >= 10:
            self.days[ts[:10]] = self.days.get(ts[:10], 0) + 1
        if self.first_record is None:  # the first record known by its own id
            key = line.get("idempotency_key")
            parts = key.split(":", 2) if isinstance(key, str) else []
            if len(parts) == 3 and parts[2] and not parts[2].startswith("#"):
                self.first_record = parts[2]  # a record's own id, not a place
        self.counted += 1
        if line.get("type") != "message":
            return
        role = line.get("role")
        day = ts[:10] if ts and len(ts) >= 10 else ""
        if role == "tool":
            failed = bool(line.get("is_error") or line.get("x_is_error"))
            self.tool_errors += failed
            if failed:
                self._spent(f"{day}|", 2, 1)
            child = line.get("x_subagent")
            if isinstance(child, dict) and isinstance(child.get("source"), str):
                self.spawned[child["source"]] = str(line.get("tool_call_id") or "")
            return
        if role not in ("user", "assistant"):
            return
        self.turns += 1
        calls = line.get("tool_calls")
        self.tool_calls += len(calls) if isinstance(calls, list) else 0
        usage = line.get("usage")
        model = line.get("model")
        where = f"{day}|{model if isinstance(model, str) and role == 'assistant' else ''}"
        self._spent(where, 0, 1)
        self._spent(where, 1, len(calls) if isinstance(calls, list) else 0)
        if isinstance(usage, dict):
            self.tokens_in += _tokens(usage.get("input_tokens"))
            self.tokens_out += _tokens(usage.get("output_tokens"))
            self._spent(where, 3, _tokens(usage.get("input_tokens")))
            self._spent(where, 4, _tokens(usage.get("output_tokens")))
            self._spent(where, 5, _tokens(usage.get("cached_input_tokens")))
        if (
            role == "assistant"
            and isinstance(model, str)
            and model
            and model not in self.models
            and len(self.models) < MAX_MODELS
        ):
            self.models.append(model)

    def _spent(self, where: str, kind: int, n: int) -> None:
        if n:
            counts = self.ledger.setdefault(where[:200], [0] * LEDGER_KINDS)
            counts[kind] += n

    def copy(self) -> Stats:
        return replace(
            self,
            models=list(self.models),
            spawned=dict(self.spawned),
            days=dict(self.days),
            ledger={k: list(v) for k, v in self.ledger.items()},
        )

    def plus(self, more: Stats) -> Stats:
        """These counts and ``more``'s, as a new ``Stats`` (a summary copied for what
        was acknowledged keeps its own)."""
        out = self.copy()
        out.turns += more.turns
        out.tool_calls += more.tool_calls
        out.tool_errors += more.tool_errors
        out.tokens_in += more.tokens_in
        out.tokens_out += more.tokens_out
        for model in more.models:
            if model not in out.models and len(out.models) < MAX_MODELS:
                out.models.append(model)
        if more.first_ts and (not out.first_ts or more.first_ts < out.first_ts):
            out.first_ts = more.first_ts
        out.first_record = out.first_record or more.first_record
        out.counted += more.counted
        for day, events in more.days.items():
            out.days[day] = out.days.get(day, 0) + events
        out.spawned.update(more.spawned)
        for where, counts in more.ledger.items():
            mine = out.ledger.setdefault(where, [0] * LEDGER_KINDS)
            for kind, n in enumerate(counts[:LEDGER_KINDS]):
                mine[kind] += n
        return out


def _tokens(value: Any) -> int:
    return value if type(value) is int and value >= 0 else 0


NAMING = ("title", "retraction")  # the kinds that may rename a session (and a user message)


class Naming(NamedTuple):
    """What a session is called by its events: the latest title event and the first user
    message, each with the seq it came from, so a retraction of either takes it back
    (the next title event, or user message, names the session then). The same rules
    whether lines are folded as they are written or read back from the file."""

    title: str | None = None
    title_seq: int = 0
    first_user: str | None = None
    first_user_seq: int = 0

    def after(self, line: dict[str, Any], seq: int) -> Naming:
        kind = line.get("type")
        if kind == "title":
            title = line.get("title")
            return (
                self._replace(title=title, title_seq=seq)
                if isinstance(title, str) and title
                else self
            )
        if kind == "message":
            if self.first_user is None and line.get("role") == "user":
                return self._replace(first_user=said_first(line), first_user_seq=seq)
            return self
        target = line.get("target_seq") if kind == "retraction" else None
        if not isinstance(target, int) or target <= 0:
            return self
        out = self
        if target == out.title_seq:
            out = out._replace(title=None, title_seq=0)
        if target == out.first_user_seq:
            out = out._replace(first_user=None, first_user_seq=0)
        return out


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
    title_seq: int = 0  # the seqs title_event and first_user came from (0: none), so a
    first_user_seq: int = 0  # retraction of either takes it back
    state: str = "ok"  # ok | damaged | read_only
    bad_lines: list[int] = field(default_factory=list)
    offset: int = 0  # bytes folded in so far (end of the last complete line)
    lines: int = 0  # complete lines folded in so far
    file_size: int = 0
    file_mtime_ns: int = 0
    # where it came from (an import's header): the tool, the git branch, the source's
    # key, and the source of the session that started this one
    source_tool: str | None = None
    git_branch: str | None = None
    source_key: str | None = None
    parent_source: str | None = None
    alias: str | None = None  # the caller's own name for it (an agent framework's id)
    undated: bool = False  # imported from a source without times: they are the import's
    stats: Stats = field(default_factory=lambda: Stats())
    secrets: int = 0  # the secrets its text holds, as the catalog counted them
    base: str | None = None  # the session whose leading events it refers to (a copy's)
    machine: str | None = None  # the team's machine that owns it (a read-only copy here)
    project_key: str | None = None  # a copy's project (team/projects.py), whatever its path
    # folded from the file's start by the last read (not from where the index left off)
    whole: bool = field(default=False, compare=False, repr=False)

    def absorb(self, lines: list[dict[str, Any]], bad: list[int]) -> None:
        """Fold readable lines (and the numbers of bad ones) into the summary."""
        self.stats = stats = self.stats.copy()  # a copy of this summary keeps its own
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
                    alias = line.get("alias")
                    self.alias = alias if isinstance(alias, str) and alias else None
                    base = line.get("base")
                    base = base.get("session") if isinstance(base, dict) else None
                    self.base = base if isinstance(base, str) else None
                    machine = line.get("machine")
                    self.machine = machine if isinstance(machine, str) and machine else None
                    key = line.get("project_key")
                    self.project_key = key if isinstance(key, str) and key else None
                    self._source(line)
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
            stats.count(line, ts if isinstance(ts, str) else None)
            if kind in NAMING or (kind == "message" and self.first_user is None):
                self.naming = self.naming.after(line, seq if isinstance(seq, int) else 0)
        if bad:
            self.bad_lines.extend(bad)
            self.state = "damaged"

    @property
    def naming(self) -> Naming:
        return Naming(self.title_event, self.title_seq, self.first_user, self.first_user_seq)

    @naming.setter
    def naming(self, value: Naming) -> None:
        self.title_event, self.title_seq, self.first_user, self.first_user_seq = value

    def _source(self, header: dict[str, Any]) -> None:
        """Where an imported session came from, as its header says."""
        found = header.get("x_import")
        if not isinstance(found, dict):
            return
        text = {k: v for k, v in found.items() if isinstance(v, str) and v}
        self.source_tool = text.get("tool") or text.get("format")
        self.git_branch = text.get("git_branch")
        key = text.get("fingerprint", "")
        self.source_key = key if ":source:" in key else None
        self.undated = found.get("undated") is True
        parent = found.get("parent")
        source = parent.get("source") if isinstance(parent, dict) else None
        self.parent_source = source if isinstance(source, str) else None

    @property
    def duration_ms(self) -> int:
        """From its first time to its last activity, in milliseconds."""
        start = moment_of(self.stats.first_ts or self.created_at)
        end = moment_of(self.updated_at)
        if start is None or end is None:
            return 0
        return max(0, round((end - start).total_seconds() * 1000))

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


def moment_of(ts: str) -> datetime | None:
    """A stored time as a moment (None when it is not one)."""
    try:
        moment = datetime.fromisoformat(canonical_ts(ts).replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


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
