"""``claude-code``: Claude Code session transcripts, ``~/.claude/projects/<slug>/<uuid>.jsonl``.

One JSON record per line: ``user`` and ``assistant`` records holding an Anthropic API
message, plus ``summary``, ``system``, ``progress``, ``file-history-snapshot`` and
``queue-operation`` records. The reader guarantees:

- user and assistant records become messages; one API message split over several
  records (the same ``message.id`` in a row) is joined again into one turn, which
  names them all (``x_source.uuids``): a file read while the turn was half written
  stored part of it, and the read that meets the rest completes that part (it takes it
  back and writes the whole turn), never repeats it;
- ``tool_use`` and ``tool_result`` blocks become OpenAI-shape ``tool_calls`` and
  ``tool`` messages linked by id (``is_error`` on a failed result, the record's
  ``toolUseResult`` under ``x_source``); ``thinking`` blocks are kept on the turn;
- each assistant turn keeps its ``model`` and its token ``usage`` (Anthropic's counts as
  this store's ``Usage``: input counts the cached tokens too; the record's own under
  ``x_source.usage``); the session keeps the git branch it began on;
- ``summary`` records (Claude Code's name for a conversation) give the title and a
  summary that folds nothing; ``compact_boundary`` and ``isCompactSummary`` records
  become summaries that fold the turns before them;
- sub-agent (sidechain) records are kept and marked ``x_sidechain``, unless the file is
  a sub-agent's own (``<session>/subagents/agent-<id>.jsonl``: every record names its
  ``agentId``): then it is a child session, its source the parent's and the agent's
  ids, linked to the parent's source (``x_import.parent``), and its turns are its own;
- a tool result that says which sub-agent ran (``toolUseResult.agentId``) names the
  child's source (``x_subagent``), so the parent links to it by the call that ran it;
- every other record (progress, snapshots, queue operations, local commands…) travels
  under ``x_source.records``; ``uuid`` and ``parentUuid`` stay under ``x_source``.

A transcript is known by its source, its ``sessionId`` (and a sub-agent's ``agentId``),
else by its bytes, so the same file always becomes the same session.
"""

from __future__ import annotations

from typing import Any

import orjson

from .reader import Conversation, Format, Head
from .records import Events
from .times import timestamp

NAME = "claude-code"

_RECORD_TYPES = (
    "summary",
    "user",
    "assistant",
    "system",
    "file-history-snapshot",
    "progress",
    "queue-operation",
)


def detects(head: Head) -> bool:
    """Line 1 names a Claude Code session or is one of its record types."""
    return "sessionId" in head.first or head.first.get("type") in _RECORD_TYPES


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", ""))
            for b in content
            if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


class Reader:
    """A transcript read one record at a time (``importers.lines`` drives it)."""

    def __init__(self) -> None:
        self.out = Events()
        self.cwd: Any = None
        self.model: Any = None
        self.title: Any = None
        self.created: str | None = None
        self.branch: Any = None
        self.session: Any = None
        self.agent: Any = None
        self.last_assistant: dict[str, Any] | None = None
        self.last_message_id: Any = None

    def feed(self, record: dict[str, Any]) -> None:
        out = self.out
        kind = record.get("type")
        self.cwd = self.cwd or record.get("cwd")
        self.branch = self.branch or record.get("gitBranch")
        self.session = self.session or record.get("sessionId")
        ts = timestamp(record.get("timestamp"))
        self.created = self.created or ts
        self.agent = self.agent or record.get("agentId")  # a sub-agent's file: its own source
        own = isinstance(self.agent, str) and self.agent == record.get("agentId")
        marks = {"x_sidechain": True} if record.get("isSidechain") and not own else {}
        source = {k: record[k] for k in ("uuid", "parentUuid") if record.get(k)}
        if kind == "summary":
            # Claude Code's name for a conversation (its leaf), written anywhere in the
            # file, even into another session's: a label, so it folds no turn.
            self.title = self.title or record.get("summary")
            out.add(
                {
                    "type": "summary",
                    "content": str(record.get("summary") or ""),
                    "through_seq": 0,
                    "x_source": {"type": "summary", "leafUuid": record.get("leafUuid")},
                }
            )
            self.last_assistant = None
            return
        if kind == "system" and record.get("subtype") == "compact_boundary":
            out.add(
                {
                    "type": "summary",
                    "content": str(record.get("content") or "conversation compacted"),
                    "through_seq": out.count,
                    "ts": ts,
                    "x_source": {"type": "system", "subtype": "compact_boundary", **source},
                    **marks,
                }
            )
            self.last_assistant = None
            return
        message = record.get("message")
        if kind not in ("user", "assistant") or not isinstance(message, dict):
            out.keep(record)  # progress, snapshots, queue operations, local commands…
            return
        content = message.get("content")
        if kind == "user" and record.get("isCompactSummary"):
            out.add(
                {
                    "type": "summary",
                    "content": _text_of(content),
                    "through_seq": out.count,
                    "ts": ts,
                    "x_source": {"isCompactSummary": True, **source},
                    **marks,
                }
            )
            self.last_assistant = None
            return
        if kind == "user":
            self.last_assistant = None
            _add_user(out, record, content, ts, source, marks)
            return
        # assistant: one API message may be split over several records; join them again
        self.model = self.model or message.get("model")
        message_id = message.get("id")
        turn = self.last_assistant
        if turn is None or message_id is None or message_id != self.last_message_id:
            turn = self.last_assistant = out.add(
                {
                    "type": "message",
                    "role": "assistant",
                    "content": None,
                    "ts": ts,
                    "model": message.get("model"),
                    "x_source": dict(source),
                    **marks,
                }
            )
            self.last_message_id = message_id
        elif record.get("uuid"):  # the turn goes on: the record it now ends with
            made_of = turn["x_source"].setdefault("uuids", [turn["x_source"].get("uuid")])
            made_of.append(record["uuid"])  # every record of it: a later read completes it
            turn["x_source"]["last_uuid"] = record["uuid"]
        _add_blocks(turn, content)
        if isinstance(message.get("usage"), dict):  # each record of a turn: the latest
            turn["usage"] = usage_of(message["usage"])
            turn["x_source"]["usage"] = message["usage"]

    def settle(self, events: list[dict[str, Any]]) -> None:
        """Events no later record can change: their last touches."""
        for event in events:  # an assistant turn made only of thinking still says so
            if (
                event.get("role") == "assistant"
                and not event.get("content")
                and not event.get("tool_calls")
            ):
                event["content"] = ""
        if isinstance(self.session, str) and self.session:
            _link_subagents(events, self.session)

    def keys(self, events: list[dict[str, Any]]) -> list[str | None] | None:
        return None  # keyed by the source, when it names itself

    def runs(self, events: list[dict[str, Any]]) -> list[int] | None:
        return None  # each record its own

    def conversation(self) -> tuple[Conversation, str | None]:
        """What the records said of the whole (no events), and the source's own id."""
        session, agent, branch = self.session, self.agent, self.branch
        named = isinstance(session, str) and bool(session)
        parent = {"source": f"{NAME}:source:{session}"} if named and agent else None
        conversation = Conversation(
            fingerprint="",
            events=[],
            created_at=self.created,
            cwd=self.cwd,
            model=self.model,
            title=self.title,
            source={
                "tool": NAME,
                "session_id": session,
                **({"agent_id": agent} if agent else {}),
                **({"git_branch": branch} if isinstance(branch, str) and branch else {}),
                **({"parent": parent} if parent else {}),
            },
        )
        return conversation, (f"{session}/{agent}" if agent else session) if named else None


def _link_subagents(events: list[dict[str, Any]], session: str) -> None:
    """Name on each tool result that ran a sub-agent the source of the sub-agent's own
    file, so the parent's session links to the child's by the call."""
    for event in events:
        found = event.get("x_source") or {}
        result = found.get("toolUseResult") if event.get("role") == "tool" else None
        agent = result.get("agentId") if isinstance(result, dict) else None
        if isinstance(agent, str) and agent:
            event["x_subagent"] = {"agent_id": agent, "source": f"{NAME}:source:{session}/{agent}"}


def usage_of(usage: dict[str, Any]) -> dict[str, int]:
    """Anthropic's token counts as this store's ``Usage``: its ``input_tokens`` leave
    out what was read from or written to the cache, so they are added in."""
    count = {k: v for k, v in usage.items() if type(v) is int and v >= 0}
    cached = count.get("cache_read_input_tokens", 0)
    read = count.get("input_tokens", 0) + cached + count.get("cache_creation_input_tokens", 0)
    out = {"input_tokens": read, "output_tokens": count.get("output_tokens", 0)}
    return {**out, "cached_input_tokens": cached} if cached else out


def _add_user(
    out: Events,
    record: dict[str, Any],
    content: Any,
    ts: str | None,
    source: dict[str, Any],
    marks: dict[str, Any],
) -> None:
    """A user record: its tool results, each a ``tool`` message, then what the user said."""
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
    texts = [b for b in blocks if isinstance(b, dict) and b.get("type") != "tool_result"]
    for block in blocks:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            event: dict[str, Any] = {
                "type": "message",
                "role": "tool",
                "tool_call_id": str(block.get("tool_use_id") or "unknown"),
                "content": _text_of(block.get("content")) or "",
                "ts": ts,
                "x_source": dict(source),
                **marks,
            }
            if block.get("is_error"):
                event["is_error"] = True
            if record.get("toolUseResult") is not None:
                event["x_source"]["toolUseResult"] = record["toolUseResult"]
            out.add(event)
    if texts:
        text = _text_of(texts) if any(b.get("type") == "text" for b in texts) else ""
        event = {
            "type": "message",
            "role": "user",
            "content": text if not isinstance(content, str) else content,
            "ts": ts,
            "x_source": dict(source),
            **marks,
        }
        if record.get("isMeta"):
            event["x_meta"] = True
        other = [b for b in texts if b.get("type") != "text"]
        if other:
            event["x_source"]["blocks"] = other
        out.add(event)


def _add_blocks(turn: dict[str, Any], content: Any) -> None:
    """An assistant record's blocks added to its turn: text, tool calls, thinking."""
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
    for block in blocks:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            previous = turn.get("content") or ""
            turn["content"] = previous + str(block.get("text") or "")
        elif block.get("type") == "tool_use":
            turn.setdefault("tool_calls", []).append(
                {
                    "id": str(block.get("id") or "unknown"),
                    "type": "function",
                    "function": {
                        "name": str(block.get("name") or ""),
                        "arguments": orjson.dumps(block.get("input", {})).decode(),
                    },
                }
            )
        elif block.get("type") in ("thinking", "redacted_thinking"):
            turn.setdefault("thinking", []).append(block)
        else:
            turn["x_source"].setdefault("blocks", []).append(block)


FORMAT = Format(NAME, "Claude Code transcripts (~/.claude/projects)", detects, lines=Reader)
