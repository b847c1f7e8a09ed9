"""``codex``: OpenAI Codex CLI rollouts, ``~/.codex/sessions/**/rollout-*.jsonl``.

One JSON record per line, each ``{timestamp, type, payload}``: ``session_meta``,
``turn_context``, ``response_item`` and ``event_msg``. The reader guarantees:

- the first ``session_meta`` is the header: its time (else the first event's), its
  working folder, and its ``id``, ``cli_version``, ``originator`` and
  ``model_provider`` under the session's source (``forked_from_id`` as
  ``forked_from``); the model is the first ``turn_context``'s. A later one is a forked
  rollout's copy of its parent's (a fork replays its parent's records after its own
  header), carried like any other record;
- ``message`` items become messages (a role this store does not know becomes
  ``system``, the original kept as ``x_role``);
- ``function_call`` / ``custom_tool_call`` items and their outputs become assistant
  messages with tool calls and ``tool`` messages linked by ``call_id``; calls made
  together (no message or output between them) are one assistant turn;
- reasoning (often encrypted), web searches, turn contexts and events (token counts,
  command ends, agent messages…) ride along under ``x_source.records``;
- each assistant turn keeps the model of its turn context and the tokens of the model
  calls counted after it (``token_count``'s ``last_token_usage``, added up); a tool
  result whose command exited non-zero or whose patch failed is ``is_error``; the
  session keeps the git branch ``session_meta`` names.

A rollout is known by its source, the ``session_meta`` id, else by its bytes, so the
same rollout always becomes the same session.
"""

from __future__ import annotations

from typing import Any

import orjson

from .reader import Conversation, Format, Head
from .records import Events, message
from .times import timestamp

NAME = "codex"

_RECORD_TYPES = ("session_meta", "response_item", "event_msg", "turn_context")
_ROLES = ("user", "assistant", "system")


def detects(head: Head) -> bool:
    """Line 1 is one of a rollout's record types."""
    return head.first.get("type") in _RECORD_TYPES


class Reader:
    """A rollout read one record at a time (``importers.lines`` drives it)."""

    def __init__(self) -> None:
        self.out = Events()
        self.meta: dict[str, Any] = {}
        self.model: Any = None
        self.turn_model: Any = None
        self.failed: set[str] = set()  # calls whose command or patch failed
        self.totals: list[Any] = [None]  # the running total last counted (a repeat adds nothing)

    def feed(self, record: dict[str, Any]) -> None:
        out = self.out
        kind = record.get("type")
        raw = record.get("payload")
        payload: dict[str, Any] = raw if isinstance(raw, dict) else {}
        ts = timestamp(record.get("timestamp"))
        item = payload.get("type")
        if kind == "session_meta":
            if not self.meta:
                self.meta = payload  # the rollout's own: the first
                return
            # a fork's (or a sub-agent's) rollout replays its parent's, header and all:
            # a later header is the parent's, carried like any record, never the identity
            out.keep(record)
            return
        if kind == "turn_context":
            self.turn_model = payload.get("model") or self.turn_model
            self.model = self.model or self.turn_model
            out.keep(record)
            return
        if kind != "response_item":
            _note_event(out, payload, self.failed, self.totals)
            out.keep(record)  # event_msg: token counts, command ends, agent messages…
            return
        if item == "message":
            role = payload.get("role")
            text = "\n".join(
                str(part.get("text", ""))
                for part in payload.get("content") or []
                if isinstance(part, dict)
            )
            event = out.add(message(role, text, ts, _ROLES))
            if role == "assistant" and self.turn_model:
                event["model"] = self.turn_model
        elif item in ("function_call", "custom_tool_call"):
            _add_call(out, payload, item, ts, self.turn_model)
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

    def settle(self, events: list[dict[str, Any]]) -> None:
        """Events no later record can change: a result whose command failed says so."""
        for event in events:
            if event.get("role") == "tool" and event.get("tool_call_id") in self.failed:
                event["is_error"] = True

    def keys(self, events: list[dict[str, Any]]) -> list[str | None] | None:
        return None  # keyed by the source, when it names itself

    def runs(self, events: list[dict[str, Any]]) -> list[int] | None:
        return None  # each record its own

    def conversation(self) -> tuple[Conversation, str | None]:
        """What the records said of the whole (no events), and the source's own id."""
        meta = self.meta
        forked = meta.get("forked_from_id")
        git = meta.get("git")
        branch = git.get("branch") if isinstance(git, dict) else None
        conversation = Conversation(
            fingerprint="",
            events=[],
            created_at=timestamp(meta.get("timestamp")) or self.out.first_ts,
            cwd=meta.get("cwd"),
            model=self.model,
            source={
                "tool": NAME,
                **{
                    k: meta[k]
                    for k in ("id", "cli_version", "originator", "model_provider")
                    if k in meta
                },
                # the rollout this one was forked from, which its start replays
                **({"forked_from": forked} if isinstance(forked, str) and forked else {}),
                **({"git_branch": branch} if isinstance(branch, str) and branch else {}),
            },
        )
        own = meta.get("id")
        return conversation, own if isinstance(own, str) and own else None


def _note_event(out: Events, payload: dict[str, Any], failed: set[str], totals: list[Any]) -> None:
    """What an ``event_msg`` tells of the turns before it: the tokens of the model call
    just made (on the last assistant turn; a count repeated, same running total, is
    counted once), a command or a patch that failed."""
    kind = payload.get("type")
    if kind == "token_count":
        info = payload.get("info")
        last = info.get("last_token_usage") if isinstance(info, dict) else None
        total = info.get("total_token_usage") if isinstance(info, dict) else None
        turn = next((e for e in reversed(out.events) if e.get("role") == "assistant"), None)
        if isinstance(last, dict) and turn is not None and (total is None or total != totals[0]):
            totals[0] = total
            usage = turn.setdefault("usage", {})
            for key in _USAGE_KEYS:
                if type(last.get(key)) is int and last[key] >= 0:
                    usage[key] = usage.get(key, 0) + last[key]
    elif isinstance(payload.get("call_id"), str) and (
        (kind == "exec_command_end" and payload.get("exit_code") not in (0, None))
        or (kind == "patch_apply_end" and payload.get("success") is False)
    ):
        failed.add(payload["call_id"])


_USAGE_KEYS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens")


def _add_call(
    out: Events, payload: dict[str, Any], item: str, ts: str | None, model: str | None
) -> None:
    """A tool call: a turn of its own, or one more on the turn of calls just before it."""
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
            previous.setdefault("x_source", {}).setdefault("records", []).extend(out.pending)
            out.pending = []
        return
    out.add(
        {
            "type": "message",
            "role": "assistant",
            "content": None,
            "tool_calls": [call],
            "ts": ts,
            **({"model": model} if model else {}),
            "x_source": {"type": item},
        }
    )


FORMAT = Format(NAME, "Codex CLI rollouts (~/.codex/sessions)", detects, lines=Reader)
