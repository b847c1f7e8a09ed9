"""What the dashboard's tests share: a real headless Chromium (Debian's package, driven
by Playwright), a tab on a real daemon that may talk to that daemon only, and helpers to
wait for a view, take a screenshot (test-artifacts/dashboard/) and write through the API."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from ..conftest import Daemon

FIXTURES = Path(__file__).parent.parent / "fixtures"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "dashboard"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ROOT = "/srv/dashboard"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser, daemon: Daemon) -> Iterator[Page]:
    """A tab on the daemon; at the end, every request it made went to the daemon."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    requests: list[str] = []
    tab.on("request", lambda request: requests.append(request.url))
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    yield tab
    context.close()
    assert requests and all(url.startswith(daemon.url + "/") for url in requests), requests
    assert not errors, errors


def ready(tab: Page, view: str) -> None:
    tab.wait_for_selector(f'body[data-ready="true"][data-view="{view}"]', timeout=15_000)


def shot(tab: Page, name: str) -> None:
    tab.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def fits(tab: Page) -> None:
    """Nothing on the page is wider than the window (no sideways scrolling)."""
    wide = tab.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert wide <= 1, f"the page is {wide} px wider than the window"


def post(daemon: Daemon, path: str, body: Any, **params: Any) -> Any:
    r = httpx.post(f"{daemon.url}{path}", json=body, params=params, timeout=60)
    assert r.status_code in (200, 201), r.text
    return r.json()
