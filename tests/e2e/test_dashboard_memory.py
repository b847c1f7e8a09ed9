"""The dashboard's memory, journal and search in a real Chromium: bodies shown, the
context in labelled parts with sizes, a block edited through fields that refuse bad
values (and show the daemon's 4xx), a conflict shown as a diff with keep, take or merge,
history as diffs, reverts that ask first and are journaled as the dashboard's; the
journal paged, filtered, linked, with diffs and what was reverted; search with filters,
the project of every hit, memory hits opening their own scope."""

from __future__ import annotations

import re

import httpx
from playwright.sync_api import Page, expect

from ..conftest import Daemon, assistant, user
from .dashboard import ROOT, browser, page, post, ready, shot

__all__ = ["browser", "page"]  # fixtures


def block_put(daemon: Daemon, name: str, text: str, repo_root: str = ROOT) -> None:
    r = httpx.put(
        f"{daemon.url}/v1/memory/blocks/{name}",
        params={"repo_root": repo_root},
        content=text,
        headers={"Content-Type": "text/markdown"},
    )
    assert r.status_code == 200, r.text


def test_memory_shows_bodies_and_context_and_edits_through_fields(
    page: Page, daemon: Daemon
) -> None:
    post(daemon, "/v1/sessions", {"repo_root": ROOT})
    block_put(daemon, "style", "---\ndescription: code style\nx_owner: team\n---\nUse tabs.\n")
    post(daemon, "/v1/memory/core/notes", {"note": "Always run the linter."}, repo_root=ROOT)
    post(daemon, "/v1/memory/blocks", {"name": "greeting", "content": "Say hello."})
    page.goto(f"{daemon.url}/#/memory?repo_root={ROOT}")
    ready(page, "/memory")
    assert page.title().startswith(f"Memory of {ROOT}")
    block = page.locator("#block-style")
    expect(block.locator(".block-body")).to_contain_text("Use tabs.")  # shown, not hidden
    parts = page.locator("#memory-context .context-part")
    expect(parts).to_have_count(2)
    expect(parts.nth(0).locator("h4")).to_contain_text("Project core memory (ASTER.md)")
    expect(parts.nth(1).locator("h4")).to_contain_text("1 global, 1 of the project")
    expect(parts.nth(0).locator("h4")).to_contain_text(
        re.compile(r"\d+ characters · about \d+ tokens")
    )

    block.get_by_role("button", name="Edit").click()
    form = block.locator("form.block-form")
    form.locator('input[name="importance"]').fill("5")  # refused by the field itself
    form.get_by_role("button", name="Save block").click()
    assert form.locator('input[name="importance"]').evaluate("i => !i.validity.valid")
    form.locator('input[name="importance"]').fill("0.9")
    form.locator('textarea[name="body"]').fill("Use tabs. Token ghp_" + "a" * 36)
    form.get_by_role("button", name="Save block").click()  # the daemon refuses a secret
    expect(form.locator(".form-error")).to_contain_text("secret")
    form.locator('textarea[name="body"]').fill("Use tabs, width 4.")
    form.locator('input[name="tags"]').fill("style, editor")
    form.get_by_role("button", name="Save block").click()
    expect(page.locator("#notice")).to_have_text("Saved style.")
    read = httpx.get(
        f"{daemon.url}/v1/memory/blocks/style", params={"repo_root": ROOT, "track": "false"}
    ).json()
    assert read["body"] == "Use tabs, width 4.\n" and read["importance"] == 0.9
    assert read["description"] == "code style" and read["metadata"]["x_owner"] == "team"
    assert read["tags"] == ["style", "editor"]
    last = httpx.get(f"{daemon.url}/v1/journal", params={"order": "desc", "limit": 1}).json()
    assert last["items"][0]["actor"] == "dashboard"

    block = page.locator("#block-style")
    block.get_by_role("button", name="Edit").click()
    block.locator('textarea[name="body"]').fill("Use tabs, width 8.")
    block_put(daemon, "style", "---\ndescription: code style\n---\nUse spaces.\n")  # theirs
    block.get_by_role("button", name="Save block").click()
    conflict = block.locator(".conflict")
    expect(conflict.locator(".diff .del")).to_have_text("- Use spaces.\n")
    expect(conflict.locator(".diff .add")).to_have_text("+ Use tabs, width 8.\n")
    shot(page, "memory-conflict")
    conflict.get_by_role("button", name="Merge").click()
    merged = block.locator('textarea[name="body"]').input_value()
    assert "<<<<<<< yours\nUse tabs, width 8.\n=======\nUse spaces.\n>>>>>>> theirs" in merged
    block.locator('textarea[name="body"]').fill("Use spaces, width 8.")
    block.get_by_role("button", name="Save block").click()  # saved over theirs, knowingly
    expect(page.locator("#block-style .block-body")).to_have_text("Use spaces, width 8.")

    page.locator("#block-style").get_by_role("button", name="History").click()
    history = page.locator("#block-style ol.journal li")
    expect(history.first).to_contain_text("memory.edit")
    history.first.get_by_role("button", name="Diff").click()
    expect(history.first.locator(".diff .add", has_text="Use spaces, width 8.")).to_be_visible()
    expect(history.first.locator(".diff .del", has_text="Use spaces.")).to_be_visible()
    reverts: list[str] = []
    page.on("request", lambda r: reverts.append(r.url) if r.url.endswith("/revert") else None)
    page.once("dialog", lambda dialog: dialog.dismiss())  # revert asks first: no
    history.first.get_by_role("button", name="Revert").click()  # (the handler ran in it)
    assert reverts == []
    assert (
        "width 8"
        in httpx.get(
            f"{daemon.url}/v1/memory/blocks/style", params={"repo_root": ROOT, "track": "false"}
        ).json()["body"]
    )
    page.once("dialog", lambda dialog: dialog.accept())
    history.first.get_by_role("button", name="Revert").click()
    expect(page.locator("#notice")).to_have_text("Reverted memory.edit.")
    expect(page.locator("#block-style .block-body")).to_contain_text("Use spaces.")
    shot(page, "memory")


def test_the_journal_pages_filters_links_and_shows_what_was_reverted(
    page: Page, daemon: Daemon
) -> None:
    sid = post(daemon, "/v1/sessions", {"repo_root": ROOT, "title": "Journaled"})["id"]
    for n in range(55):
        post(daemon, "/v1/memory/blocks", {"name": f"fact-{n}", "content": f"Fact {n}."})
    first = httpx.get(f"{daemon.url}/v1/journal", params={"op": "memory.write"}).json()
    undone = first["items"][0]
    httpx.post(f"{daemon.url}/v1/journal/{undone['id']}/revert")
    page.goto(f"{daemon.url}/#/journal")
    ready(page, "/journal")
    items = page.locator("#journal-list > li")
    expect(items).to_have_count(50)
    expect(items.first).to_contain_text("memory.revert")
    page.locator("#journal-older").click()
    expect(items).to_have_count(57)
    gone = page.locator(f'#journal-list li[data-id="{undone["id"]}"]')
    expect(gone.locator(".reverted")).to_be_visible()
    created = page.locator('#journal-list li[data-op="session.created"]')
    expect(created.locator("a.target-link")).to_have_attribute("href", f"#/session/{sid}")
    # named by its title, not its id (the id on hover)
    expect(created.locator("a.target-link")).to_have_text("Journaled")
    expect(created.locator("a.target-link")).to_have_attribute("title", sid)
    gone.get_by_role("button", name="Diff").click()
    expect(gone.locator(".diff .add", has_text=re.compile(r"^\+ Fact 0\."))).to_be_visible()
    fact = page.locator('#journal-list li[data-op="memory.write"]').first
    expect(fact.locator("a.target-link")).to_have_attribute(
        "href", re.compile(r"#/memory\?repo_root=&block=fact-54$|#/memory\?block=fact-54$")
    )

    page.locator("#journal-actor").select_option("watcher")
    expect(page).to_have_url(re.compile("actor=watcher"))
    ready(page, "/journal")
    expect(items).to_have_text(["No changes match."])
    page.locator("#journal-actor").select_option("")
    expect(page).not_to_have_url(re.compile("actor="))
    ready(page, "/journal")
    page.locator("#journal-op").select_option("session")
    expect(page).to_have_url(re.compile("op=session"))
    ready(page, "/journal")
    expect(items).to_have_count(1)
    expect(items.first).to_contain_text("session.created")
    post(daemon, "/v1/sessions", {"repo_root": ROOT})  # arrives live, filtered
    expect(items).to_have_count(2, timeout=10_000)
    shot(page, "journal")


def test_search_filters_and_shows_the_project_of_every_hit(page: Page, daemon: Daemon) -> None:
    mine = post(daemon, "/v1/sessions", {"repo_root": ROOT, "title": "Websocket flake"})["id"]
    post(
        daemon,
        f"/v1/sessions/{mine}/events",
        [user("why does the websocket zebra test flake?"), assistant("The zebra deadline.")],
    )
    other = post(daemon, "/v1/sessions", {"repo_root": "/srv/elsewhere"})["id"]
    post(daemon, f"/v1/sessions/{other}/events", user("a zebra elsewhere"))
    post(
        daemon,
        "/v1/memory/blocks",
        {"name": "zebra", "content": "Zebra deadlines."},
        repo_root=ROOT,
    )
    page.goto(f"{daemon.url}/#/")
    ready(page, "/")
    page.keyboard.press("/")
    page.keyboard.type("zebra")
    page.keyboard.press("Enter")
    ready(page, "/search")
    assert page.title().startswith("Search: zebra")
    hits = page.locator("#search-results li[data-kind]")
    expect(hits).to_have_count(4)
    group = page.locator(f'#search-results li.session-group[data-session="{mine}"]')
    expect(group.locator("a.session-link")).to_have_text("Websocket flake")  # hits grouped
    expect(group.locator("li[data-kind]")).to_have_count(2)
    expect(group).to_contain_text("2 hits")
    expect(page.locator("#search-results .project")).to_have_count(3)  # 2 sessions, 1 block
    expect(page.locator('#search-results li[data-kind="block"] .project')).to_have_text("dashboard")
    page.locator("#search-role").select_option("assistant")
    ready(page, "/search")
    expect(hits).to_have_count(2)  # the assistant's turn, and the memory block
    page.locator("#search-role").select_option("")
    page.locator("#search-repo_root").select_option("/srv/elsewhere")
    ready(page, "/search")
    expect(page.locator("#search-results a.hit", has_text="#")).to_have_count(1)
    page.locator("#search-kind").select_option("memory")
    page.locator("#search-repo_root").select_option(ROOT)
    ready(page, "/search")
    expect(hits).to_have_count(1)
    shot(page, "search")
    page.locator('input[name="since"]').fill("2999-01-01")  # after every hit
    page.locator('input[name="since"]').dispatch_event("change")
    expect(page).to_have_url(re.compile("since=2999-01-01"))
    ready(page, "/search")
    expect(page.locator("#search-results li")).to_have_text(["Nothing found."])
    page.go_back()
    expect(page).not_to_have_url(re.compile("since="))
    ready(page, "/search")
    hits.first.locator("a.hit").click()
    ready(page, "/memory")
    expect(page.locator("#scope-picker")).to_have_value(ROOT)  # the block's own scope
    expect(page.locator("#block-zebra")).to_have_class(re.compile(r"\btarget\b"))


def test_a_block_archives_restores_and_is_forgotten_from_the_page(
    page: Page, daemon: Daemon
) -> None:
    page.on("dialog", lambda dialog: dialog.accept())  # the confirm() before forgetting
    post(daemon, "/v1/sessions", {"repo_root": ROOT})
    post(daemon, "/v1/memory/blocks", {"name": "ci", "content": "CI runs on push."}, repo_root=ROOT)
    page.goto(f"{daemon.url}/#/memory?repo_root={ROOT}")
    ready(page, "/memory")
    context = page.locator("#memory-context")
    page.locator("#block-ci").get_by_role("button", name="Archive").click()
    expect(page.locator("#block-ci .badge")).to_have_text("archived")
    expect(page.locator("#block-ci .block-body")).to_contain_text("CI runs on push.")
    expect(context).not_to_contain_text("- ci:")
    page.locator("#block-ci").get_by_role("button", name="Restore").click()
    expect(context).to_contain_text("- ci:")
    page.locator("#block-ci").get_by_role("button", name="Forget").click()
    expect(page.locator("#block-ci")).to_have_count(0)
    expect(context).not_to_contain_text("- ci:")
    page.goto(f"{daemon.url}/#/journal?op=memory.delete")
    ready(page, "/journal")
    entry = page.locator('#journal-list li[data-op="memory.delete"]').first
    entry.get_by_role("button", name="Revert").click()
    expect(page.locator("#notice")).to_contain_text("Reverted memory.delete")
    expect(entry.locator(".reverted")).to_be_visible()  # told by the feed
    page.goto(f"{daemon.url}/#/memory?repo_root={ROOT}")
    ready(page, "/memory")
    page.locator("#block-ci").get_by_role("button", name="History").click()
    ops = page.locator("#block-ci ol.journal li")
    expect(ops).to_have_count(5)  # write, archive, restore, delete, revert: newest first
    expect(ops.first).to_contain_text("memory.revert")
    expect(ops.first).to_contain_text("dashboard")


def test_an_editor_opened_while_the_blocks_are_drawn_again_stays_open(
    page: Page, daemon: Daemon
) -> None:
    """Edit reads the block first; a change that arrives meanwhile draws the blocks again.
    The editor opens on the block shown, not on one the redraw took away."""
    post(daemon, "/v1/sessions", {"repo_root": ROOT})
    post(daemon, "/v1/memory/blocks", {"name": "style", "content": "Use tabs."}, repo_root=ROOT)
    post(daemon, "/v1/memory/blocks", {"name": "other", "content": "One."}, repo_root=ROOT)
    page.goto(f"{daemon.url}/#/memory?repo_root={ROOT}")
    ready(page, "/memory")
    expect(page.locator("#block-style .block-body")).to_contain_text("Use tabs.")
    held: list[object] = []
    page.route("**/v1/memory/blocks/style?*track=false*", lambda route: held.append(route))
    page.locator("#block-style").get_by_role("button", name="Edit").click()
    for _ in range(100):  # the editor's read of the block is held
        if held:
            break
        page.wait_for_timeout(20)
    assert held
    drawn = page.locator("#block-other").element_handle()
    block_put(daemon, "other", "Two.\n")  # the feed draws the blocks again
    page.wait_for_function("e => !e.isConnected", arg=drawn)
    held[0].continue_()  # type: ignore[attr-defined]
    form = page.locator("#block-style form.block-form")
    expect(form).to_be_visible()
    form.locator('textarea[name="body"]').fill("Use tabs, width 8.")
    form.get_by_role("button", name="Save block").click()
    expect(page.locator("#notice")).to_have_text("Saved style.")


def test_a_new_block_is_added_from_the_page_and_a_name_taken_is_refused_where_typed(
    page: Page, daemon: Daemon
) -> None:
    post(daemon, "/v1/sessions", {"repo_root": ROOT})
    post(
        daemon,
        "/v1/memory/blocks",
        {"name": "deploy", "content": "Deploy on Fridays."},
        repo_root=ROOT,
    )
    page.goto(f"{daemon.url}/#/memory?repo_root={ROOT}")
    ready(page, "/memory")
    page.get_by_role("button", name="New block").click()
    form = page.locator("#new-block form")
    expect(form.locator('input[name="name"]')).to_be_focused()
    form.locator('input[name="name"]').fill("release")
    form.locator('input[name="description"]').fill("how to release")
    form.locator('input[name="tags"]').fill("ci, release")
    form.locator('input[name="importance"]').fill("0.8")
    form.locator("textarea").fill("Tag the commit, then run make release.")
    form.get_by_role("button", name="Add block").click()
    expect(page.locator("#block-release")).to_contain_text("how to release")
    expect(page.locator("#new-block form")).to_have_count(0)
    made = httpx.get(f"{daemon.url}/v1/memory/blocks/release", params={"repo_root": ROOT}).json()
    assert made["body"].strip() == "Tag the commit, then run make release."
    assert made["tags"] == ["ci", "release"] and made["importance"] == 0.8
    journal = httpx.get(f"{daemon.url}/v1/journal", params={"name": "release"}).json()
    assert [e["actor"] for e in journal["items"] if e["op"] == "memory.write"] == ["dashboard"]

    page.get_by_role("button", name="New block").click()  # a name taken: refused, kept
    form.locator('input[name="name"]').fill("deploy")
    form.locator("textarea").fill("Deploy any day.")
    form.get_by_role("button", name="Add block").click()
    expect(form.locator(".form-error")).to_contain_text("deploy")
    kept = httpx.get(f"{daemon.url}/v1/memory/blocks/deploy", params={"repo_root": ROOT}).json()
    assert kept["body"].strip() == "Deploy on Fridays."
    form.locator('input[name="name"]').fill("Not A Name")  # the page refuses it first
    form.get_by_role("button", name="Add block").click()
    assert form.locator('input[name="name"]').evaluate("i => i.validity.patternMismatch")
    expect(page.locator("#block-not-a-name")).to_have_count(0)
    form.get_by_role("button", name="Cancel").click()
    expect(page.locator("#new-block form")).to_have_count(0)
