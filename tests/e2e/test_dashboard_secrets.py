"""A secret in a transcript, in a real Chromium: the session page shows it masked, says
how many there are, reveals them when asked (and masks them again), and a live append
holding one arrives masked too."""

from __future__ import annotations

import httpx
from playwright.sync_api import Page, expect

from ..conftest import Daemon, assistant, user, wait_until
from .dashboard import ROOT, browser, page, post, ready

__all__ = ["browser", "page"]  # fixtures

# Made up, and cut in two so this file holds nothing shaped like a secret itself.
TOKEN = "ghp_" + "AIxNKu8iS2G8NPRV" + "dD53X83RZJzzzzgEOzdm"
KEY = "sk_live_" + "q4i9DoV8gz4F" + "kQ1okTBGzvAm"


def test_a_session_shows_its_secrets_masked_until_revealed(page: Page, daemon: Daemon) -> None:
    sid = post(daemon, "/v1/sessions", {"repo_root": ROOT})["id"]
    post(daemon, f"/v1/sessions/{sid}/events", [user(f"use {TOKEN} to push"), assistant("Pushed.")])
    wait_until(lambda: httpx.get(f"{daemon.url}/v1/sessions/{sid}").json()["secrets"] == 1)
    page.goto(f"{daemon.url}/#/session/{sid}")
    ready(page, f"/session/{sid}")
    events = page.locator("#events")
    expect(events).to_contain_text("[redacted: github-token]")
    assert TOKEN not in page.content()
    expect(page.locator("#session-story")).to_contain_text("Secrets")
    notice = page.locator("#secrets-notice")
    expect(notice).to_contain_text("1 secret in this session, shown masked")

    post(daemon, f"/v1/sessions/{sid}/events", [user(f"and the key {KEY}")])  # live
    expect(events).to_contain_text("[redacted: stripe-key]")
    assert KEY not in page.content()

    notice.get_by_role("button", name="Reveal secrets").click()
    ready(page, f"/session/{sid}")
    expect(page.locator("#events")).to_contain_text(TOKEN)
    expect(page.locator("#events")).to_contain_text(KEY)
    page.locator("#secrets-notice").get_by_role("button", name="Mask secrets").click()
    ready(page, f"/session/{sid}")
    expect(page.locator("#events")).to_contain_text("[redacted: github-token]")
    assert TOKEN not in page.content()
