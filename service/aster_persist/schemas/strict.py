"""Strict JSON: every key once in its object, at most ``MAX_DEPTH`` levels deep.

Every route that takes a JSON body reads it through these rules, so they hold on all of
them alike: the framework's routes through ``api/body.py``'s ``StrictRoute``, the fast
path and the routes that read their body by hand through ``check`` and ``loads``, and
every import (HTTP, the command line, a followed folder) as its reader parses each line
(``check_line``) or a whole document (``check_document``). A body that breaks a rule is refused before anything is done with
it: 422 ``validation_failed``, the rule in ``errors[].type`` (``duplicate_key``, naming
the key where it repeats; ``too_deep``; ``extra_forbidden`` for a field a closed body
does not have, as the framework names it).

``MAX_DEPTH`` is 128 levels of arrays and objects. Whatever the service stores is at
most that deep plus what it wraps around a request's values (an import keeps a source
record three levels inside its event), and whatever it answers is at most two levels
deeper again (a page of events): well inside the 254 levels its JSON writer serialises
and the 200 that pydantic-based readers parse.

Neither JSON parser in use reports a repeated key (the last one silently wins), so
finding one costs a second look at the body, kept cheap for the form nearly every
client sends. A body in compact form (as orjson, ``JSON.stringify`` and httpx write
it) is serialised again from the parsed value and compared byte for byte: equal bytes
are a value whose keys are unique, and serialising it inside ``254 - MAX_DEPTH``
levels of arrays bounds its depth. Any other spelling (spaces, escapes, another order)
is parsed once more by the standard library's C decoder, which sees every pair.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import orjson

from .numbers import fits

if TYPE_CHECKING:
    from ..errors import ValidationFailed

MAX_DEPTH = 128
_WRITER_DEPTH = 254  # orjson.dumps refuses values nested deeper (a test pins it)
_SPARE = _WRITER_DEPTH - MAX_DEPTH
_SPACE = re.compile(r"[ \t\r\n]*")

Path = tuple[str | int, ...]
Loc = Callable[[Path], str]


def body_loc(path: Path) -> str:
    """A place in a body as the framework names it (``body.tags.0``)."""
    return ".".join(["body", *(str(part) for part in path)])


def refuse(loc: str, msg: str, kind: str) -> ValidationFailed:
    """The server's 422 for a body that breaks a rule (loaded when one is refused, so
    loading these rules loads no server module)."""
    from ..errors import ValidationFailed

    return ValidationFailed(f"{loc}: {msg}", errors=[{"loc": loc, "msg": msg, "type": kind}])


def refuse_unknown(names: Iterable[str], loc: Loc = body_loc) -> None:
    """Refuse the fields a closed body does not have, naming each one."""
    errors = [
        {"loc": loc((name,)), "msg": "Extra inputs are not permitted", "type": "extra_forbidden"}
        for name in sorted(names)
    ]
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        from ..errors import ValidationFailed

        raise ValidationFailed(f"{errors[0]['loc']}: {errors[0]['msg']}{more}", errors=errors)


def _too_deep(loc: Loc) -> ValidationFailed:
    return refuse(loc(()), f"nested more than {MAX_DEPTH} levels deep", "too_deep")


# The value being checked sits at the bottom of these nested arrays while it is
# serialised. The slot is shared: were two threads to race on it, a body could only be
# compared with the other's value, fail to match and be parsed again, never pass wrongly.
_NEST: list[Any] = [None]
_SLOT = _NEST
for _ in range(_SPARE - 1):
    _SLOT[0] = [None]
    _SLOT = _SLOT[0]


def _compact(raw: bytes, value: Any) -> bool:
    """Whether ``raw`` is exactly orjson's serialisation of ``value``, which then repeats
    no key and is at most ``MAX_DEPTH`` deep."""
    text = raw.strip(b" \t\r\n")
    if len(text) <= 2 * MAX_DEPTH:  # too short to nest any deeper
        return _dumps(value) == text
    _SLOT[0] = value
    out = _dumps(_NEST)
    _SLOT[0] = None
    return len(out) == len(text) + 2 * _SPARE and out.startswith(text, _SPARE)


def _dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        return b""


def check(raw: bytes, value: Any, loc: Loc = body_loc) -> None:
    """Refuse ``raw`` (which orjson parsed into ``value``) if it repeats a key, nests
    deeper than ``MAX_DEPTH``, or holds an integer beyond 64 bits (which orjson reads as
    a float: the line written would not say what was sent)."""
    if not _compact(raw, value):
        with contextlib.suppress(ValueError):  # (not JSON to this decoder: orjson's verdict)
            loads(raw, loc, whole=_in_64_bits(loc))


def _in_64_bits(loc: Loc) -> Callable[[str], int]:
    def whole(text: str) -> int:
        number = int(text)
        if not fits(number):
            raise refuse(loc(()), f"the integer {text[:40]} does not fit in 64 bits", "int_too_big")
        return number

    return whole


def loads(raw: bytes | str, loc: Loc = body_loc, whole: Callable[[str], int] | None = None) -> Any:
    """Parse with the standard library's decoder (as the framework does), refusing a
    repeated key or a body nested too deeply; a body that is not JSON raises ValueError.
    (``whole`` reads each integer.)"""
    pairs = _Pairs()
    try:
        value = json.loads(raw, object_pairs_hook=pairs, parse_int=whole)
    except RecursionError:
        raise _too_deep(loc) from None
    pairs.refuse(value, loc)
    return value


def check_document(raw: bytes, first_line: int = 1) -> None:
    """Refuse a file of JSON values (one document, or one value a line) in which a value
    repeats a key or nests too deeply. Whatever is not JSON is left to its reader."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return
    pairs = _Pairs()
    decoder = json.JSONDecoder(object_pairs_hook=pairs)
    pos, line = 0, first_line
    while True:
        space = _SPACE.match(text, pos)
        start = space.end() if space else pos
        if start == len(text):
            return
        line += text.count("\n", pos, start)
        try:
            value, pos = decoder.raw_decode(text, start)
        except RecursionError:
            raise _too_deep(_on_line(line)) from None
        except ValueError:
            return
        pairs.refuse(value, _on_line(line))
        line += text.count("\n", start, pos)


def check_line(line: bytes, value: Any, number: int) -> None:
    """``check_document`` of one line of a JSON Lines file, which orjson parsed into
    ``value``: a line as orjson writes it repeats no key, so only the others are read
    again."""
    if not _compact(line, value):
        check_document(line, number)


def _on_line(line: int) -> Loc:
    """A place in the value that starts on ``line`` (``line 3: messages[0].role``)."""
    return lambda path: (
        f"line {line}: {brackets(path).removeprefix('.')}" if path else f"line {line}"
    )


def brackets(path: Path) -> str:
    """A place in a value as an event's fields are named (``[0].tool_calls[0].id``)."""
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path)


class _Pairs:
    """An ``object_pairs_hook`` that builds each object and keeps the first one in which
    a key repeats (the decoder calls it as each object closes)."""

    def __init__(self) -> None:
        self.found: tuple[dict[str, Any], str] | None = None

    def __call__(self, items: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(items)
        if len(obj) != len(items) and self.found is None:
            self.found = (obj, _repeated(items))
        return obj

    def refuse(self, value: Any, loc: Loc) -> None:
        """Refuse ``value`` (just decoded) if a key repeated in it or it is too deep."""
        if self.found is not None:
            obj, key = self.found
            where = loc((*_path_to(value, obj), key))
            msg = f"the key {key!r} appears more than once in one object"
            raise refuse(where, msg, "duplicate_key")
        if _nests_too_deep(value):
            raise _too_deep(loc)


def _repeated(items: list[tuple[str, Any]]) -> str:
    seen: set[str] = set()
    for key, _ in items:
        if key in seen:
            return key
        seen.add(key)
    return ""


def _nests_too_deep(value: Any) -> bool:
    """Whether ``value`` is deeper than ``MAX_DEPTH``: serialised inside the spare arrays
    if orjson can write it (an integer past 64 bits it cannot), else walked."""
    _SLOT[0] = value
    written = _dumps(_NEST)
    _SLOT[0] = None
    return not written and _deeper_than_max(value)


def _deeper_than_max(value: Any) -> bool:
    level = [value] if isinstance(value, dict | list) else []
    for _ in range(MAX_DEPTH):
        level = [
            child
            for node in level
            for child in (node.values() if isinstance(node, dict) else node)
            if isinstance(child, dict | list)
        ]
        if not level:
            return False
    return True


def _path_to(root: Any, target: dict[str, Any]) -> Path:
    """Where ``target`` is inside ``root``: the keys and indexes leading to it."""
    stack: list[tuple[Any, Path]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        if node is target:
            return path
        children = node.items() if isinstance(node, dict) else enumerate(node)
        stack.extend(
            (child, (*path, part)) for part, child in children if isinstance(child, dict | list)
        )
    return ()
