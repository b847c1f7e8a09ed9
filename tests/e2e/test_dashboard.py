"""The dashboard served safely: every ES module it imports is served as JavaScript
under the same policy from the daemon itself, names that are not its files are refused,
and no view logs a console error. (Its views are tested in test_dashboard_*.py.)"""

from __future__ import annotations

import re
from importlib import resources
from urllib.parse import urljoin

import httpx
from playwright.sync_api import ConsoleMessage, Page, Response, expect

from ..conftest import Daemon, assistant, user
from .dashboard import ROOT, browser, page, post, ready

__all__ = ["browser", "page"]  # fixtures
MODULE_SCRIPT = re.compile(r'<script type="module" src="([^"]+)"')
IMPORT = re.compile(
    r'^(?:import|export)\s(?:[^;"\']*\sfrom\s)?\s*["\']([^"\']+)["\']', re.MULTILINE
)


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


UNKNOWN = [
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
]


def test_an_unknown_or_traversal_name_is_refused(daemon: Daemon) -> None:
    for name in UNKNOWN:  # one daemon for them all
        r = httpx.get(f"{daemon.url}/ui/{name}")
        assert r.status_code == 404, (name, r.text)
        assert r.headers["content-type"] == "application/problem+json", name
        assert r.json()["status"] == 404 and r.json()["code"] == "not_found", name


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
