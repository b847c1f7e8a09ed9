"""The dashboard says where each session lives: a team's copy is marked with the machine
that owns it, in the list of sessions and on the session's page; a machine's own
sessions carry no mark."""

from __future__ import annotations

from collections.abc import Callable

from playwright.sync_api import Browser, expect

from ..conftest import Daemon, wait_until
from ..e2e.dashboard import browser, ready
from .test_sessions import append, create, events

__all__ = ["browser"]  # fixture


def test_a_copy_is_marked_with_the_machine_it_lives_on(
    machines: Callable[..., Daemon], browser: Browser
) -> None:
    a, b = machines("laptop"), machines("workstation")
    theirs = create(a)
    append(a, theirs, "Written on the laptop.").raise_for_status()
    mine = create(b)
    append(b, mine, "Written here.").raise_for_status()
    wait_until(lambda: events(b, theirs), timeout=5)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    try:
        tab.goto(f"{b.url}/#/sessions")
        ready(tab, "/sessions")
        expect(tab.locator(f'tr[data-id="{theirs}"] .badge', has_text="on laptop")).to_be_visible()
        expect(tab.locator(f'tr[data-id="{mine}"] .badge', has_text="on ")).to_have_count(0)
        tab.goto(f"{b.url}/#/session/{theirs}")
        ready(tab, f"/session/{theirs}")
        expect(tab.locator(".story")).to_contain_text("Lives onlaptop · a read-only copy here")
    finally:
        context.close()
    assert not errors, errors
