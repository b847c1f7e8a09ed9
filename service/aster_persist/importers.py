"""Transcripts written by other tools, read into sessions of this store.

Each reader turns a file into ``Conversation``s: a header (where, when, which model,
what title) and events in this store's format. Nothing in a source is dropped silently:
records with no equivalent travel under ``x_source`` on the next event (or the last
one), and fields this store does not know stay on the events they came with.

- ``claude-code``: ``~/.claude/projects/<slug>/<uuid>.jsonl``. User and assistant records
  (one API message split over several records is joined again), ``tool_use`` and
  ``tool_result`` blocks as OpenAI-shape ``tool_calls`` and ``tool`` messages, ``thinking``
  kept, ``summary`` / ``compact_boundary`` / ``isCompactSummary`` records as summaries,
  sub-agent (sidechain) records kept and marked ``x_sidechain``.
- ``codex``: ``~/.codex/sessions/**/rollout-*.jsonl``. ``session_meta`` is the header;
  messages, ``function_call`` / ``custom_tool_call`` and their outputs become messages
  with tool calls; reasoning and events ride along under ``x_source``.
- ``openai-chat``: a ``messages`` list, an object holding one, a JSON array of them (a
  tau-bench trajectory file holds many), or JSON Lines of them.
- ``native``: this store's own export.

A conversation's fingerprint (the format and the bytes it came from) fixes the id of the
session it becomes, so importing the same source again finds it instead of copying it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson
from ulid import ULID

from .errors import Invalid
from .storage.events import validate_events

FORMATS = ("native", "claude-code", "codex", "openai-chat")


@dataclass
class Conversation:
    fingerprint: str
    events: list[dict[str, Any]]
    created_at: str | None = None
    cwd: str | None = None
    model: str | None = None
    title: str | None = None
    session_id: str | None = None  # native exports keep theirs
    source: dict[str, Any] = field(default_factory=dict)
    keys: list[str | None] | None = None  # native: each event's idempotency key, if any

    def id(self) -> str:
        """The session id this conversation always becomes."""
        if self.session_id:
            return self.session_id
        digest = hashlib.sha256(self.fingerprint.encode()).digest()
        moment = _moment(self.created_at) or datetime(2000, 1, 1, tzinfo=UTC)
        if moment.timestamp() < 0:  # before 1970: a ULID cannot say so
            moment = datetime(1970, 1, 1, tzinfo=UTC)
        return str(ULID.from_bytes(ULID.from_datetime(moment).bytes[:6] + digest[:10]))


class ImportProblem(Invalid):
    code = "import_failed"
    title = "The file cannot be imported"


def _moment(ts: Any) -> datetime | None:
    if not isinstance(ts, str):
        return None
    try:
        moment = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return None
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    try:
        moment.astimezone(UTC)
    except OverflowError:
        return None
    return moment


def _ts(value: Any) -> str | None:
    """An RFC 3339 UTC timestamp with milliseconds, from whatever the source wrote."""
    moment = _moment(value)
    if moment is None:
        return None
    try:
        moment = moment.astimezone(UTC)
    except OverflowError:  # before year 1 or after 9999 in UTC: not a time to keep
        return None
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _json_lines(data: bytes) -> list[dict[str, Any]]:
    records = []
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise ImportProblem(
                f"line {number}: not JSON ({exc}); expected one JSON object per line"
            ) from None
        if not isinstance(record, dict):
            raise ImportProblem(
                f"line {number}: expected a JSON object, found {type(record).__name__}"
            )
        records.append(record)
    if not records:
        raise ImportProblem("the file holds no records")
    return records


def detect(data: bytes) -> str:
    """The format of a file, from its content."""
    head = data.lstrip()[:1]
    if head == b"[":
        return "openai-chat"
    if head != b"{":
        raise ImportProblem("expected JSON or JSON Lines; the file starts with neither")
    first_line = data.lstrip().split(b"\n", 1)[0]
    try:
        first = orjson.loads(first_line)
    except orjson.JSONDecodeError:
        return "openai-chat"  # one JSON document over several lines
    if not isinstance(first, dict):
        raise ImportProblem("line 1: expected a JSON object")
    if first.get("type") == "session" and "v" in first and "repo_root" in first:
        return "native"
    if first.get("type") in ("session_meta", "response_item", "event_msg", "turn_context"):
        return "codex"
    if "messages" in first or "traj" in first:
        return "openai-chat"
    if "sessionId" in first or first.get("type") in (
        "summary",
        "user",
        "assistant",
        "system",
        "file-history-snapshot",
        "progress",
        "queue-operation",
    ):
        return "claude-code"
    raise ImportProblem(
        "line 1: not a format this service reads (native, claude-code, codex, openai-chat); "
        "name it with ?format= if it is one of them"
    )


def read(data: bytes, format: str = "auto") -> tuple[str, list[Conversation]]:
    """The format and the conversations of a file; raise ImportProblem saying why not."""
    if format == "auto":
        format = detect(data)
    if format not in FORMATS:
        raise ImportProblem(f"unknown format {format!r}; use one of auto, {', '.join(FORMATS)}")
    reader = {
        "native": _native,
        "claude-code": _claude_code,
        "codex": _codex,
        "openai-chat": _openai_chat,
    }[format]
    conversations = reader(data)
    for conversation in conversations:
        _fill_times(conversation.events)
        try:
            conversation.events = validate_events(conversation.events)
        except Invalid as exc:
            raise ImportProblem(
                f"the {format} file gives an event this store refuses: {exc.detail}"
            ) from None
    return format, conversations


def _fill_times(events: list[dict[str, Any]]) -> None:
    """A record without a time (a summary line) takes its neighbour's, so the session
    keeps its own dates instead of the moment of the import."""
    known = [e.get("ts") for e in events]
    if not any(known):
        return
    previous = next(t for t in known if t)
    for event in events:
        if event.get("ts"):
            previous = event["ts"]
        else:
            event["ts"] = previous


class _Events:
    """Events being built, with source records waiting for the next event to carry them."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.pending: list[Any] = []

    def add(self, event: dict[str, Any]) -> dict[str, Any]:
        if self.pending:
            event.setdefault("x_source", {})["records"] = self.pending
            self.pending = []
        self.events.append(event)
        return event

    def keep(self, record: Any) -> None:
        self.pending.append(record)

    def done(self) -> list[dict[str, Any]]:
        if self.pending:
            if self.events:
                self.events[-1].setdefault("x_source", {}).setdefault("records", []).extend(
                    self.pending
                )
            else:
                self.events.append(
                    {
                        "type": "summary",
                        "content": "(records with no message of their own)",
                        "through_seq": 0,
                        "x_source": {"records": self.pending},
                    }
                )
        return self.events


# -- native -------------------------------------------------------------------------------

_SERVER_KEYS = ("seq", "idempotency_key", "batch_size")


def _native(data: bytes) -> list[Conversation]:
    records = _json_lines(data)
    header = records[0]
    if header.get("type") != "session":
        raise ImportProblem("line 1: a native transcript starts with its session header")
    events = [{k: v for k, v in r.items() if k not in _SERVER_KEYS} for r in records[1:]]
    known = (
        "type",
        "seq",
        "id",
        "v",
        "created_at",
        "cwd",
        "repo_root",
        "model",
        "aster_version",
        "title",
    )
    return [
        Conversation(
            fingerprint=f"native:{header.get('id')}",
            events=events,
            created_at=header.get("created_at"),
            cwd=header.get("cwd"),
            model=header.get("model"),
            title=header.get("title"),
            session_id=str(header.get("id") or "") or None,
            keys=[r.get("idempotency_key") for r in records[1:]],
            source={
                "repo_root": header.get("repo_root"),
                **{k: v for k, v in header.items() if k not in known},
            },
        )
    ]


# -- Claude Code ----------------------------------------------------------------------------


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


def _claude_code(data: bytes) -> list[Conversation]:
    records = _json_lines(data)
    out = _Events()
    cwd = model = title = created = None
    session = None
    last_assistant: dict[str, Any] | None = None
    last_message_id = None
    for record in records:
        kind = record.get("type")
        cwd = cwd or record.get("cwd")
        session = session or record.get("sessionId")
        ts = _ts(record.get("timestamp"))
        created = created or ts
        marks = {"x_sidechain": True} if record.get("isSidechain") else {}
        source = {k: record[k] for k in ("uuid", "parentUuid") if record.get(k)}
        if kind == "summary":
            # Claude Code's name for a conversation (its leaf), written anywhere in the
            # file, even into another session's: a label, so it folds no turn.
            title = title or record.get("summary")
            out.add(
                {
                    "type": "summary",
                    "content": str(record.get("summary") or ""),
                    "through_seq": 0,
                    "x_source": {"type": "summary", "leafUuid": record.get("leafUuid")},
                }
            )
            last_assistant = None
            continue
        if kind == "system" and record.get("subtype") == "compact_boundary":
            out.add(
                {
                    "type": "summary",
                    "content": str(record.get("content") or "conversation compacted"),
                    "through_seq": len(out.events),
                    "ts": ts,
                    "x_source": {"type": "system", "subtype": "compact_boundary", **source},
                    **marks,
                }
            )
            last_assistant = None
            continue
        message = record.get("message")
        if kind not in ("user", "assistant") or not isinstance(message, dict):
            out.keep(record)  # progress, snapshots, queue operations, local commands…
            continue
        content = message.get("content")
        if kind == "user" and record.get("isCompactSummary"):
            out.add(
                {
                    "type": "summary",
                    "content": _text_of(content),
                    "through_seq": len(out.events),
                    "ts": ts,
                    "x_source": {"isCompactSummary": True, **source},
                    **marks,
                }
            )
            last_assistant = None
            continue
        if kind == "user":
            last_assistant = None
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
                        event["x_is_error"] = True
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
            continue
        # assistant: one API message may be split over several records; join them again
        model = model or message.get("model")
        message_id = message.get("id")
        if last_assistant is None or message_id is None or message_id != last_message_id:
            last_assistant = out.add(
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
            last_message_id = message_id
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        for block in blocks:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                previous = last_assistant.get("content") or ""
                last_assistant["content"] = previous + str(block.get("text") or "")
            elif block.get("type") == "tool_use":
                last_assistant.setdefault("tool_calls", []).append(
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
                last_assistant.setdefault("thinking", []).append(block)
            else:
                last_assistant["x_source"].setdefault("blocks", []).append(block)
    events = out.done()
    for event in events:  # an assistant turn made only of thinking still says so
        if (
            event.get("role") == "assistant"
            and not event.get("content")
            and not event.get("tool_calls")
        ):
            event["content"] = ""
    return [
        Conversation(
            fingerprint="claude-code:" + hashlib.sha256(data).hexdigest(),
            events=events,
            created_at=created,
            cwd=cwd,
            model=model,
            title=title,
            source={"tool": "claude-code", "session_id": session},
        )
    ]


# -- Codex --------------------------------------------------------------------------------


def _codex(data: bytes) -> list[Conversation]:
    records = _json_lines(data)
    out = _Events()
    meta: dict[str, Any] = {}
    model = None
    for record in records:
        kind = record.get("type")
        raw = record.get("payload")
        payload: dict[str, Any] = raw if isinstance(raw, dict) else {}
        ts = _ts(record.get("timestamp"))
        item = payload.get("type")
        if kind == "session_meta":
            meta = payload
            continue
        if kind == "turn_context":
            model = model or payload.get("model")
            out.keep(record)
            continue
        if kind != "response_item":
            out.keep(record)  # event_msg: token counts, command ends, agent messages…
            continue
        if item == "message":
            role = payload.get("role")
            text = "\n".join(
                str(part.get("text", ""))
                for part in payload.get("content") or []
                if isinstance(part, dict)
            )
            event: dict[str, Any] = {
                "type": "message",
                "role": role if role in ("user", "assistant", "system") else "system",
                "content": text,
                "ts": ts,
            }
            if role not in ("user", "assistant", "system"):
                event["x_role"] = role
            out.add(event)
        elif item in ("function_call", "custom_tool_call"):
            arguments = payload.get("arguments")
            if item == "custom_tool_call":
                arguments = orjson.dumps({"input": payload.get("input")}).decode()
            call = {
                "id": str(payload.get("call_id") or "unknown"),
                "type": "function",
                "function": {
                    "name": str(payload.get("name") or ""),
                    "arguments": str(arguments or ""),
                },
            }
            previous = out.events[-1] if out.events else None
            if (
                previous is not None
                and previous.get("role") == "assistant"
                and previous.get("content") is None
                and previous.get("tool_calls")
            ):
                previous["tool_calls"].append(call)  # calls made in parallel: one turn
                if out.pending:  # reasoning between them stays with the turn
                    previous.setdefault("x_source", {}).setdefault("records", []).extend(
                        out.pending
                    )
                    out.pending = []
                continue
            out.add(
                {
                    "type": "message",
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [call],
                    "ts": ts,
                    "x_source": {"type": item},
                }
            )
        elif item in ("function_call_output", "custom_tool_call_output"):
            output = payload.get("output")
            out.add(
                {
                    "type": "message",
                    "role": "tool",
                    "tool_call_id": str(payload.get("call_id") or "unknown"),
                    "content": output if isinstance(output, str) else orjson.dumps(output).decode(),
                    "ts": ts,
                }
            )
        else:
            out.keep(record)  # reasoning (often encrypted), web searches…
    return [
        Conversation(
            fingerprint="codex:" + hashlib.sha256(data).hexdigest(),
            events=out.done(),
            created_at=_ts(meta.get("timestamp"))
            or (out.events[0].get("ts") if out.events else None),
            cwd=meta.get("cwd"),
            model=model,
            source={
                "tool": "codex",
                **{
                    k: meta[k]
                    for k in ("id", "cli_version", "originator", "model_provider")
                    if k in meta
                },
            },
        )
    ]


# -- OpenAI chat --------------------------------------------------------------------------


def _openai_chat(data: bytes) -> list[Conversation]:
    try:
        document = orjson.loads(data)
        records = document if isinstance(document, list) else [document]
    except orjson.JSONDecodeError:
        records = _json_lines(data)
    if records and isinstance(records[0], dict) and "role" in records[0]:
        records = [{"messages": records}]  # one bare messages list
    conversations = []
    for number, record in enumerate(records, 1):
        messages = (
            record.get("messages") or record.get("traj") if isinstance(record, dict) else None
        )
        if not isinstance(messages, list):
            raise ImportProblem(f"conversation {number}: expected a 'messages' (or 'traj') list")
        events = []
        for index, message in enumerate(messages):
            if not isinstance(message, dict) or "role" not in message:
                raise ImportProblem(
                    f"conversation {number}, message {index + 1}: expected an object with a role"
                )
            event = {"type": "message", **{k: v for k, v in message.items() if v is not None}}
            if message.get("role") == "assistant" and message.get("content") is None:
                event["content"] = None
            if message.get("role") == "developer":  # the newer name of the system role
                event["role"], event["x_role"] = "system", "developer"
            events.append(event)
        extra = {k: v for k, v in record.items() if k not in ("messages", "traj")}
        conversations.append(
            Conversation(
                fingerprint="openai-chat:"
                + hashlib.sha256(orjson.dumps(record, option=orjson.OPT_SORT_KEYS)).hexdigest(),
                events=events,
                model=record.get("model") if isinstance(record.get("model"), str) else None,
                source={"tool": "openai-chat", **({"record": extra} if extra else {})},
            )
        )
    return conversations
