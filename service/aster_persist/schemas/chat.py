"""Rebuilding chat-completions ``messages`` from a transcript (the seed's to_chat_messages).

Two views, both valid as an OpenAI chat-completions ``messages`` array:

- ``history``: the plain user/assistant conversation a chat UI carries forward. Tool
  results and assistant turns that hold only tool calls are left out; an assistant turn
  with text keeps its text and drops its calls.
- ``context``: what the model effectively saw: every message after the latest summary,
  tool calls and results included (calls in a row, with no result between, as one
  turn), evicted results replaced by their stubs. Calls with
  no recorded result and results whose call is not in view are left out, so the list is
  always accepted by the API.

Both start with the latest summary that folds turns, if any, as a leading user turn.
Turns of a sub-agent (``x_sidechain``, from an import) are in neither, nor are the
events a retraction took back.
"""

from __future__ import annotations

from typing import Any

from .rendering import unretracted

_OPENAI_KEYS = ("role", "content", "name", "tool_calls", "tool_call_id")
SUMMARY_PREFIX = "Summary of the earlier conversation"
EVICTED_STUB = "[tool result evicted from the context]"


def _summary_turn(summary: dict[str, Any]) -> dict[str, Any]:
    through = summary.get("through_seq", 0)
    return {
        "role": "user",
        "content": f"{SUMMARY_PREFIX} (turns 1 to {through}):\n\n{summary.get('content', '')}",
    }


def _clean(line: dict[str, Any]) -> dict[str, Any]:
    return {key: line[key] for key in _OPENAI_KEYS if key in line and line[key] is not None}


def _has_text(content: Any) -> bool:
    if isinstance(content, str):
        return bool(content.strip())
    if isinstance(content, list):
        return len(content) > 0
    return False


def _after_summary(
    lines: list[dict[str, Any]],
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    summary = None
    lines = unretracted(lines)
    for line in lines:
        through = line.get("through_seq")
        if (
            line.get("type") == "summary"
            and isinstance(through, int)
            and through > 0  # a summary that folds no turn is a label, not a compaction
            and not line.get("x_sidechain")
        ):
            summary = line
    # A sub-agent's turns (imported sidechains) are kept in the transcript, but they are
    # not the conversation the main agent had.
    messages = [
        line for line in lines if line.get("type") == "message" and not line.get("x_sidechain")
    ]
    if summary is not None:
        through = summary.get("through_seq", 0)
        messages = [m for m in messages if isinstance(m.get("seq"), int) and m["seq"] > through]
    return summary, messages


def to_chat_messages(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``history`` view."""
    summary, messages = _after_summary(lines)
    out = [_summary_turn(summary)] if summary is not None else []
    for message in messages:
        role = message.get("role")
        if role not in ("user", "assistant"):
            continue
        if role == "assistant" and not _has_text(message.get("content")):
            continue
        turn = _clean(message)
        turn.pop("tool_calls", None)
        turn.pop("tool_call_id", None)
        out.append(turn)
    return out


def to_context_messages(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``context`` view."""
    summary, messages = _after_summary(lines)
    lines = unretracted(lines)
    stubs_by_call: dict[str, str] = {}
    stubs_by_seq: dict[int, str] = {}
    for line in lines:
        if line.get("type") == "eviction":
            stub = line.get("stub") or EVICTED_STUB
            if isinstance(line.get("tool_call_id"), str):
                stubs_by_call[line["tool_call_id"]] = stub
            if isinstance(line.get("target_seq"), int):
                stubs_by_seq[line["target_seq"]] = stub
    answered = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
    out = [_summary_turn(summary)] if summary is not None else []
    open_calls: set[str] = set()
    for message in messages:
        role = message.get("role")
        turn = _clean(message)
        if role == "assistant":
            calls = [c for c in turn.get("tool_calls") or [] if c.get("id") in answered]
            last = out[-1] if out else {}
            if calls and not _has_text(turn.get("content")) and last.get("tool_calls"):
                # calls made together but kept one per event (an Agents SDK session, an
                # import): one turn, as the API wants them before their results
                last["tool_calls"] = [*last["tool_calls"], *calls]
                open_calls |= {c["id"] for c in calls}
                continue
            if calls:
                turn["tool_calls"] = calls
                open_calls = {c["id"] for c in calls}
                turn.setdefault("content", None)
            else:
                turn.pop("tool_calls", None)
                open_calls = set()
                if not _has_text(turn.get("content")):
                    continue
            out.append(turn)
        elif role == "tool":
            call_id = turn.get("tool_call_id")
            if call_id not in open_calls:
                continue  # its call is before the summary, or was not recorded
            open_calls.discard(call_id)
            stub = stubs_by_call.get(str(call_id)) or stubs_by_seq.get(message.get("seq", -1))
            if stub is not None:
                turn["content"] = stub
            out.append(turn)
        else:
            open_calls = set()
            out.append(turn)
    return _drop_unanswered(out)


def _drop_unanswered(out: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Remove calls whose results do not directly follow them (the API requires they do)."""
    result: list[dict[str, Any]] = []
    i = 0
    while i < len(out):
        turn = out[i]
        if turn.get("role") == "assistant" and turn.get("tool_calls"):
            j = i + 1
            following = set()
            while j < len(out) and out[j].get("role") == "tool":
                following.add(out[j].get("tool_call_id"))
                j += 1
            calls = [c for c in turn["tool_calls"] if c.get("id") in following]
            turn = dict(turn)
            if calls:
                turn["tool_calls"] = calls
            else:
                turn.pop("tool_calls")
                if not _has_text(turn.get("content")):
                    i = j
                    continue
            result.append(turn)
            kept = {c["id"] for c in calls}
            result.extend(t for t in out[i + 1 : j] if t.get("tool_call_id") in kept)
            i = j
            continue
        if turn.get("role") == "tool":
            i += 1
            continue
        result.append(turn)
        i += 1
    return result
