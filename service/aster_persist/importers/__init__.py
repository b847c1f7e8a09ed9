"""Transcripts written by other tools, read into sessions of this store.

Each reader turns a file into ``Conversation``s: a header (where, when, which model,
what title) and events in this store's format. Nothing in a source is dropped silently:
records with no equivalent travel under ``x_source`` on the next event (or the last
one), and fields this store does not know stay on the events they came with.

One module per format, each registering a ``Format`` (name, description, detection,
reader); ``REGISTRY`` lists them. The API's ``format`` parameter (and so its OpenAPI
enum) and the CLI's ``--format`` read the names from it; a test holds the README to it:

- ``claude-code`` (``claude_code.py``): ``~/.claude/projects/<slug>/<uuid>.jsonl``;
- ``codex`` (``codex.py``): ``~/.codex/sessions/**/rollout-*.jsonl``;
- ``openai-chat`` (``openai_chat.py``): chat-completions ``messages`` lists;
- ``swe-agent`` (``swe_agent.py``): SWE-agent trajectories, ``*.traj``;
- ``chatgpt`` (``chatgpt.py``): the ChatGPT data export's ``conversations.json``;
- ``native`` (``native.py``): this store's own export.

``read`` finds the format (or takes the one named), reads every conversation and checks
every event against this store's schema before returning any: a file imports whole or
raises ``ImportProblem`` (422) saying why not. A conversation's fingerprint (the format
and the bytes it came from) fixes the id of the session it becomes, so importing the
same source again finds it instead of copying it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, BinaryIO

import orjson

from .. import beneath
from ..errors import Invalid
from . import chatgpt, claude_code, codex, lines, native, openai_chat, swe_agent
from .reader import Conversation, Format, Head, ImportProblem
from .times import fill_times

__all__ = [
    "CHOICES",
    "FORMATS",
    "REGISTRY",
    "Conversation",
    "Format",
    "ImportProblem",
    "detect",
    "detect_file",
    "lines",
    "named",
    "read",
    "read_prefix",
]

REGISTRY: tuple[Format, ...] = (
    native.FORMAT,
    claude_code.FORMAT,
    codex.FORMAT,
    openai_chat.FORMAT,
    swe_agent.FORMAT,
    chatgpt.FORMAT,
)
FORMATS = tuple(f.name for f in REGISTRY)
CHOICES = ("auto", *FORMATS)  # what a caller may name: a format, or "auto" to detect it

# Asked in the registry's order, first yes wins, but OpenAI chat's test and Claude Code's
# last: OpenAI chat takes any one-document file (a .traj or a conversations.json is one
# too), and Claude Code's records are known by a "type" or a "sessionId" that a codex or
# chat record may carry as well.
_LAST = (openai_chat.FORMAT, claude_code.FORMAT)
_DETECTION = (*(f for f in REGISTRY if f not in _LAST), *_LAST)
_BY_NAME = {f.name: f for f in REGISTRY}


SUFFIXES = (".jsonl", ".json", ".traj")  # the names the formats' files have


def files_in(folder: Path) -> list[Path]:
    """Every file below a folder of the user's that a format could read, sorted; no link
    followed, to a folder or to a file."""
    return beneath.files(folder, SUFFIXES)


def named(format: str) -> Format:
    """The format of that name; raise ImportProblem if there is none."""
    if format not in _BY_NAME:
        raise ImportProblem(f"unknown format {format!r}; use one of {', '.join(CHOICES)}")
    return _BY_NAME[format]


def detect_file(handle: BinaryIO, limit: int | None = None) -> str:
    """The format of an open file, from its first line (the whole of it only when it is
    one JSON document)."""
    handle.seek(0)
    first = handle.readline() if limit is None else handle.readline(limit)
    start = first.lstrip()
    if start[:1] == b"{" and first.endswith(b"\n"):
        try:
            orjson.loads(start)
            return detect(first)  # JSON Lines: line 1 tells
        except orjson.JSONDecodeError:
            pass
    if start and start[:1] not in b"[{":
        return detect(start)  # says it is neither
    return detect(read_prefix(handle, limit))  # one document (or blank lines first)


def read_prefix(handle: BinaryIO, limit: int | None = None) -> bytes:
    """An open file's bytes from its start, up to ``limit``."""
    handle.seek(0)
    return handle.read() if limit is None else handle.read(limit)


def detect(data: bytes) -> str:
    """The format of a file, from its content."""
    start = data.lstrip()
    if start[:1] == b"[":
        head = Head(first={}, document=True, top=_top(data))
    elif start[:1] != b"{":
        raise ImportProblem("expected JSON or JSON Lines; the file starts with neither")
    else:
        try:
            first = orjson.loads(start.split(b"\n", 1)[0])
        except orjson.JSONDecodeError:
            first = None  # one JSON document over several lines
        if first is not None and not isinstance(first, dict):
            raise ImportProblem("line 1: expected a JSON object")
        head = Head(
            first=first or {}, document=first is None, top=_top(data) if first is None else {}
        )
    for candidate in _DETECTION:
        if candidate.detects(head):
            return candidate.name
    raise ImportProblem(
        f"line 1: not a format this service reads ({', '.join(FORMATS)}); "
        "name it with ?format= if it is one of them"
    )


def _top(data: bytes) -> dict[str, Any]:
    """A one-document file's object, or its array's first item if that is an object."""
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError:
        return {}
    if isinstance(document, list):
        document = document[0] if document else None
    return document if isinstance(document, dict) else {}


def read(
    data: bytes, format: str = "auto", modified_at: str | None = None
) -> tuple[str, list[Conversation]]:
    """The format and the conversations of a file; raise ImportProblem saying why not.
    A file without times of its own is dated ``modified_at`` (its modification time)."""
    # Loaded here, not at import: the CLI reads the registry and stays a client.
    from ..schemas.validation import validate_events

    if format == "auto":
        format = detect(data)
    if format not in _BY_NAME:
        raise ImportProblem(f"unknown format {format!r}; use one of {', '.join(CHOICES)}")
    form = _BY_NAME[format]
    if form.lines is not None:
        conversations = lines.read_whole(form, data)
    else:
        assert form.read is not None
        conversations = form.read(data)
    for conversation in conversations:
        conversation.created_at = conversation.created_at or modified_at
        fill_times(conversation.events, conversation.created_at)
        if conversation.events and not any(e.get("ts") for e in conversation.events):
            conversation.source["undated"] = True  # its times will be the import's
        try:
            conversation.events = validate_events(conversation.events)
        except Invalid as exc:
            raise ImportProblem(
                f"the {format} file gives an event this store refuses: {exc.detail}"
            ) from None
    return format, conversations
