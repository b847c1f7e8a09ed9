"""Which folders are data homes, and who hears of a link refused in one.

``confine(root)`` opens a home once (its own path may pass through links); from then
on ``within(path)`` says which home a path is below and by which names, and ``refuse``
makes the error for a link found there, telling the home's listeners (the journal) of
each such path once. ``storage/fs.py`` reaches every path below a home through this.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UnsafePath


@dataclass
class _Home:
    root: str
    fd: int
    reported: set[str] = field(default_factory=set)
    listeners: list[Callable[[str], None]] = field(default_factory=list)


_homes: list[_Home] = []
_lock = threading.Lock()


def confine(root: Path) -> None:
    """From now on, reach every path under ``root`` without following a link."""
    text = os.path.abspath(root)
    fd = os.open(text, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    with _lock:
        real = os.path.realpath(text)
        home = _Home(text, fd)
        _homes.append(home)
        if real != text:  # the same home by its real path (what the watcher reports)
            _homes.append(_Home(real, os.dup(fd), home.reported, home.listeners))


def listen(root: Path, listener: Callable[[str], None]) -> None:
    """Tell ``listener`` of each link refused in the home at ``root`` (once a path)."""
    found = within(os.path.abspath(root))
    if found is not None:
        found[0].listeners.append(listener)


def release(root: Path) -> None:
    """Forget a home that is closed."""
    text = os.path.abspath(root)
    real = os.path.realpath(text)
    with _lock:
        for home in [h for h in _homes if h.root in (text, real)]:
            _homes.remove(home)
            os.close(home.fd)


def confined(path: Path | str) -> bool:
    return within(os.fspath(path)) is not None


def within(text: str) -> tuple[_Home, list[str]] | None:
    for home in list(_homes):
        if text == home.root:
            return home, []
        if text.startswith(home.root) and text[len(home.root)] == "/":
            parts = [p for p in text[len(home.root) + 1 :].split("/") if p and p != "."]
            if ".." in parts:
                raise UnsafePath(f"{text[len(home.root) + 1 :]} leads out of the data home")
            return home, parts
    return None


def refuse(path: Path | str) -> UnsafePath:
    """The error for a link at ``path``, told to its home's listeners once per path."""
    found = within(os.fspath(path))
    rel = "/".join(found[1]) if found else os.fspath(path)
    if found is not None:
        home = found[0]
        with _lock:
            first = rel not in home.reported
            home.reported.add(rel)
        if first:
            for listener in list(home.listeners):
                with contextlib.suppress(
                    Exception
                ):  # a listener never turns a refusal into a crash
                    listener(rel)
    return UnsafePath(
        f"{rel} is a symbolic link; the data home never follows one (remove it, or move "
        "what it points to inside the home)"
    )
