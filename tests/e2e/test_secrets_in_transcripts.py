"""A secret in a transcript is kept, and never handed on: a live daemon (with a scripted
model) keeps a key pasted into a chat and one printed by a tool exactly on disk and in the
raw event routes, counts them in the summary, lists the session with `has_secrets`, and
redacts them in every view that hands text to another party: search, MCP tools and
resources, exports (unless raw), the event routes and streams asked to, the learner's
prompt, titles and the logs."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client

from aster_persist.secrets.redact import Redacting, findings, might_hold, redact_text
from aster_persist.secrets.scan import line_secrets

from ..conftest import Daemon, assistant, call, tool, user, wait_until
from ..model_server import Reply, ScriptedModel

ROOT = "/srv/secrets"
# Made up, and cut in two so this file holds nothing shaped like a secret itself.
TOKEN = "ghp_" + "AIxNKu8iS2G8NPRV" + "dD53X83RZJzzzzgEOzdm"
AWS = "2O76UMFxFkM+R5Kjp" + "1vRt/1fjORS+6ilI8ihN5KX"
CORPUS = Path(__file__).parents[1] / "proof" / "corpus"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def learning(home: Path, model: ScriptedModel) -> Iterator[Daemon]:
    daemon = Daemon(
        home,
        env={
            "ASTER_LLM_BASE_URL": model.url,
            "ASTER_LLM_MODEL": "scripted-1",
            "ASTER_LLM_API_KEY": "test-key",
            "ASTER_LLM_RETRIES": "1",
        },
    ).start()
    yield daemon
    daemon.kill()


def sessions_with_and_without(daemon: Daemon) -> tuple[str, str]:
    """One session holding two secrets (the user's and a tool's), one holding none."""

    def made(events: list[dict[str, Any]]) -> str:
        r = httpx.post(f"{daemon.url}/v1/sessions", json={"repo_root": ROOT})
        sid = str(r.json()["id"])
        r = httpx.post(f"{daemon.url}/v1/sessions/{sid}/events", json=events)
        assert r.status_code == 201, r.text
        return sid

    leaky = made(
        [
            user(f"Deploy with my token {TOKEN} please, the staging cluster"),
            assistant(None, [call("c1", "bash", '{"cmd": "cat ~/.aws/credentials"}')]),
            tool("c1", f"[default]\naws_secret_access_key = {AWS}\nregion = eu-west-1"),
            assistant("Deployed to the staging cluster."),
        ]
    )
    clean = made([user("Deploy the staging cluster"), assistant("Deployed.")])
    wait_until(lambda: httpx.get(f"{daemon.url}/v1/sessions/{leaky}").json()["secrets"] == 2)
    return leaky, clean


def test_kept_exactly_counted_listed_and_redacted_in_every_view(
    learning: Daemon, model: ScriptedModel
) -> None:
    model.then("memory_items", Reply(f"I will not keep {TOKEN}: it is a secret"))
    leaky, clean = sessions_with_and_without(learning)
    url = learning.url
    stored = (learning.home / "sessions").rglob(f"{leaky}.jsonl")
    assert (
        TOKEN in next(stored).read_text()
        and AWS in httpx.get(f"{url}/v1/sessions/{leaky}/events").text
    )  # kept as it came, on disk and in the raw route

    # counted, and listed
    assert httpx.get(f"{url}/v1/sessions/{clean}").json()["secrets"] == 0
    listed = httpx.get(f"{url}/v1/sessions", params={"has_secrets": "true"}).json()["items"]
    assert [s["id"] for s in listed] == [leaky] and listed[0]["secrets"] == 2
    others = httpx.get(f"{url}/v1/sessions", params={"has_secrets": "false"}).json()["items"]
    assert [s["id"] for s in others] == [clean]
    assert TOKEN not in httpx.get(f"{url}/v1/sessions").text  # nor in a title

    # the event routes and the stream, asked to
    shown = httpx.get(f"{url}/v1/sessions/{leaky}/events", params={"redact": "true"}).text
    assert TOKEN not in shown and AWS not in shown
    assert "[redacted: github-token]" in shown and "[redacted: aws-secret-access-key]" in shown
    with httpx.stream(
        "GET", f"{url}/v1/sessions/{leaky}/events/stream", params={"redact": "true"}, timeout=10
    ) as stream:
        first = next(stream.iter_text())
    assert "data:" in first and TOKEN not in first and "[redacted: github-token]" in first
    messages = httpx.get(f"{url}/v1/sessions/{leaky}/messages", params={"redact": "true"}).text
    assert TOKEN not in messages and AWS not in messages

    # search: neither found by the secret, nor shown in a snippet
    hits = httpx.get(f"{url}/v1/search", params={"q": "token staging"}).json()["items"]
    assert hits and all(TOKEN not in json.dumps(h) for h in hits)
    assert any("[redacted: github-token]" in h["snippet"] for h in hits)
    assert httpx.get(f"{url}/v1/search", params={"q": TOKEN[4:]}).json()["items"] == []

    # exports: redacted unless raw, from the API and the CLI
    raw = httpx.get(f"{url}/v1/sessions/{leaky}/export").text
    assert TOKEN in raw
    redacted = httpx.get(f"{url}/v1/sessions/{leaky}/export", params={"redact": "true"}).text
    assert TOKEN not in redacted and AWS not in redacted
    assert len(redacted.splitlines()) == len(raw.splitlines())  # every line, redacted
    openai = httpx.get(
        f"{url}/v1/sessions/{leaky}/export", params={"format": "openai", "redact": "true"}
    ).text
    assert TOKEN not in openai and "[redacted: github-token]" in openai
    env = {**os.environ, "ASTER_URL": url}
    command = [sys.executable, "-m", "aster_persist", "sessions", "export", leaky]
    cli = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
    assert (
        cli.returncode == 0 and TOKEN not in cli.stdout and "[redacted: github-token]" in cli.stdout
    )
    cli = subprocess.run([*command, "--raw"], capture_output=True, text=True, env=env, timeout=60)
    assert cli.returncode == 0 and cli.stdout == raw

    # the learner's prompt
    r = httpx.post(f"{url}/v1/sessions/{leaky}/extract", json={})
    assert r.status_code in (200, 202), r.text

    def sent() -> str | None:  # the prompt of the leaky session's turn
        prompts = [model.prompt(r) for r in model.of("memory_items")]
        return next((p for p in prompts if "Deployed to the staging cluster" in p), None)

    prompt = wait_until(sent, timeout=30)
    assert TOKEN not in prompt and AWS not in prompt and "[redacted: github-token]" in prompt

    # nor the extraction errors (a reply quoting one), the journal or the feed
    failed = wait_until(lambda: httpx.get(f"{url}/v1/extraction").json()["last_errors"])
    assert "[redacted: github-token]" in json.dumps(failed) and TOKEN not in json.dumps(failed)
    assert TOKEN not in httpx.get(f"{url}/v1/journal", params={"limit": 500}).text
    with httpx.stream("GET", f"{url}/v1/events", params={"after": "0" * 26}, timeout=10) as feed:
        replayed = next(feed.iter_text())
    assert "data:" in replayed and TOKEN not in replayed

    # and no log line ever held one
    assert TOKEN not in learning.output() and AWS not in learning.output()


@pytest.mark.anyio
async def test_mcp_tools_and_resources_redact(learning: Daemon) -> None:
    leaky, _clean = sessions_with_and_without(learning)
    async with Client(f"{learning.url}/mcp", mode="legacy") as mcp:
        got = await mcp.call_tool("get_session", {"session_id": leaky})
        text = json.dumps([c.model_dump() for c in got.content]) + json.dumps(
            got.structured_content
        )
        assert TOKEN not in text and AWS not in text and "[redacted: github-token]" in text
        found = await mcp.call_tool("search_sessions", {"query": "token staging"})
        assert "[redacted: github-token]" in found.content[0].text  # type: ignore[union-attr]
        assert TOKEN not in json.dumps(found.structured_content)
        resource = (await mcp.read_resource(f"aster://sessions/{leaky}")).contents[0]
        body = resource.text  # type: ignore[union-attr]
        assert TOKEN not in body and AWS not in body and "[redacted: aws-secret-access-key]" in body


def forms() -> list[str]:
    """Every line of the secret corpus (one secret each) and of the ordinary notes."""
    lines = []
    for row in (CORPUS / "secret_forms.txt").read_text().splitlines():
        if row and not row.startswith("#"):
            lines += row.split("\t", 1)[1].replace("¦", "").split("⏎")
    lines += (CORPUS / "ordinary_notes.md").read_text().splitlines()
    return lines


def test_the_fast_reading_finds_what_the_scan_finds_on_every_corpus_line() -> None:
    """Redaction reads only the windows around a word or shape a secret needs: on every
    line of both corpora, and on those lines inside longer text, it finds exactly what
    the scan of the whole line finds."""
    for line in forms():
        whole = [(kind, start, end) for kind, start, end in line_secrets(line)]
        assert findings(line) == whole, line
        if whole:
            assert might_hold(line), line
        long_run = "z" * 2000  # a run longer than a window: its ends are read
        for padded in (
            "x " * 400 + line + " y" * 400,
            "x " * 400 + line,
            f"{line}\n" * 3,
            f"{long_run} {line} {long_run}",
            f"{long_run}{line}{long_run}",  # inside a longer run: no secret
        ):
            assert findings(padded) == _whole_lines(padded), line  # inside longer text


def _whole_lines(text: str) -> list[tuple[str, int, int]]:
    """What the scan finds reading each line of ``text`` whole, placed in ``text``."""
    out, at = [], 0
    for line in text.split("\n"):
        out += [(kind, at + start, at + end) for kind, start, end in line_secrets(line)]
        at += len(line) + 1
    return out


def test_a_log_record_holding_a_secret_is_written_redacted(tmp_path: Path) -> None:
    path = tmp_path / "log"
    handler = logging.FileHandler(path)
    handler.addFilter(Redacting())
    logger = logging.getLogger("aster_persist.test_redacting")
    logger.addHandler(handler)
    try:
        logger.warning("could not parse %r", f"token {TOKEN}")
        try:
            raise ValueError(f"bad body: aws_secret_access_key = {AWS}")
        except ValueError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
        handler.close()
    written = path.read_text()
    assert TOKEN not in written and AWS not in written
    assert written.count("[redacted:") == 2 and "ValueError" in written
    assert redact_text("nothing here")[1] == 0
