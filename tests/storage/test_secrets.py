"""The secret scanner itself: each detect-secrets plugin it relies on really runs, on any
number of threads, without touching detect-secrets' settings or the network; findings
name the place and never hold the secret; ids and hashes are never taken for one; and a
scan stays linear on hostile lines."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from ulid import ULID

from aster_persist import secrets
from aster_persist.errors import SecretDetected
from aster_persist.secrets import (
    plugin_spans,
    refuse_document,
    refuse_journaled,
    refuse_secrets,
    scan_document,
    scan_text,
    withheld,
)

CORPUS = Path(__file__).parents[1] / "proof" / "corpus"


def cut(text: str) -> str:
    """The corpora's secrets are cut by ¦ so the repository holds none: join them."""
    return text.replace("¦", "")


# One line per plugin that the plugin itself finds (made-up values, cut by ¦).
PLUGIN_SAMPLES = {
    "AWSKeyDetector": "AWS_ACCESS_KEY_ID=AKIA¦UJZDE8GXD6NCF10E",
    "ArtifactoryDetector": "X-JFrog-Art-Api: AKC¦JhqAo0iEFJdED5jSFpFk",
    "AzureStorageKeyDetector": "AccountName=acme;AccountKey=FEcUWWv04h+P9sI1YVvE0k/SzW4WDLR5Ml"
    "+K63Ix¦Ul285XkHoWk/z6DEZwpgCHYQzesPQTG/EOabVlxFVfX0nQ==;",
    "BasicAuthDetector": "https://deploy:Qx7pL2¦vR9mKd@pypi.internal.example.com/simple/",
    "CloudantDetector": "cloudant_password f4f50947aaeb26c57d21fa5d328263dfe574de739988b886e75774"
    "96a2c8¦7731",
    "DiscordBotTokenDetector": "M4sohdmM0Lm7exG3lCMqXXQ8¦.agOMTN.wncxvjcnqcMUP6n0a0uARxlNten",
    "GitHubTokenDetector": "ghp_¦AIxNKu8iS2G8NPRVdD53X83RZJzzzzgEOzdm",
    "GitLabTokenDetector": "glpat-¦w3QlY7Zkuvqdt7s8Stqc",
    "IbmCloudIamDetector": 'ibm_cloud_iam_api_key = "X9MGE2sNVbYAbBHXgwET¦dIKnT30fK0skBaHmsWWdawFg"',
    "IbmCosHmacDetector": "cos_hmac_secret_access_key: f4f50947aaeb26c57d21fa5d3282¦63dfe574de73"
    "9988b886",
    "JwtTokenDetector": "eyJhbGciOiAibm9uZSJ9.¦eyJzdWIiOiAiYWRtaW4iLCAicm9sZSI6ICJvd25lciJ9.",
    "MailchimpDetector": "fx6kjwsk7kegy5mt¦ic4udyfkozm4lncz-us21",
    "NpmDetector": "//registry.npmjs.org/:_authToken=npm_¦FmtX0moDoqW4sg8NFNl5oFA6Qd8Mj7zdnbMj",
    "OpenAIDetector": "sk-¦Snovm14TUOizwd1iaeOVT3BlbkFJ4qBkdfQ1y3GQsMpSscDl",
    "PrivateKeyDetector": "PuTTY-User-¦Key-File-2: ssh-rsa",
    "PypiTokenDetector": "pypi-AgEIcHlwaS5vcmc¦uXTptFyfePpX6N1NF2XV54wca-7E56w8ZniqT3Ul4ffqkOkgWrd"
    "ioyq-KvCiSGuPJ6sG9AHEOVezxZuJ",
    "SendGridDetector": "SG.¦iYXjU2JgJngKtFI3OyV2dZ.Akg05rK-gqv81RKMGHZEM9YpvujA_C5Q52ryFlwRlOE",
    "SlackDetector": "xoxb-¦2048193027-5810235566-IjHGb3CXlMaXZjljENUhJduR",
    "SoftlayerDetector": "https://api.softlayer.com/soap/v3/4e3248c801bef750110c57513064d6d5"
    "9291f0cde2e57387¦13a818d896205876",
    "SquareOAuthDetector": "sq0csp-¦PWvHogU5nGYVHWVsUQk4DwgLGNOaeCtL31Ugq-Dfcga",
    "StripeDetector": "sk_live_¦q4i9DoV8gz4FkQ1okTBGzvAm",
    "TelegramBotTokenDetector": "507871616:¦tluYI0KN1gNT11cUzYZAa3u2olZU6uqbgsY",
    "TwilioKeyDetector": "AC¦b860dcd6c8a1f8b46287cced9041dff0",
}


def test_every_plugin_relied_on_has_a_sample() -> None:
    assert set(PLUGIN_SAMPLES) == {name for name, *_ in secrets.PLUGINS}


@pytest.mark.parametrize("plugin", sorted(PLUGIN_SAMPLES))
def test_each_detect_secrets_plugin_fires(plugin: str) -> None:
    line = cut(PLUGIN_SAMPLES[plugin])
    assert plugin in {name for name, *_ in plugin_spans(line)}
    assert scan_text(line), "and the whole scan refuses it"


ONLY_PLUGINS = [
    "ArtifactoryDetector",
    "CloudantDetector",
    "DiscordBotTokenDetector",
    "MailchimpDetector",
    "SoftlayerDetector",
    "SquareOAuthDetector",
    "TelegramBotTokenDetector",
]


@pytest.mark.parametrize("plugin", ONLY_PLUGINS)
def test_the_plugins_find_what_the_rules_do_not(plugin: str) -> None:
    line = cut(PLUGIN_SAMPLES[plugin])
    layers = (secrets.rule_spans, secrets.assignment_spans, secrets.prose_spans)
    assert not [span for layer in layers for span in layer(line)]
    assert scan_text(line)


def test_a_key_header_pasted_without_its_dashes_is_found_by_the_plugin() -> None:
    line = "BEGIN RSA PRIVATE " + "KEY (pasted without the dashes)"
    assert not list(secrets.rule_spans(line))
    assert [f.kind for f in scan_text(line)] == ["private key"]


def test_no_detect_secrets_setting_is_read_changed_or_needed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The plugins run from their own patterns: with detect-secrets' process-wide settings
    emptied (as they are in a fresh process) they still fire, the settings are left as
    they were, and nothing is verified over the network."""
    import requests
    from detect_secrets.settings import get_settings

    def no_network(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a scan must never reach the network")

    monkeypatch.setattr(requests.Session, "request", no_network)
    get_settings().clear()
    before = get_settings().json()
    found = {name for line in PLUGIN_SAMPLES.values() for name, *_ in plugin_spans(cut(line))}
    assert found == set(PLUGIN_SAMPLES)
    assert get_settings().json() == before


def test_scans_agree_on_many_threads_while_detect_secrets_settings_change() -> None:
    """The daemon scans on the writer thread, the event loop and workers at once; another
    part of the process may use detect-secrets' settings meanwhile."""
    from detect_secrets.settings import transient_settings

    notes = cut((CORPUS / "secret_forms.txt").read_text()).splitlines()[3:]
    notes += (CORPUS / "ordinary_notes.md").read_text().split("\n%%\n")
    expected = [scan_text(n) for n in notes]
    stop = threading.Event()

    def churn() -> None:
        while not stop.is_set():
            with transient_settings({"plugins_used": [{"name": "KeywordDetector"}]}):
                pass

    churner = threading.Thread(target=churn)
    churner.start()
    try:
        for _ in range(3):
            secrets.scan_short_line.cache_clear()
            secrets.scan_small_document.cache_clear()
            with ThreadPoolExecutor(8) as pool:
                assert list(pool.map(scan_text, notes)) == expected
    finally:
        stop.set()
        churner.join()


def test_a_finding_names_kind_and_place_never_the_secret() -> None:
    token = cut("ghp_¦AIxNKu8iS2G8NPRVdD53X83RZJzzzzgEOzdm")
    text = f"Deploy notes.\nThe CI token is {token} for now."
    (finding,) = scan_text(text, "content")
    assert (finding.kind, finding.field, finding.line, finding.column) == (
        "GitHub token",
        "content",
        2,
        17,
    )
    assert token not in str(finding.public())
    with pytest.raises(SecretDetected) as refused:
        refuse_secrets({"content": text})
    assert token not in refused.value.detail and token not in str(refused.value.errors)
    assert "content line 2 looks like a GitHub token" in refused.value.detail


def test_a_document_names_the_frontmatter_key_and_the_line_in_the_file() -> None:
    password = cut("Qx7pL2¦vR9mKd")
    text = (
        "---\n"
        "name: deploy\n"
        f"description: staging db password: {password}\n"
        "tags: [ops]\n"
        f"extra: {{nested: [{cut('sk_live_¦q4i9DoV8gz4FkQ1okTBGzvAm')}]}}\n"
        "---\n"
        "Body line one.\n"
        f"export GITHUB_TOKEN={cut('ghp_¦AIxNKu8iS2G8NPRVdD53X83RZJzzzzgEOzdm')}\n"
    )
    found = [(f.field, f.line, f.kind) for f in scan_document(text)]
    assert found == [
        ("description", 3, "password assignment"),
        ("extra", 5, "Stripe key"),
        ("content", 8, "GitHub token"),
    ]
    with pytest.raises(SecretDetected) as refused:
        refuse_document(text.encode(), "block 'deploy'")
    assert "block 'deploy' description line 3" in refused.value.detail
    assert password not in refused.value.detail


def test_a_value_escaped_by_yaml_is_scanned_as_yaml_reads_it() -> None:
    """A YAML escape can glue a token to the letter before it (``\\nghp_…``); the value as
    YAML reads it is scanned too."""
    token = cut("ghp_¦AIxNKu8iS2G8NPRVdD53X83RZJzzzzgEOzdm")
    text = f'---\nnote: "first line\\n{token}"\n---\nbody\n'
    assert not scan_text(text.splitlines()[1]), "the raw line hides it"
    assert [(f.field, f.kind) for f in scan_document(text)] == [("note", "GitHub token")]


def test_ids_and_hashes_are_never_taken_for_secrets() -> None:
    """Session ids (ULIDs) are scanned as ``source_session``; none of these may be refused."""
    samples = [str(ULID()) for _ in range(5000)]
    samples += [str(uuid.uuid4()) for _ in range(2000)]
    samples += [hashlib.sha1(os.urandom(8)).hexdigest() for _ in range(2000)]
    samples += [hashlib.sha256(os.urandom(8)).hexdigest() for _ in range(2000)]
    encoded = [base64.b64encode(os.urandom(n % 57 + 8)).decode() for n in range(3000)]
    # Base64 that begins with "AP" and a hex digit has the shape of an Artifactory
    # password (detect-secrets' format), which one in about 16,000 random values has:
    # it is taken for one, as the real thing would be, and left out of what must pass.
    shaped = re.compile(r"AP[\dA-F][a-zA-Z0-9]{8,}")
    samples += [s for s in encoded if not shaped.match(s)]
    assert [s for s in samples if scan_text(s)] == []
    assert scan_text("APF4qqVoGyLWIF1ZRobZMHiEplYxjj3dkj2Tke5p200M8BH9kjCsxz7IZqyK44wzNdTn")


def test_the_journal_keeps_no_content_that_holds_a_secret() -> None:
    token = cut("glpat-¦w3QlY7Zkuvqdt7s8Stqc")
    data = f"- clone with {token}\n".encode()
    state = withheld("memory/ASTER.md", data)
    assert state is not None and "content" not in state and token not in str(state)
    assert state["sha256"] == hashlib.sha256(data).hexdigest()
    assert [f["kind"] for f in state["secrets"]] == ["GitLab token"]
    assert withheld("memory/ASTER.md", b"- nothing to hide\n") is None
    with pytest.raises(SecretDetected):
        refuse_journaled(state)
    with pytest.raises(SecretDetected):  # an entry written before secrets were withheld
        refuse_journaled({"path": "memory/ASTER.md", "content": data.decode()})
    refuse_journaled({"path": "memory/ASTER.md", "content": "- clean\n"})


HOSTILE = [
    "a_" * 50_000,
    "//" * 50_000,
    "password=" * 12_000,
    '"password": "' * 8_000,
    'token="' * 15_000,
    "--password " * 10_000,
    "the password is " * 8_000,
    "eyJ." * 25_000,
    "http://a:b" * 10_000,
    "a:b@" * 25_000,
    "sk-" * 30_000,
    "AKIA" * 25_000,
    "authorization: bearer " * 5_000,
]


@pytest.mark.parametrize("line", HOSTILE, ids=lambda line: repr(line[:12]))
def test_a_scan_stays_linear_on_hostile_lines(line: str) -> None:
    """About 100 000 characters each: a quadratic pattern would take minutes."""
    start = time.perf_counter()
    secrets.scan_line(line)
    assert time.perf_counter() - start < 10
