"""The application's state, typed: what ``create_app`` was given (``Configured``) and
what the lifespan built (``Running``). Routers, the fast path and the operations routes
reach the stores through ``running(request)``, never through ``app.state``'s names."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..learning.learner import Learner
    from ..live.feed import Feed
    from ..live.follow import Following
    from ..services.memory import Memory
    from ..services.sessions import Sessions
    from ..settings import Settings
    from ..storage.home import Home
    from ..storage.journal import Journal


@dataclass(frozen=True)
class Configured:
    """What the application was made with: its settings, its open home, its token."""

    settings: Settings
    home: Home
    token: str | None


@dataclass(frozen=True)
class Running:
    """What the lifespan built, for as long as the application serves."""

    journal: Journal
    sessions: Sessions
    memory: Memory
    feed: Feed
    learner: Learner
    following: Following
    watching: asyncio.Event  # set once the watcher of hand edits is watching


def _state(holder: Any) -> Any:
    """An application's state, from the application or a request to it."""
    app = getattr(holder, "app", holder)
    return app.state


def configured(holder: Any) -> Configured:
    found = _state(holder).configured
    assert isinstance(found, Configured)
    return found


def running(holder: Any) -> Running:
    found = _state(holder).running
    assert isinstance(found, Running)
    return found
