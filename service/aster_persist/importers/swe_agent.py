"""``swe-agent``: SWE-agent trajectories, ``<run>/<instance>/<instance>.traj``.

One JSON document per run: ``history`` (the chat messages the model was sent and gave,
roles system, user, assistant and tool), ``trajectory`` (one step per action:
response, thought, action, observation, state, time taken…), ``info`` (exit status,
submission, model stats…) and, in newer runs, ``environment`` and ``replay_config``.
A file may also hold several trajectories (a JSON array, or one per line). The reader
guarantees:

- each history message becomes a message event, its ``null`` fields left out and the
  fields this store does not know (``agent``, ``message_type``, ``thought``,
  ``action``, ``is_demo``, ``tags``…) kept on it as written (a ``type`` of its own
  under ``x_source``);
- an assistant's ``tool_calls`` stay OpenAI tool calls; a ``tool`` message answers by
  ``tool_call_ids`` (a list), so it takes the first of them as its ``tool_call_id``
  (the list stays on it); older runs have no tool calls, their actions in the text;
- a content of parts its role may not send (an image in a tool or system message, say)
  becomes their text, the parts kept under ``x_source.content``; a role this store has
  not becomes ``system``, the original kept as ``x_role``;
- each trajectory step stays whole under ``x_source.step`` of the assistant message it
  was (the same response or thought, in order); a step with no message in the history
  (a run's final ``submit`` is often missing) travels under ``x_source.records``;
- the document's other fields (``info``, ``environment``, ``replay_config``…) stay
  under the session's ``source.record``; the model and the title (the problem
  statement's id) come from ``replay_config``, the working folder from the first
  step's ``state``.

A trajectory has no times, so none are made up. The fingerprint is the trajectory's
object, its keys sorted, so the same run becomes the same session however it is written.
"""

from __future__ import annotations

from typing import Any

import orjson

from .reader import Conversation, Format, Head, ImportProblem
from .records import Events, documents, fingerprint

NAME = "swe-agent"

_ROLES = ("user", "assistant", "tool", "system")
# The content parts each role may send back (a user's: any); others become their text.
_PARTS = {"assistant": ("text", "refusal"), "system": ("text",), "tool": ("text",)}


def detects(head: Head) -> bool:
    """The file's object (line 1, or the whole document) holds a ``history`` list, and no
    chat ``messages`` (or tau-bench ``traj``) of OpenAI chat's."""
    found = head.first or head.top
    return isinstance(found.get("history"), list) and not {"messages", "traj"} & found.keys()


def read(data: bytes) -> list[Conversation]:
    """One conversation per trajectory, in the order of the file."""
    records = documents(data)
    if not records:
        raise ImportProblem("the file holds no trajectory")
    conversations = []
    for number, record in enumerate(records, 1):
        where = "" if len(records) == 1 else f"trajectory {number}: "
        history = record.get("history") if isinstance(record, dict) else None
        if not isinstance(history, list):
            raise ImportProblem(f"{where}expected an object with a 'history' list of messages")
        steps = record.get("trajectory") or []
        if not isinstance(steps, list):
            raise ImportProblem(f"{where}'trajectory' is not a list of steps")
        out = Events()
        for index, message in enumerate(history):
            out.add(_event(message, f"{where}history[{index}]", out.events))
        _place_steps(out, steps)
        extra = {k: v for k, v in record.items() if k not in ("history", "trajectory")}
        config = _config(record.get("replay_config"))
        conversations.append(
            Conversation(
                fingerprint=fingerprint(NAME, orjson.dumps(record, option=orjson.OPT_SORT_KEYS)),
                events=out.done(),
                cwd=_working_dir(steps),
                model=_text_at(config, "agent", "model", "name"),
                title=_text_at(config, "problem_statement", "id"),
                source={"tool": NAME, **({"record": extra} if extra else {})},
            )
        )
    return conversations


def _event(message: Any, where: str, before: list[dict[str, Any]]) -> dict[str, Any]:
    """A history message as an event of this store."""
    if not isinstance(message, dict) or not isinstance(message.get("role"), str):
        raise ImportProblem(f"{where}: expected a message object with a role")
    role = message["role"]
    event: dict[str, Any] = {
        "type": "message",
        **{k: v for k, v in message.items() if v is not None and k != "type"},
        "role": role if role in _ROLES else "system",
    }
    if role not in _ROLES:
        event["x_role"] = role
    if "type" in message:  # not this store's event type: kept aside
        event["x_source"] = {"type": message["type"]}
    content = message.get("content")
    if content is not None and not isinstance(content, str | list):
        raise ImportProblem(f"{where}: content is neither a string nor a list of parts")
    allowed = _PARTS.get(event["role"])
    if (
        isinstance(content, list)
        and allowed is not None
        and not all(isinstance(p, dict) and p.get("type") in allowed for p in content)
    ):
        event.setdefault("x_source", {})["content"] = content
        content = "\n".join(str(p["text"]) for p in content if isinstance(p, dict) and "text" in p)
    if event["role"] == "assistant":
        calls = message.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            raise ImportProblem(f"{where}: tool_calls is not a list")
        if calls:
            event["tool_calls"] = [
                _call(c, f"{where}.tool_calls[{n}]") for n, c in enumerate(calls)
            ]
        event["content"] = content if content is not None or calls else ""
        return event
    event["content"] = "" if content is None else content
    if event["role"] == "tool":
        ids = message.get("tool_call_ids")
        if ids is not None and not isinstance(ids, list):
            raise ImportProblem(f"{where}: tool_call_ids is not a list")
        answered = ids[0] if ids else message.get("tool_call_id") or _last_call(before)
        event["tool_call_id"] = str(answered or "unknown")
    return event


def _call(call: Any, where: str) -> dict[str, Any]:
    """An assistant's tool call, in the shape of the OpenAI API (what litellm wrote)."""
    if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
        raise ImportProblem(f"{where}: expected a tool call with a function")
    function = call["function"]
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        arguments = orjson.dumps(arguments if arguments is not None else {}).decode()
    return {
        **call,
        "id": str(call.get("id") or "unknown"),
        "type": "function",
        "function": {**function, "name": str(function.get("name") or ""), "arguments": arguments},
    }


def _last_call(events: list[dict[str, Any]]) -> str | None:
    """The id of the latest tool call, for a tool message that names none."""
    for event in reversed(events):
        if event.get("tool_calls"):
            return str(event["tool_calls"][0]["id"])
    return None


def _place_steps(out: Events, steps: list[Any]) -> None:
    """Each step on the assistant message it was; the others kept as records."""
    turns = [e for e in out.events if e["role"] == "assistant" and not e.get("is_demo")]
    start = 0
    for step in steps:
        found = None
        if isinstance(step, dict):
            found = next((n for n in range(start, len(turns)) if _is_step_of(step, turns[n])), None)
        if found is None:
            out.keep(step)
            continue
        turns[found].setdefault("x_source", {})["step"] = step
        start = found + 1


def _is_step_of(step: dict[str, Any], turn: dict[str, Any]) -> bool:
    response, thought = step.get("response"), step.get("thought")
    return (response is not None and response == turn.get("content")) or (
        bool(thought) and thought == turn.get("thought")
    )


def _config(value: Any) -> dict[str, Any]:
    """The run's configuration: an object, or (in some versions) its JSON as a string."""
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            return {}
    return value if isinstance(value, dict) else {}


def _working_dir(steps: list[Any]) -> str | None:
    """The folder the agent worked in, from the first step's state (an object, or its
    JSON as a string in older runs)."""
    for step in steps:
        if isinstance(step, dict):
            return _text_at(_config(step.get("state")), "working_dir")
    return None


def _text_at(value: Any, *keys: str) -> str | None:
    """The text at ``keys`` in nested objects, if there is some."""
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, str) and value else None


FORMAT = Format(NAME, "SWE-agent trajectories (.traj)", detects, read)
