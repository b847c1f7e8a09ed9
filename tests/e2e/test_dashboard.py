"""The dashboard in a real headless Chromium (Debian's package, driven by Playwright):
a transcript with its tool calls, live appends (across a daemon restart), memory edits
in the feed, a 412 conflict, search landing on the turn, token auth; every ES module it
imports served as JavaScript under the same policy, and no console error in any view.
Screenshots of each page go to test-artifacts/dashboard/. The page may talk to the daemon
only."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import httpx
import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, Response, expect, sync_playwright

from ..conftest import Daemon, assistant, call, tool, user

FIXTURES = Path(__file__).parent.parent / "fixtures"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "dashboard"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ROOT = "/srv/dashboard"
MODULE_SCRIPT = re.compile(r'<script type="module" src="([^"]+)"')
IMPORT = re.compile(
    r'^(?:import|export)\s(?:[^;"\']*\sfrom\s)?\s*["\']([^"\']+)["\']', re.MULTILINE
)


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


def post(daemon: Daemon, path: str, body: Any, **params: Any) -> Any:
    r = httpx.post(f"{daemon.url}{path}", json=body, params=params, timeout=60)
    assert r.status_code in (200, 201), r.text
    return r.json()


def test_a_transcript_with_tool_calls_follows_appends_across_a_restart(
    page: Page, daemon: Daemon
) -> None:
    data = (FIXTURES / "claude-code" / "spotter" / "tool_heavy.jsonl").read_bytes()
    imported = httpx.post(
        f"{daemon.url}/v1/sessions/import", content=data, params={"repo_root": ROOT}
    ).json()
    sid = imported["sessions"][0]["id"]
    page.goto(f"{daemon.url}/#/")
    ready(page, "/")
    expect(page.get_by_role("link", name=ROOT)).to_be_visible()
    shot(page, "projects")
    page.get_by_role("link", name=ROOT).click()
    ready(page, "/project")
    shot(page, "sessions")
    page.locator(f'tr[data-id="{sid}"] a').click()
    ready(page, f"/session/{sid}")
    calls = page.locator(".tool-call")
    assert calls.count() >= 5
    expect(calls.first.locator("pre.args")).not_to_be_empty()
    assert page.locator(".turn.tool").count() >= 5
    shot(page, "session")

    post(daemon, f"/v1/sessions/{sid}/events", user("a turn appended while watching"))
    expect(page.get_by_text("a turn appended while watching")).to_be_visible(timeout=10_000)

    daemon.stop()  # the daemon restarts; the page is not reloaded
    daemon.start()
    post(daemon, f"/v1/sessions/{sid}/events", assistant("and one after the restart"))
    expect(page.get_by_text("and one after the restart")).to_be_visible(timeout=15_000)
    expect(page.locator("#live")).to_have_text("live", timeout=15_000)


def test_thinking_is_folded_and_a_taken_back_turn_is_struck_through(
    page: Page, daemon: Daemon
) -> None:
    sid = post(daemon, "/v1/sessions", {"repo_root": ROOT})["id"]
    turns = [
        user("first question"),
        {"type": "reasoning", "content": "weighing the two answers"},
        assistant("an answer to take back"),
        {"type": "retraction", "target_seq": 3, "reason": "popped by the agent"},
        user("a question asked live"),
    ]
    post(daemon, f"/v1/sessions/{sid}/events", turns[:4])
    page.goto(f"{daemon.url}/#/session/{sid}")
    ready(page, f"/session/{sid}")
    thinking = page.locator(".turn.reasoning details")
    expect(thinking).not_to_have_attribute("open", "")
    expect(thinking.locator("summary")).to_contain_text("thinking (24 characters)")
    expect(page.locator("#turn-3")).to_have_class(re.compile(r"\bretracted\b"))
    expect(page.locator("#turn-4")).to_contain_text("took back #3: popped by the agent")
    expect(page.locator("#turn-1")).not_to_have_class(re.compile(r"\bretracted\b"))

    post(daemon, f"/v1/sessions/{sid}/events", turns[4])
    post(daemon, f"/v1/sessions/{sid}/events", {"type": "retraction", "target_seq": 5})
    expect(page.locator("#turn-5")).to_have_class(re.compile(r"\bretracted\b"), timeout=10_000)
    shot(page, "session-retracted")


def test_memory_edits_reach_the_feed_and_conflicts_say_so(
    page: Page, browser: Browser, daemon: Daemon
) -> None:
    post(daemon, "/v1/memory/blocks", {"name": "style", "content": "Use tabs."}, repo_root=ROOT)
    post(daemon, "/v1/sessions", {"repo_root": ROOT})
    watcher = browser.new_page()  # a second tab shows the journal, live
    watcher.goto(f"{daemon.url}/#/journal")
    ready(watcher, "/journal")

    page.goto(f"{daemon.url}/#/memory?repo_root={ROOT}")
    ready(page, "/memory")
    expect(page.locator("#memory-context")).to_contain_text("style")
    block = page.locator("#block-style")
    block.get_by_role("button", name="Edit").click()
    editor = block.locator("textarea.block-editor")
    editor.fill(editor.input_value().replace("Use tabs.", "Use tabs, width 4."))
    block.get_by_role("button", name="Save block").click()
    expect(page.locator("#notice")).to_have_text("Saved style.")
    item = watcher.locator('#journal-list li[data-op="memory.edit"]')
    expect(item.first).to_contain_text("style", timeout=10_000)
    shot(watcher, "journal")

    page.locator("#block-style").get_by_role("button", name="Edit").click()
    editor = page.locator("#block-style textarea.block-editor")
    editor.fill(editor.input_value().replace("width 4", "width 8"))
    changed = httpx.put(  # someone else saves first
        f"{daemon.url}/v1/memory/blocks/style",
        params={"repo_root": ROOT},
        content="---\ndescription: style\n---\nUse spaces.\n",
        headers={"Content-Type": "text/markdown"},
    )
    assert changed.status_code == 200
    page.locator("#block-style").get_by_role("button", name="Save block").click()
    conflict = page.locator("#block-style .conflict")
    expect(conflict).to_contain_text("changed since you opened it")
    expect(conflict).to_contain_text("Use spaces.")
    shot(page, "memory-conflict")
    conflict.get_by_role("button", name="Load the newer version").click()
    assert "Use spaces." in page.locator("#block-style textarea.block-editor").input_value()
    watcher.close()


def test_search_lands_on_the_turn(page: Page, daemon: Daemon) -> None:
    sid = post(daemon, "/v1/sessions", {"repo_root": ROOT, "title": "Websocket flake"})["id"]
    post(
        daemon,
        f"/v1/sessions/{sid}/events",
        [
            user("why does the websocket test flake?"),
            assistant(calls=[call("c1", "run", '{"cmd": "pytest -k websocket"}')]),
            tool("c1", "1 failed: the heartbeat arrived after the zebra deadline"),
            assistant("The zebra deadline is too short."),
        ],
    )
    page.goto(f"{daemon.url}/")
    ready(page, "/")
    page.fill("#search-box", "zebra deadline")
    page.keyboard.press("Enter")
    ready(page, "/search")
    hits = page.locator("#search-results li")
    expect(hits.first.locator("mark").first).to_be_visible()
    shot(page, "search")
    page.locator("#search-results a.hit").first.click()
    ready(page, f"/session/{sid}")
    target = page.locator(".turn.target")
    expect(target).to_be_visible()
    expect(target).to_contain_text("zebra deadline")
    expect(target).to_be_focused()


def test_2000_events_render_and_the_time_is_reported(page: Page, daemon: Daemon) -> None:
    sid = post(daemon, "/v1/sessions", {"repo_root": ROOT, "title": "Long"})["id"]
    for start in range(0, 2000, 500):
        batch = [
            user(f"question {n}") if n % 2 == 0 else assistant(f"answer {n}")
            for n in range(start, start + 500)
        ]
        post(daemon, f"/v1/sessions/{sid}/events", batch)
    page.goto(f"{daemon.url}/#/session/{sid}")
    ready(page, f"/session/{sid}")
    assert page.locator("#events .turn").count() == 2000
    took = int(page.locator("body").get_attribute("data-render-ms") or "-1")
    assert took >= 0
    (ARTIFACTS / "render-2000-events.txt").write_text(f"{took} ms\n")
    print(f"\n2,000 events rendered in {took} ms")


def test_the_page_asks_for_the_token_once(browser: Browser, tmp_path: Path) -> None:
    secured = Daemon(tmp_path / "secured", env={"ASTER_AUTH": "token"}).start()
    try:
        token = (tmp_path / "secured" / "token").read_text().strip()
        headers = {"Authorization": f"Bearer {token}"}
        httpx.post(f"{secured.url}/v1/sessions", json={"repo_root": ROOT}, headers=headers)
        context = browser.new_context()
        tab = context.new_page()
        tab.goto(f"{secured.url}/")
        dialog = tab.locator("#token-dialog")
        expect(dialog).to_be_visible()
        shot(tab, "token")
        tab.fill("#token-input", token)
        tab.keyboard.press("Enter")
        ready(tab, "/")
        expect(tab.get_by_role("link", name=ROOT)).to_be_visible()
        tab.goto(f"{secured.url}/#/journal")  # kept for the tab: not asked again
        ready(tab, "/journal")
        expect(dialog).not_to_be_visible()
        context.close()
    finally:
        secured.kill()


def test_the_page_is_served_safely(daemon: Daemon) -> None:
    r = httpx.get(f"{daemon.url}/")
    assert r.status_code == 200 and "text/html" in r.headers["content-type"]
    assert "connect-src 'self'" in r.headers["content-security-policy"]
    assert (
        httpx.get(f"{daemon.url}/ui/app.js").headers["content-type"].startswith("text/javascript")
    )
    assert httpx.get(f"{daemon.url}/ui/..%2Fsettings.py").status_code == 404
    assert httpx.get(f"{daemon.url}/ui/nothing.js").status_code == 404
    foreign = httpx.get(f"{daemon.url}/", headers={"Host": "evil.example"})
    assert foreign.status_code == 403


def test_session_and_memory_actions_from_the_page(page: Page, daemon: Daemon) -> None:
    page.on("dialog", lambda dialog: dialog.accept())  # the confirm() before deletions
    sid = post(daemon, "/v1/sessions", {"repo_root": ROOT})["id"]
    big = "line of a very long build log\n" * 4000  # over the blob threshold
    post(
        daemon,
        f"/v1/sessions/{sid}/events",
        [
            user("build it"),
            assistant(calls=[call("c9", "run", '{"cmd": "make"}')]),
            tool("c9", big),
            {"type": "summary", "content": "The build was run.", "through_seq": 3},
            {"type": "eviction", "tool_call_id": "c9", "stub": "[log dropped]"},
        ],
    )
    page.goto(f"{daemon.url}/#/project?repo_root={ROOT}")
    ready(page, "/project")
    other = post(daemon, "/v1/sessions", {"repo_root": ROOT, "title": "Arrived live"})["id"]
    expect(page.locator(f'tr[data-id="{other}"]')).to_contain_text("Arrived live")

    page.goto(f"{daemon.url}/#/session/{sid}")
    ready(page, f"/session/{sid}")
    expect(page.locator("#turn-4")).to_contain_text("summary of everything through #3")
    expect(page.locator("#turn-5 h3")).to_have_text("#5 evicted c9 from the context")
    expect(page.locator("#turn-5 p")).to_have_text("[log dropped]")
    load = page.locator("#turn-3 button.load-blob")
    expect(load).to_contain_text(f"Load {len(big.encode())} bytes")
    load.click()
    expect(page.locator("#turn-3 .content")).to_contain_text("line of a very long build log")
    expect(load).to_have_count(0)

    page.fill("#rename-input", "Build log")
    page.get_by_role("button", name="Rename").click()
    expect(page.locator("#session-title")).to_have_text("Build log")
    page.get_by_role("button", name="Delete").click()
    ready(page, f"/session/{sid}")
    page.get_by_role("button", name="Restore from the trash").click()
    ready(page, f"/session/{sid}")
    expect(page.locator("#session-title")).to_have_text("Build log")

    post(daemon, "/v1/memory/blocks", {"name": "ci", "content": "CI runs on push."}, repo_root=ROOT)
    page.goto(f"{daemon.url}/#/memory?repo_root={ROOT}")
    ready(page, "/memory")
    page.locator("#block-ci").get_by_role("button", name="Archive").click()
    expect(page.locator("#block-ci")).to_contain_text("archived")
    expect(page.locator("#memory-context")).not_to_contain_text("- ci:")
    page.locator("#block-ci").get_by_role("button", name="Restore").click()
    expect(page.locator("#memory-context")).to_contain_text("- ci:")
    page.locator("#block-ci").get_by_role("button", name="Forget").click()
    expect(page.locator("#block-ci")).to_have_count(0)
    expect(page.locator("#memory-context")).not_to_contain_text("- ci:")

    page.goto(f"{daemon.url}/#/journal?op=memory.delete")
    ready(page, "/journal")
    entry = page.locator('#journal-list li[data-op="memory.delete"]').first
    expect(entry).to_contain_text("ci")
    entry.get_by_role("button", name="Revert").click()
    expect(page.locator("#notice")).to_contain_text("Reverted memory.delete")
    page.goto(f"{daemon.url}/#/memory?repo_root={ROOT}")
    ready(page, "/memory")
    page.locator("#block-ci").get_by_role("button", name="History").click()
    expect(page.locator("#block-ci ol.journal li")).to_have_count(5)  # write … revert
    shot(page, "memory")


def page_modules(daemon: Daemon) -> dict[str, httpx.Response]:
    """Every module the page loads: its module script, then each import, followed."""
    html = httpx.get(f"{daemon.url}/").text
    todo = [urljoin(f"{daemon.url}/", src) for src in MODULE_SCRIPT.findall(html)]
    found: dict[str, httpx.Response] = {}
    while todo:
        url = todo.pop()
        if url in found:
            continue
        found[url] = r = httpx.get(url)
        assert r.status_code == 200, (url, r.text)
        todo += [urljoin(url, spec) for spec in IMPORT.findall(r.text)]
    return found


def test_every_module_the_page_imports_is_served_as_javascript(daemon: Daemon) -> None:
    policy = httpx.get(f"{daemon.url}/").headers["content-security-policy"]
    assert "script-src 'self';" in policy
    found = page_modules(daemon)
    assert f"{daemon.url}/ui/app.js" in found and len(found) > 1
    for url, r in found.items():
        assert url.startswith(f"{daemon.url}/ui/"), url  # same origin, so script-src 'self' holds
        assert r.headers["content-type"] == "text/javascript; charset=utf-8", url
        assert r.headers["content-security-policy"] == policy, url
        assert r.headers["x-content-type-options"] == "nosniff", url
    shipped = {f.name for f in (resources.files("aster_persist") / "web").iterdir()}
    names = {url.rsplit("/", 1)[1] for url in found}
    assert names == {name for name in shipped if name.endswith(".js")}  # none unreachable


@pytest.mark.parametrize(
    "name",
    [
        "nothing.js",
        "..%2Fsettings.py",
        "%2e%2e%2fapi%2fpage.py",
        "..%5Capp.js",
        "%2e%2e",
        "views%2Fapp.js",
        ".app.js",
        "app.py",
        "app.JS",
        "app.js%00",
        "index.html%00.js",
    ],
)
def test_an_unknown_or_traversal_name_is_refused(daemon: Daemon, name: str) -> None:
    r = httpx.get(f"{daemon.url}/ui/{name}")
    assert r.status_code == 404, r.text
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["status"] == 404 and r.json()["code"] == "not_found"


def test_every_view_loads_its_modules_with_no_console_error(page: Page, daemon: Daemon) -> None:
    sid = post(daemon, "/v1/sessions", {"repo_root": ROOT, "title": "Quiet"})["id"]
    post(daemon, f"/v1/sessions/{sid}/events", [user("a quiet question"), assistant("an answer")])
    post(
        daemon, "/v1/memory/blocks", {"name": "quiet", "content": "Nothing to say."}, repo_root=ROOT
    )
    console: list[str] = []
    scripts: dict[str, Response] = {}

    def logged(message: ConsoleMessage) -> None:
        if message.type == "error":
            console.append(f"{message.text} ({message.location})")

    def loaded(response: Response) -> None:
        if response.request.resource_type == "script":
            scripts[response.url] = response

    page.on("console", logged)
    page.on("response", loaded)
    page.goto(f"{daemon.url}/")
    ready(page, "/")
    for address, view in [
        (f"#/project?repo_root={ROOT}", "/project"),
        (f"#/session/{sid}", f"/session/{sid}"),
        (f"#/memory?repo_root={ROOT}", "/memory"),
        ("#/journal", "/journal"),
        ("#/search?q=quiet", "/search"),
    ]:
        page.goto(f"{daemon.url}/{address}")
        ready(page, view)
    expect(page.locator("#live")).to_have_text("live")
    assert not console, console
    assert set(scripts) == set(page_modules(daemon))
    for url, response in scripts.items():
        assert response.status == 200, url
        assert response.headers["content-type"].startswith("text/javascript"), url
        assert "script-src 'self'" in response.headers["content-security-policy"], url
