"""The dashboard's sessions in a real Chromium: recent sessions of every project as the
landing view (filtered, sorted, paged), a project's activity per day, a session's story
and timeline, a transcript that can be read (results under their calls, commands,
diffs, folds with sizes, thinking, errors, summaries, sub-agent runs, ANSI stripped,
links to turns, j/k), the live tail, the daemon going away and coming back, the token
dialog, the time a big session takes to draw, and every view in light and dark at
desktop and phone widths (screenshots in test-artifacts/dashboard/)."""

from __future__ import annotations

import json
import re
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Browser, Page, expect

from ..conftest import Daemon, assistant, call, tool, user
from .dashboard import ARTIFACTS, FIXTURES, ROOT, browser, fits, page, post, ready, shot

__all__ = ["browser", "page"]  # fixtures
NO_PRICE = "\u2013"  # the page's dash where no price is known
SPOTTER = FIXTURES / "claude-code" / "spotter"
PARENT = SPOTTER / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
CHILD = SPOTTER / "ae4a77f8-aedd-4bc1-888f-c94edc91af04" / "subagents" / "agent-aac57f5.jsonl"


def imported(daemon: Daemon, path: Path, repo: str = ROOT) -> str:
    r = httpx.post(
        f"{daemon.url}/v1/sessions/import",
        content=path.read_bytes(),
        params={"repo_root": repo},
        timeout=60,
    )
    assert r.status_code in (200, 201), r.text
    return str(r.json()["sessions"][0]["id"])


def at(ts_minute: int) -> str:
    return f"2026-11-30T10:{ts_minute:02d}:00Z"


def readable_session(daemon: Daemon) -> str:
    """A session with one of everything a reader meets."""
    sid = post(daemon, "/v1/sessions", {"repo_root": ROOT, "title": "Readable"})["id"]
    big = "".join(f"line {n} of the new module\n" for n in range(1200))  # about 22 KB
    patch = "*** Begin Patch\n*** Update File: app.py\n@@\n-old = 1\n+new = 2\n*** End Patch"
    events: list[dict[str, Any]] = [
        {"type": "message", "role": "system", "content": "You are a careful agent. " * 200},
        user("fix the build", ts=at(0)),
        {
            **assistant(
                "Running it.",
                calls=[
                    call("c1", "Bash", json.dumps({"command": "make build", "timeout": 60})),
                    call("c2", "Write", json.dumps({"file_path": "src/new.py", "content": big})),
                    call(
                        "c3",
                        "Edit",
                        json.dumps(
                            {
                                "file_path": "src/app.py",
                                "old_string": "a = 1",
                                "new_string": "a = 2",
                            }
                        ),
                    ),
                    call("c4", "apply_patch", json.dumps({"input": patch})),
                ],
            ),
            "model": "gpt-5",
            "ts": at(1),
            "thinking": [{"type": "thinking", "thinking": "the build needs a clean first"}],
        },
        {**tool("c1", "\x1b[31merror\x1b[0m: missing target"), "is_error": True, "ts": at(2)},
        {**tool("c2", "written"), "ts": at(3)},
        {**tool("c3", "edited"), "ts": at(4)},
        {**tool("c4", "".join(f"patched line {n}\n" for n in range(400))), "ts": at(5)},
        {**user("look at the tests", ts=at(6)), "x_sidechain": True},
        {**assistant("the sub-agent looked"), "x_sidechain": True, "ts": at(7)},
        {"type": "summary", "content": "Everything so far. " * 300, "through_seq": 9},
        {"type": "eviction", "tool_call_id": "c4", "stub": "[patch output dropped]"},
        assistant("Done.", calls=None) | {"ts": at(9)},
    ]
    post(daemon, f"/v1/sessions/{sid}/events", events)
    return sid


def test_recent_sessions_are_the_landing_view_filtered_sorted_and_paged(
    page: Page, daemon: Daemon
) -> None:
    clauded = imported(daemon, SPOTTER / "tool_heavy.jsonl")
    mine = [
        post(daemon, "/v1/sessions", {"repo_root": "/srv/other", "title": f"Mine {n}"})["id"]
        for n in range(52)
    ]
    post(daemon, f"/v1/sessions/{mine[0]}/events", {**assistant("hi"), "model": "gpt-5"})
    page.goto(f"{daemon.url}/#/")
    ready(page, "/")
    expect(page.locator("#view-title")).to_be_focused()
    assert page.title().startswith("Recent sessions")
    expect(page.locator(".projects")).to_contain_text(ROOT)
    chart = page.locator(".activity svg.stacked-chart")  # the last 30 days, by project
    expect(chart.locator("rect.part").first).to_be_attached()
    expect(page.locator(".activity .legend li")).to_have_count(2)  # both projects apart
    all_days = httpx.get(f"{daemon.url}/v1/projects/activity", params={"days": 30}).json()
    today = all_days["days"][-1]
    drawn = chart.locator(f'rect.part[data-day="{today["day"]}"]')
    assert (
        sum(int(n) for n in drawn.evaluate_all("rs => rs.map(r => r.dataset.events)"))
        == (today["events"])
    )
    assert page.locator("table.sessions tbody tr").count() == 50  # a page, newest first
    page.get_by_role("button", name="More sessions").click()
    expect(page.locator("table.sessions tbody tr")).to_have_count(53)
    row = page.locator(f'tr[data-id="{clauded}"]')  # imported: active months ago, so last
    expect(row).to_contain_text("claude-code")
    expect(row.locator("td.models")).to_contain_text("claude")
    assert int(row.locator('td[data-label="Tool calls"]').inner_text()) >= 5

    page.locator('select[name="source_tool"]').select_option("claude-code")
    ready(page, "/")
    expect(page.locator("table.sessions tbody tr")).to_have_count(1)
    assert "source_tool=claude-code" in page.url
    page.locator('select[name="source_tool"]').select_option("")
    expect(page).not_to_have_url(re.compile("source_tool"))
    ready(page, "/")
    page.locator('select[name="model"]').select_option("gpt-5")
    expect(page).to_have_url(re.compile("model=gpt-5"))
    ready(page, "/")
    expect(page.locator("table.sessions tbody tr")).to_have_count(1)
    expect(page.locator(f'tr[data-id="{mine[0]}"]')).to_be_visible()
    page.get_by_role("button", name="Clear").click()
    expect(page).not_to_have_url(re.compile("model="))
    ready(page, "/")
    page.locator('button.sort[data-sort="tool_calls"]').click()
    expect(page).to_have_url(re.compile("sort=tool_calls"))
    ready(page, "/")
    expect(page.locator("table.sessions tbody tr").first).to_have_attribute("data-id", clauded)
    expect(page.locator('th[aria-sort="descending"]')).to_contain_text("Tool calls")

    page.locator(f'tr[data-id="{clauded}"] td[data-label="Project"] a').click()
    ready(page, "/project")
    assert page.title().startswith(ROOT)
    expect(page.locator("svg.activity-chart")).to_be_visible()
    expect(page.locator("#nav-memory")).to_have_text("Project memory")
    expect(page.locator("table.sessions tbody tr")).to_have_count(1)
    page.locator('select[name="errors"]').select_option("false")
    expect(page).to_have_url(re.compile("errors=false"))
    ready(page, "/project")
    assert "errors=false" in page.url and "repo_root=" in page.url


def test_a_transcript_reads_as_what_happened(page: Page, daemon: Daemon) -> None:
    sid = readable_session(daemon)
    page.goto(f"{daemon.url}/#/session/{sid}")
    ready(page, f"/session/{sid}")
    expect(page.locator("#session-title")).to_have_text("Readable")
    assert page.title().startswith("Readable")
    story = page.locator(".story")
    expect(story).to_contain_text("gpt-5")
    expect(story).to_contain_text("Tool errors")
    expect(page.locator("svg.timeline rect.bar")).to_have_count(4)
    expect(page.locator("svg.timeline rect.bar.error")).to_have_count(1)

    system = page.locator("#turn-1 details.fold")
    expect(system.locator("summary")).to_contain_text("System prompt")
    expect(system).not_to_have_attribute("open", "")
    expect(page.locator("#turn-3 details.thinking summary")).to_have_text(
        "thinking (29 characters)"
    )
    bash = page.locator('.tool-call[data-call="c1"]')
    expect(bash.locator("pre.cmd")).to_have_text("$ make build")
    failed = bash.locator(".result.failed")  # the result under its call, marked
    expect(failed).to_contain_text("Failed: Bash")
    expect(failed.locator("pre.output")).to_have_text("error: missing target")  # no ANSI
    expect(bash).to_have_class(re.compile(r"\bfailed\b"))
    write = page.locator('.tool-call[data-call="c2"] details.file-change')
    expect(write.locator("summary")).to_contain_text("src/new.py · new content · +1201")
    expect(write).not_to_have_attribute("open", "")
    edit = page.locator('.tool-call[data-call="c3"]')
    expect(edit.locator(".diff .del")).to_have_text("- a = 1\n")
    expect(edit.locator(".diff .add")).to_have_text("+ a = 2\n")
    patch = page.locator('.tool-call[data-call="c4"]')
    expect(patch.locator(".diff .add")).to_have_text("+ new = 2\n")
    expect(patch.locator(".result details.fold summary")).to_contain_text("output (401 lines")
    run = page.locator("details.subagent-run")
    expect(run.locator("summary")).to_have_text("Sub-agent run: 2 turns")
    expect(run.locator(".turn.sidechain")).to_have_count(2)
    expect(page.locator("#turn-10")).to_have_class(re.compile(r"\bsummary\b"))
    expect(page.locator("#turn-10 details.fold summary")).to_contain_text("summary (")
    expect(page.locator("#turn-11")).to_contain_text("Evicted c4 from the context")
    fits(page)
    shot(page, "session-readable")

    page.locator("#turn-12 button.link-turn").click()  # copy a link to a turn
    assert page.url.endswith(f"#/session/{sid}?seq=12")
    expect(page.locator("#turn-12")).to_have_class(re.compile(r"\btarget\b"))
    page.reload()
    ready(page, f"/session/{sid}")
    expect(page.locator("#turn-12")).to_be_focused()
    page.keyboard.press("k")  # the turn before, then after
    expect(page.locator("#turn-11")).to_be_focused()
    page.keyboard.press("j")
    expect(page.locator("#turn-12")).to_be_focused()
    page.keyboard.press("/")
    expect(page.locator("#search-box")).to_be_focused()


def test_a_session_being_written_is_marked_running_and_first_then_not(
    browser: Browser, tmp_path: Path
) -> None:
    short = Daemon(tmp_path / "short", env={"ASTER_RUNNING_SECONDS": "3"}).start()
    try:
        old = imported(short, SPOTTER / "tool_heavy.jsonl")  # old history: not running
        sid = post(short, "/v1/sessions", {"repo_root": ROOT, "title": "Busy"})["id"]
        context = browser.new_context(viewport={"width": 1440, "height": 900})
        tab = context.new_page()
        tab.goto(f"{short.url}/#/")
        ready(tab, "/")
        running = tab.locator(".running-now li")
        marked = tab.locator("table.sessions tr .badge.running")
        expect(running).to_have_count(0, timeout=8_000)  # the session's creation ran out
        expect(tab.locator(".running-now")).to_contain_text("Nothing is being written now.")
        for n in range(6):  # appends keep arriving: marked, first, while they do
            post(short, f"/v1/sessions/{sid}/events", user(f"step {n}"))
            expect(running).to_have_count(1)
            expect(running.first).to_have_attribute("data-id", sid)
            expect(running.first).to_contain_text("Busy")
            expect(marked).to_have_count(1)
            expect(tab.locator(f'tr[data-id="{sid}"] .badge.running')).to_have_count(1)
            tab.wait_for_timeout(700)
        assert tab.locator(f'tr[data-id="{old}"] .badge.running').count() == 0
        fits(tab)
        shot(tab, "running-now")
        expect(running).to_have_count(0, timeout=10_000)  # then, the window passed: not
        expect(marked).to_have_count(0)
        tab.goto(f"{short.url}/#/session/{sid}")  # the session's own page says so too
        ready(tab, f"/session/{sid}")
        badge = tab.locator("#session-title + .badge.running")
        expect(badge).to_be_hidden()
        post(short, f"/v1/sessions/{sid}/events", user("one more"))
        expect(badge).to_be_visible()
        expect(badge).to_be_hidden(timeout=10_000)
        context.close()
    finally:
        short.kill()


def test_prompts_arguments_and_commands_read_as_text(page: Page, daemon: Daemon) -> None:
    sid = post(daemon, "/v1/sessions", {"repo_root": ROOT, "title": "Reading"})["id"]
    task = {"description": "Look at the tests", "prompt": "Read the tests.\nSay which fail.",
            "subagent_type": "general-purpose"}  # fmt: skip
    post(
        daemon,
        f"/v1/sessions/{sid}/events",
        [
            user(
                "<command-name>/review</command-name>\n<command-message>review</command-message>"
                "\n<command-args>src/app.py</command-args>"
            ),
            user("<local-command-stdout>Compacted \x1b[2m(ctrl+o)\x1b[22m</local-command-stdout>"),
            assistant(
                calls=[
                    call("toolu_01Abc", "Task", json.dumps(task)),
                    call("c2", "Bash", json.dumps({"command": "pytest"})),
                    call("c3", "exec_command", json.dumps({"cmd": "ls"})),
                ]
            ),
            {**tool("c2", "Exit code 1\nFAILED test_app.py"), "is_error": True},
            tool("c3", "Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 0\nok"),
            tool("toolu_01Abc", "two fail"),
        ],
    )
    page.goto(f"{daemon.url}/#/session/{sid}")
    ready(page, f"/session/{sid}")
    slash = page.locator("#turn-1")
    expect(slash.locator(".slash code")).to_have_text("/review src/app.py")
    expect(slash.locator(".slash .badge")).to_have_text("slash command")
    expect(slash).not_to_contain_text("<command")
    expect(page.locator("#turn-2 pre.output")).to_have_text("Compacted (ctrl+o)")
    expect(page.locator("#turn-2")).not_to_contain_text("local-command")
    spawn = page.locator('.tool-call[data-call="toolu_01Abc"]')
    expect(spawn.locator(".call-head")).to_have_text("Task")  # the id only on hover
    expect(spawn.locator(".call-head strong")).to_have_attribute("title", "call toolu_01Abc")
    fields = spawn.locator("dl.fields")
    expect(fields.locator("dt")).to_have_text(["description", "prompt", "subagent_type"])
    prompt = fields.locator("dd").nth(1)
    assert prompt.inner_text() == "Read the tests.\nSay which fail."  # lines, not \n
    expect(spawn.locator("pre.args")).to_have_count(0)
    spawn.locator("button.json-toggle").click()  # JSON only when asked
    expect(spawn.locator("pre.args")).to_contain_text('"prompt": "Read the tests.\\nSay')
    expect(fields).to_be_hidden()
    spawn.locator("button.json-toggle").click()
    expect(spawn.locator("pre.args")).to_have_count(0)
    expect(fields).to_be_visible()
    bash = page.locator('.tool-call[data-call="c2"] .result-head .exit')
    expect(bash).to_have_text("exit 1")
    expect(bash).to_have_class(re.compile(r"\bbad\b"))
    codex = page.locator('.tool-call[data-call="c3"] .result-head .exit')
    expect(codex).to_have_text("exit 0")
    expect(codex).not_to_have_class(re.compile(r"\bbad\b"))
    expect(page.locator('.tool-call[data-call="toolu_01Abc"] .exit')).to_have_count(0)
    fits(page)


def test_a_sub_agent_links_to_its_own_session(page: Page, daemon: Daemon) -> None:
    parent = imported(daemon, PARENT)
    child = imported(daemon, CHILD)
    page.goto(f"{daemon.url}/#/session/{parent}")
    ready(page, f"/session/{parent}")
    expect(page.locator(".story")).to_contain_text("Sub-agents")
    started = httpx.get(f"{daemon.url}/v1/sessions/{child}").json()
    row = page.locator(f'.story .child[data-id="{child}"]')  # with its turns and errors
    expect(row).to_contain_text(f"{started['turns']} turns")
    if started["tool_errors"]:
        expect(row.locator(".bad")).to_contain_text(f"{started['tool_errors']} tool error")
    link = page.locator(f'.tool-call a.child-link[href="#/session/{child}"]')
    expect(link).to_have_count(1)
    link.click()
    ready(page, f"/session/{child}")
    expect(page.locator(".story")).to_contain_text("Started by")
    parent_title = httpx.get(f"{daemon.url}/v1/sessions/{parent}").json()["title"]
    expect(page.locator(f'.story a[href="#/session/{parent}"]')).to_have_text(parent_title)


def test_the_tail_is_followed_at_the_bottom_and_offered_above_it(
    page: Page, daemon: Daemon
) -> None:
    sid = post(daemon, "/v1/sessions", {"repo_root": ROOT})["id"]
    post(daemon, f"/v1/sessions/{sid}/events", [user(f"turn {n}\n" * 5) for n in range(40)])
    page.goto(f"{daemon.url}/#/session/{sid}")
    ready(page, f"/session/{sid}")
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    post(daemon, f"/v1/sessions/{sid}/events", assistant("followed at the bottom"))
    expect(page.locator("#turn-41")).to_be_in_viewport()
    expect(page.locator("#new-turns")).to_be_hidden()
    page.evaluate("window.scrollTo(0, 0)")
    post(daemon, f"/v1/sessions/{sid}/events", [assistant("one"), assistant("two")])
    button = page.locator("#new-turns")
    expect(button).to_have_text("2 new turns ↓")
    expect(page.locator("#turn-43")).not_to_be_in_viewport()
    button.click()
    expect(page.locator("#turn-43")).to_be_in_viewport()
    expect(page.locator(".story")).to_contain_text("43 events")


def test_the_daemon_going_away_is_shown_and_the_view_comes_back(page: Page, daemon: Daemon) -> None:
    data = (SPOTTER / "tool_heavy.jsonl").read_bytes()
    sid = httpx.post(
        f"{daemon.url}/v1/sessions/import", content=data, params={"repo_root": ROOT}
    ).json()["sessions"][0]["id"]
    page.goto(f"{daemon.url}/#/session/{sid}")
    ready(page, f"/session/{sid}")
    post(daemon, f"/v1/sessions/{sid}/events", user("a turn appended while watching"))
    expect(page.get_by_text("a turn appended while watching")).to_be_visible(timeout=10_000)

    daemon.stop()
    expect(page.locator("#banner")).to_be_visible(timeout=10_000)
    shot(page, "daemon-away")
    page.evaluate("location.hash = '#/journal'")
    ready(page, "/journal")
    failure = page.locator("section.failed")
    expect(failure).to_contain_text("The daemon is not answering")
    assert "Failed to fetch" not in page.locator("main").inner_text()
    daemon.start()
    expect(page.locator("#banner")).to_be_hidden(timeout=15_000)
    expect(page.locator("#journal-list")).to_be_visible(timeout=15_000)  # drawn again
    expect(page.locator("#live")).to_have_text("live")
    page.evaluate(f"location.hash = '#/session/{sid}'")
    ready(page, f"/session/{sid}")
    post(daemon, f"/v1/sessions/{sid}/events", assistant("and one after the restart"))
    expect(page.get_by_text("and one after the restart")).to_be_visible(timeout=15_000)


TABBABLE = (
    "[...document.querySelectorAll('#events a[href], #events button, #events summary,"
    " #events [tabindex]')].filter(n => n.tabIndex >= 0 && n.offsetParent !== null).length"
)


def test_a_2000_event_session_is_a_page_at_a_time_its_ends_a_key_away(
    page: Page, daemon: Daemon
) -> None:
    sid = post(daemon, "/v1/sessions", {"repo_root": ROOT, "title": "Long"})["id"]
    for start in range(0, 2000, 500):
        batch: list[dict[str, Any]] = []
        for n in range(start, start + 500):
            if n % 4 == 1:
                batch.append(assistant(calls=[call(f"c{n}", "Bash", '{"command": "ls"}')]))
            elif n % 4 == 2:
                failed = {"is_error": True} if n % 500 == 102 else {}  # seqs 103, 603, 1103, 1603
                batch.append(tool(f"c{n - 1}", f"output {n}\n" * 3) | failed)
            else:
                batch.append(user(f"question {n}") if n % 4 == 0 else assistant(f"answer {n}"))
        post(daemon, f"/v1/sessions/{sid}/events", batch)
    times = []
    for _ in range(3):  # cold loads of the page, each timed by the browser
        page.goto("about:blank")
        page.goto(f"{daemon.url}/#/session/{sid}")
        ready(page, f"/session/{sid}")
        marks = page.evaluate(
            "Object.fromEntries(performance.getEntriesByType('mark')"
            ".filter(m => m.name.startsWith('aster:')).map(m => [m.name, m.startTime]))"
        )
        times.append((round(marks["aster:first-turn"]), round(marks["aster:all-turns"])))
        assert marks["aster:first-turn"] < marks["aster:all-turns"]
    # a page of 200 events is drawn, not 2,000: 150 turns, their 50 results under their calls
    assert page.locator("#events [data-turn]").count() == 150
    assert page.locator("#events .result").count() == 50
    assert page.evaluate("document.querySelectorAll('#events *').length") < 2000
    expect(page.locator(".pager").first).to_contain_text("Events 1\u2013200 of 2,000")
    assert page.evaluate(TABBABLE) == 150  # a tab stop per turn, not per part
    assert page.locator("#timeline svg").bounding_box()["height"] < 300  # 500 calls
    page.locator("#session-title").focus()
    started = page.evaluate("performance.now()")
    page.keyboard.press("G")  # the last turn, its page drawn
    expect(page.locator("#turn-2000")).to_be_focused()
    last = page.evaluate("performance.now()") - started
    expect(page.locator(".pager").first).to_contain_text("Events 1801\u20132000 of 2,000")
    assert page.locator("#turn-1").count() == 0
    page.keyboard.press("g")
    expect(page.locator("#turn-1")).to_be_focused()
    page.keyboard.press("Tab")  # into the turn: its own parts are reached from it
    expect(page.locator("#turn-1 button.link-turn")).to_be_focused()
    page.keyboard.press("Tab")  # out of it: the next turn
    expect(page.locator("#turn-2")).to_be_focused()
    for _ in range(149):  # j from the page's last turn goes on to the next page
        page.keyboard.press("j")
    expect(page.locator("#turn-201")).to_be_focused()
    page.keyboard.press("k")
    expect(page.locator("#turn-200")).to_be_focused()
    page.keyboard.press("g")
    for seq in (103, 603, 1103, 1603, 103):  # e: each failed result in order, across pages
        page.keyboard.press("e")
        expect(page.locator(f"#turn-{seq}")).to_be_focused()
    page.keyboard.press("E")
    expect(page.locator("#turn-1603")).to_be_focused()
    expect(page.locator(".pager").first).to_contain_text("Events 1601\u20131800 of 2,000")
    page.goto(f"{daemon.url}/#/session/{sid}?seq=1501")  # a link into a later page
    ready(page, f"/session/{sid}")
    expect(page.locator("#turn-1501")).to_be_focused()
    times.sort(key=lambda t: t[1])
    first, whole = times[1]
    (ARTIFACTS / "render-2000-events.txt").write_text(
        f"first turn {first} ms, the first page {whole} ms (median of 3 cold loads, "
        f"from navigation start); the last turn {last:.0f} ms after G\n"
    )
    print(f"\n2,000 events: first turn at {first} ms, page at {whole} ms, last {last:.0f} ms")


def test_the_token_dialog_handles_escape_and_a_wrong_token(
    browser: Browser, tmp_path: Path
) -> None:
    secured = Daemon(tmp_path / "secured", env={"ASTER_AUTH": "token"}).start()
    try:
        token = (tmp_path / "secured" / "token").read_text().strip()
        httpx.post(
            f"{secured.url}/v1/sessions",
            json={"repo_root": ROOT},
            headers={"Authorization": f"Bearer {token}"},
        )
        context = browser.new_context()
        tab = context.new_page()
        tab.goto(f"{secured.url}/")
        dialog = tab.locator("#token-dialog")
        expect(dialog).to_be_visible()
        tab.keyboard.press("Escape")  # gives up: the page says so, and does not hang
        expect(dialog).to_be_hidden()
        ready(tab, "/")
        expect(tab.locator("section.failed")).to_contain_text("No token was given")
        tab.reload()
        tab.fill("#token-input", "not-the-token")
        tab.keyboard.press("Enter")
        expect(tab.locator("#token-error")).to_have_text(
            "The daemon refused that token. Check it and try again."
        )
        shot(tab, "token-refused")
        tab.fill("#token-input", token)
        tab.keyboard.press("Enter")
        ready(tab, "/")
        expect(tab.locator("table.sessions tbody tr")).to_have_count(1)
        tab.goto(f"{secured.url}/#/journal")  # kept for the tab: not asked again
        ready(tab, "/journal")
        expect(dialog).not_to_be_visible()
        context.close()
    finally:
        secured.kill()


LONG = "/srv/clients/a-very-long-organisation-name/workspaces/a-long-repository-name-for-a-phone"
VIEWS = [
    ("home", "#/", "/"),
    ("project", f"#/project?repo_root={ROOT}", "/project"),
    ("session", "#/session/{sid}", "/session/{sid}"),
    ("imported", "#/session/{cc}", "/session/{cc}"),
    ("memory", f"#/memory?repo_root={ROOT}", "/memory"),
    ("journal", "#/journal", "/journal"),
    ("search", "#/search?q=build", "/search"),
]


def test_every_view_in_light_and_dark_at_desktop_and_phone_widths(
    browser: Browser, daemon: Daemon
) -> None:
    """Real histories at a long path: no view scrolls sideways, the landing table shows
    its last column whole, and a session's first turn is on the first screen."""
    sid = readable_session(daemon)
    cc = imported(daemon, PARENT, repo=LONG)  # long file paths, sub-agents, errors
    imported(daemon, SPOTTER / "tool_heavy.jsonl", repo=LONG)
    post(
        daemon, "/v1/memory/blocks", {"name": "build", "content": "Run make build."}, repo_root=ROOT
    )
    titles = set()
    for scheme in ("light", "dark"):
        for device, size in (("desktop", (1440, 900)), ("phone", (390, 844))):
            context = browser.new_context(
                viewport={"width": size[0], "height": size[1]}, color_scheme=scheme
            )
            tab = context.new_page()
            requests: list[str] = []
            tab.on("request", lambda request, seen=requests: seen.append(request.url))
            for name, address, view in VIEWS:
                tab.goto(f"{daemon.url}/{address.format(sid=sid, cc=cc)}")
                ready(tab, view.format(sid=sid, cc=cc))
                background = tab.evaluate("getComputedStyle(document.body).backgroundColor")
                assert (background == "rgb(13, 17, 23)") == (scheme == "dark"), background
                fits(tab)
                titles.add(tab.title())
                if name == "home":  # the table's last column is not cut off
                    cut = tab.evaluate(
                        "(w => w.scrollWidth - w.clientWidth)(document.querySelector('.table-wrap'))"
                    )
                    assert device == "phone" or cut <= 1, f"the table is cut by {cut} px"
                if name in ("session", "imported"):
                    top = tab.locator("#events [data-turn]").first.bounding_box()["y"]
                    assert top < size[1] - 40, f"the first turn starts at {top} px"
                shot(tab, f"{name}-{scheme}-{device}")
            context.close()
            assert all(url.startswith(daemon.url + "/") for url in requests), requests
    assert len(titles) == len(VIEWS)  # a title per view


def test_the_theme_switch_overrides_the_system(page: Page, daemon: Daemon) -> None:
    page.goto(f"{daemon.url}/#/")
    ready(page, "/")
    switch = page.locator("#theme-switch")
    expect(switch).to_have_text("Theme: system")
    switch.click()
    expect(switch).to_have_text("Theme: light")
    switch.click()
    expect(switch).to_have_text("Theme: dark")
    dark = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert dark == "rgb(13, 17, 23)"
    page.reload()
    ready(page, "/")
    expect(switch).to_have_text("Theme: dark")  # remembered


def test_thinking_folds_a_taken_back_turn_is_struck_and_a_blob_loads(
    page: Page, daemon: Daemon
) -> None:
    page.on("dialog", lambda dialog: dialog.accept())  # the confirm() before deleting
    sid = post(daemon, "/v1/sessions", {"repo_root": ROOT})["id"]
    big = "line of a very long build log\n" * 4000  # over the blob threshold
    post(
        daemon,
        f"/v1/sessions/{sid}/events",
        [
            user("first question"),
            {"type": "reasoning", "content": "weighing the two answers"},
            assistant("an answer to take back"),
            {"type": "retraction", "target_seq": 3, "reason": "popped by the agent"},
            assistant(calls=[call("c9", "run", '{"cmd": "make"}')]),
            tool("c9", big),
        ],
    )
    page.goto(f"{daemon.url}/#/session/{sid}")
    ready(page, f"/session/{sid}")
    thinking = page.locator(".turn.reasoning details")
    expect(thinking).not_to_have_attribute("open", "")
    expect(thinking.locator("summary")).to_have_text("thinking (24 characters)")
    expect(page.locator("#turn-3")).to_have_class(re.compile(r"\bretracted\b"))
    expect(page.locator("#turn-4")).to_contain_text("Took back #3: popped by the agent")
    expect(page.locator("#turn-1")).not_to_have_class(re.compile(r"\bretracted\b"))
    post(daemon, f"/v1/sessions/{sid}/events", user("a question asked live"))
    post(daemon, f"/v1/sessions/{sid}/events", {"type": "retraction", "target_seq": 7})
    expect(page.locator("#turn-7")).to_have_class(re.compile(r"\bretracted\b"), timeout=10_000)

    load = page.locator("#turn-6 button.load-blob")  # the result, under its call
    expect(load).to_have_text(f"Load {len(big.encode())} bytes")
    expect(page.locator('.tool-call[data-call="c9"] #turn-6')).to_have_count(1)
    load.click()
    expect(page.locator("#turn-6 details.fold")).to_have_attribute("open", "")
    expect(page.locator("#turn-6 pre.output")).to_contain_text("line of a very long build log")
    expect(load).to_have_count(0)

    page.fill("#rename-input", "Build log")
    page.get_by_role("button", name="Rename").click()
    expect(page.locator("#session-title")).to_have_text("Build log")
    page.get_by_role("button", name="Delete").click()
    expect(page.get_by_role("button", name="Restore from the trash")).to_be_visible()
    page.get_by_role("button", name="Restore from the trash").click()
    expect(page.locator("#session-title")).to_have_text("Build log")


def test_a_search_hit_opens_the_transcript_at_its_turn(page: Page, daemon: Daemon) -> None:
    sid = post(daemon, "/v1/sessions", {"repo_root": ROOT, "title": "Websocket flake"})["id"]
    post(
        daemon,
        f"/v1/sessions/{sid}/events",
        [user(f"filler {n}\n" * 8) for n in range(30)]
        + [
            assistant(calls=[call("c1", "run", '{"cmd": "pytest -k websocket"}')]),
            tool("c1", "1 failed: the heartbeat arrived after the zebra deadline"),
        ],
    )
    page.goto(f"{daemon.url}/#/search?q=zebra")
    ready(page, "/search")
    page.locator("#search-results a.hit").first.click()
    ready(page, f"/session/{sid}")
    target = page.locator(".target")
    expect(target).to_have_attribute("id", "turn-32")
    expect(target).to_contain_text("zebra deadline")
    expect(target).to_be_focused()
    expect(target).to_be_in_viewport()


def test_the_journal_filters_offer_every_operation_and_actor_the_store_has(
    page: Page, daemon: Daemon
) -> None:
    """Drawn from the API, never from a copy: every op (and each family of them) and
    every actor; choosing one filters the list."""
    from aster_persist.schemas.journal import ACTORS, OPS

    post(daemon, "/v1/memory/blocks", {"name": "a-note", "content": "Plain words."})
    page.goto(f"{daemon.url}/#/journal")
    ready(page, "/journal")
    offered = page.locator("#journal-op option").evaluate_all("(os) => os.map((o) => o.value)")
    families = sorted({op.split(".")[0] for op in OPS})
    assert offered[0] == "" and set(offered[1:]) == {*OPS, *families}
    assert {"memory.recall", "session.source_gone", "home.symlink_refused"} <= set(offered)
    actors = page.locator("#journal-actor option").evaluate_all("(os) => os.map((o) => o.value)")
    assert actors == ["", *ACTORS]
    page.select_option("#journal-op", "memory.write")
    ready(page, "/journal")
    expect(page.locator("#journal-list li[data-op='memory.write']")).to_have_count(1)


def test_the_landing_view_totals_today_and_the_last_7_days_as_the_api_does(
    browser: Browser, daemon: Daemon
) -> None:
    sid = post(daemon, "/v1/sessions", {"repo_root": ROOT, "title": "Costly"})["id"]
    turns = [
        user("ship it"),
        {
            **assistant("shipped"),
            "model": "claude-sonnet-4-20250514",
            "usage": {
                "input_tokens": 1_200_000,
                "output_tokens": 30_000,
                "cached_input_tokens": 1_000_000,
            },
        },
        {
            **assistant("also"),
            "model": "house-model",
            "usage": {"input_tokens": 10, "output_tokens": 5},
        },
        tool("c1", "boom") | {"is_error": True},
    ]
    post(daemon, f"/v1/sessions/{sid}/events", turns)
    tau = json.loads((FIXTURES / "openai-chat" / "tau-bench" / "gpt-4o-airline.json").read_text())
    undated = httpx.post(  # chats with no times of their own, imported after it
        f"{daemon.url}/v1/sessions/import",
        content=json.dumps(tau[:2]),
        params={"repo_root": ROOT},
        timeout=60,
    )
    assert undated.status_code == 201, undated.text
    for width, height in ((1440, 900), (390, 844)):
        context = browser.new_context(viewport={"width": width, "height": height})
        tab = context.new_page()
        tab.goto(f"{daemon.url}/#/")
        ready(tab, "/")
        today = httpx.get(f"{daemon.url}/v1/stats").json()
        since = today["since"]
        week = httpx.get(
            f"{daemon.url}/v1/stats",
            params={
                "since": str(date.fromisoformat(since) - timedelta(days=6)),
                "until": today["until"],
            },
        ).json()
        for span, found in (("today", today), ("week", week)):
            card = tab.locator(f'.totals [data-span="{span}"]')
            shown = {
                name: card.locator(f'dd[data-stat="{name}"]').inner_text()
                for name in (
                    "sessions",
                    "turns",
                    "tool_calls",
                    "tool_errors",
                    "tokens_in",
                    "cached_in",
                    "tokens_out",
                )
            }
            assert shown == {k: f"{found['total'][k]:,}" for k in shown}, (span, shown)
            assert (
                card.locator('dd[data-stat="cost_usd"]').inner_text()
                == f"${found['total']['cost_usd']:.2f}"
            )
            expect(card.locator(".unpriced")).to_contain_text("no price for house-model")
        assert today["total"]["tool_errors"] >= 1 and today["total"]["cached_in"] >= 1_000_000
        card = tab.locator('.totals [data-span="week"]')
        for group in ("model", "project"):  # the span split on a click, as the API splits it
            card.locator(f'button[data-group="{group}"]').click()
            split = tab.locator(f'.split table[data-group="{group}"] tbody tr')
            wanted = httpx.get(
                f"{daemon.url}/v1/stats",
                params={**{"since": week["since"]}, "until": week["until"], "group": group},
            ).json()["groups"]
            expect(split).to_have_count(len(wanted))
            assert split.evaluate_all("rs => rs.map(r => r.dataset.key)") == [
                g["key"] or "" for g in wanted
            ]
            for row, g in zip(split.all(), wanted, strict=True):
                assert row.locator('td[data-stat="turns"]').inner_text() == f"{g['turns']:,}"
                cost = row.locator('td[data-stat="cost_usd"]').inner_text()
                assert cost == (NO_PRICE if g["cost_usd"] is None else f"${g['cost_usd']:.2f}")
            if group == "model":  # a model without a price: its tokens, no cost
                assert "house-model" in split.evaluate_all("rs => rs.map(r => r.dataset.key)")
        rows = tab.locator("table.sessions tbody tr")
        expect(rows).to_have_count(3)
        expect(rows.first).to_contain_text("Costly")  # the undated chats are not on top
        for n in (1, 2):
            expect(rows.nth(n).locator("td").nth(9)).to_have_text("no time")
        for column, name in ((4, "turns"), (5, "tool_calls"), (6, "tool_errors")):
            cells = rows.locator(f"td:nth-child({column + 1})").all_inner_texts()
            total = sum(int(re.sub(r"\D", "", cell)) for cell in cells)  # the sessions shown
            assert total == week["total"][name], (name, cells)
        fits(tab)  # no sideways scroll at either width
        shot(tab, f"home-totals-{width}")
        context.close()
    # the session's own cost, and each turn's, as estimates (a model without a price says so)
    page = browser.new_page()
    page.goto(f"{daemon.url}/#/session/{sid}")
    ready(page, f"/session/{sid}")
    cost = httpx.get(f"{daemon.url}/v1/sessions/{sid}").json()["cost"]
    expect(page.locator("#session-cost")).to_have_text(f"${cost['cost_usd']:.2f}")
    expect(page.locator("#session-cost")).to_have_attribute("title", re.compile("house-model"))
    sonnet = cost["prices"]["claude-sonnet-4-20250514"]
    usd = (
        200_000 * sonnet["input"] + 1_000_000 * sonnet["cached_input"] + 30_000 * sonnet["output"]
    ) / 1e6
    expect(page.locator("#turn-2 .spent")).to_have_text(
        f"1.2M in (1.0M cached) · 30k out · \u2248 ${usd:.2f}"
    )
    expect(page.locator("#turn-3 .spent")).to_have_text("10 in · 5 out · no price")
    expect(page.locator("#turn-1 .spent")).to_have_count(0)  # a user's turn: nothing spent
    page.close()


def test_errors_first_counted_on_folded_runs_open_and_reached_with_e(
    page: Page, daemon: Daemon
) -> None:
    side = {"x_sidechain": True}
    events = [
        user("fix the build"),
        assistant(calls=[call("c1", "bash", '{"command": "make"}')]),
        tool("c1", "make: *** [all] Error 2\n" + "cc failed\n" * 40) | {"is_error": True},
        assistant(calls=[call("c2", "Read", '{"file_path": "a.c"}')]) | side,
        tool("c2", "int main;") | side,
        assistant(calls=[call("c3", "bash", '{"command": "cc a.c"}')]) | side,
        tool("c3", "a.c:1: error") | side | {"is_error": True},
        assistant(calls=[call("c4", "bash", '{"command": "cc b.c"}')]) | side,
        tool("c4", "b.c:1: error") | side | {"is_error": True},
        assistant(calls=[call("c5", "bash", '{"command": "make test"}')]),
        tool("c5", "1 failed") | {"is_error": True},
    ]
    sid = post(daemon, "/v1/sessions", {"repo_root": ROOT, "title": "Failing"})["id"]
    post(daemon, f"/v1/sessions/{sid}/events", events)
    page.goto(f"{daemon.url}/#/session/{sid}")
    ready(page, f"/session/{sid}")
    run = page.locator("details.subagent-run")
    expect(run.locator("summary")).to_have_text("Sub-agent run: 3 turns · 2 tool errors")
    assert run.get_attribute("open") is None  # folded, its errors said on the fold
    # a failed result's long output starts open
    expect(page.locator(".result.failed details.fold").first).to_have_attribute("open", "")
    failed = [3, 7, 9, 11]  # the seqs of the failed results, in order
    page.locator("body").click(position={"x": 1, "y": 1})
    page.evaluate("window.scrollTo(0, 0)")
    reached = []
    for _ in failed:
        page.keyboard.press("e")
        seq = page.evaluate("document.activeElement.dataset.seq")
        reached.append(int(seq))
        expect(page.locator(f'.result.failed[data-seq="{seq}"]')).to_be_visible()
    assert reached == failed
    page.keyboard.press("Shift+E")
    assert int(page.evaluate("document.activeElement.dataset.seq")) == 9
    assert run.get_attribute("open") is not None  # opened to show its errors
