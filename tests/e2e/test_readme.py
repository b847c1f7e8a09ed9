"""The README's quick-start curl block works as written against a real daemon."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import httpx
import orjson
import pytest

from ..conftest import Daemon

README = Path(__file__).parents[2] / "README.md"


def test_readme_curl_examples(daemon: Daemon) -> None:
    if shutil.which("curl") is None:
        pytest.fail("curl is needed to run the README's examples")
    text = README.read_text()
    block = re.search(r"works as written\):\n\n```sh\n(.*?)```", text, re.S)
    assert block is not None, "the README's curl block is missing"
    script = block.group(1).replace("localhost:4627", f"127.0.0.1:{daemon.port}")
    script = "set -euo pipefail\n" + script.replace("curl -s", "curl -sf") + '\necho "SID=$SID"\n'
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr + done.stdout
    sid = done.stdout.strip().rsplit("SID=", 1)[1]
    session = httpx.get(f"{daemon.url}/v1/sessions/{sid}").json()
    assert (session["title"], session["events"], session["state"]) == ("main.rs tour", 5, "ok")
    messages = httpx.get(
        f"{daemon.url}/v1/sessions/{sid}/messages", params={"view": "context"}
    ).json()
    assert [m["role"] for m in messages["messages"]] == ["user", "assistant", "tool", "assistant"]
    hits = httpx.get(f"{daemon.url}/v1/search", params={"q": "what is the entrypoint"}).json()
    assert (hits["items"][0]["session_id"], hits["items"][0]["seq"]) == (sid, 4)
    exported = httpx.get(f"{daemon.url}/v1/sessions/{sid}/export").content
    assert orjson.loads(exported.splitlines()[2])["idempotency_key"] == "turn-1"


def test_readme_settings_table_matches_the_settings() -> None:
    """Every setting is in the README's table with its default, and nothing else is."""
    from aster_persist.settings import Settings

    rows = dict(re.findall(r"^\| `ASTER_([A-Z_]+)` \| ([^|]+) \|", README.read_text(), re.M))
    fields = Settings.model_fields
    assert set(rows) == {name.upper() for name in fields}
    for name, field in fields.items():
        default = field.default
        if default is None or not isinstance(default, (bool, int, float, str)):
            continue  # documented in words (derived, or empty)
        shown = str(default).lower() if isinstance(default, bool) else str(default)
        if isinstance(default, float) and default.is_integer():
            shown = str(int(default))
        assert rows[name.upper()].strip() == f"`{shown}`", name
