"""Loaded at start by a daemon a crash test runs with this folder on PYTHONPATH.

``ASTER_TEST_KILL="package.module:Class.method:N:when"`` sends the daemon SIGKILL at the
Nth call (from 1) of that method, ``before`` it runs or ``after`` it returns: a real
kill -9 of a real process, at the step a test names rather than at a moment it guesses.
"""

from __future__ import annotations

import functools
import importlib
import os
import signal
from typing import Any

_SPEC = os.environ.get("ASTER_TEST_KILL", "")


def _arm(spec: str) -> None:
    module_name, attribute, count, when = spec.split(":")
    owner_name, _, method_name = attribute.rpartition(".")
    owner: Any = importlib.import_module(module_name)
    for part in owner_name.split(".") if owner_name else []:
        owner = getattr(owner, part)
    real = getattr(owner, method_name)
    calls = {"n": 0}

    @functools.wraps(real)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        last = calls["n"] == int(count)
        if last and when == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        result = real(*args, **kwargs)
        if last and when == "after":
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    setattr(owner, method_name, wrapper)


if _SPEC:
    _arm(_SPEC)
