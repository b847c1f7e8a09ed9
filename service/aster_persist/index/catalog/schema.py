"""The catalog's SQLite schema, and how a session's summary becomes a row and back.

A schema of another version is never migrated: the catalog is rebuilt from the files.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import orjson

from ...storage.summary import SessionInfo, Stats
from .. import search
from ..ranking import NUMBER_OF
from ..sqlite import sqlite3

SCHEMA_VERSION = 14  # 14: sessions with no times of their own listed after those with; 13: what the turns cost by day and model; 12: the machine a team's copy belongs to, and its project; 11: the session a copy refers to, the files imported; 10: no copy of the text, where each line is, sessions by number; 9: each document's secrets, redacted; 5: where a session came from, what it is made of; 6: its alias, and where its title came from; 7: its events by day; 8: document numbers never reused
COLUMNS = (
    "id",
    "slug",
    "repo_root",
    "created_at",
    "updated_at",
    "events",
    "last_seq",
    "header_title",
    "title_event",
    "first_user",
    "title_seq",
    "first_user_seq",
    "state",
    "bad_lines",
    "offset",
    "lines",
    "file_size",
    "file_mtime_ns",
    "source_tool",
    "git_branch",
    "source_key",
    "parent_source",
    "alias",
    "first_record",
    "base",
    "machine",
    "project_key",
    "undated",
    "stats",
    "activity_at",
)
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    slug TEXT NOT NULL,
    repo_root TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    events INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    header_title TEXT,
    title_event TEXT,
    first_user TEXT,
    title_seq INTEGER NOT NULL,
    first_user_seq INTEGER NOT NULL,
    state TEXT NOT NULL,
    bad_lines TEXT NOT NULL,
    offset INTEGER NOT NULL,
    lines INTEGER NOT NULL,
    file_size INTEGER NOT NULL,
    file_mtime_ns INTEGER NOT NULL,
    source_tool TEXT,
    git_branch TEXT,
    source_key TEXT,
    parent_source TEXT,
    alias TEXT,
    first_record TEXT,
    base TEXT,
    machine TEXT,
    project_key TEXT,
    undated INTEGER NOT NULL,
    stats TEXT NOT NULL,
    -- the last activity as listings sort it: '' for a session with no times of its own
    -- (an import from a source without them), so it is not on top as "just now"
    activity_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sessions_activity ON sessions (activity_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS sessions_repo ON sessions (repo_root, activity_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS sessions_source ON sessions (source_key) WHERE source_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS sessions_parent ON sessions (parent_source)
    WHERE parent_source IS NOT NULL;
CREATE INDEX IF NOT EXISTS sessions_alias ON sessions (alias) WHERE alias IS NOT NULL;
CREATE INDEX IF NOT EXISTS sessions_first_record ON sessions (first_record)
    WHERE first_record IS NOT NULL;
CREATE INDEX IF NOT EXISTS sessions_base ON sessions (base) WHERE base IS NOT NULL;
CREATE INDEX IF NOT EXISTS sessions_project_key ON sessions (project_key, updated_at DESC)
    WHERE project_key IS NOT NULL;
{search.SCHEMA}
-- the files the command line imported, as it named them: an import of a tree cut short
-- skips those unchanged since (lost with the catalog: they are then sent again)
CREATE TABLE IF NOT EXISTS imported_files (
    path TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    modified_at TEXT NOT NULL,
    sessions TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
-- which catalog this is: what is kept beside it (semantic vectors) names it
INSERT OR IGNORE INTO meta VALUES ('generation', lower(hex(randomblob(16))));
PRAGMA user_version = {SCHEMA_VERSION};
"""
# How many secrets a session's indexed text held (each redacted in the index).
SECRETS = (
    "(SELECT coalesce(sum(secrets), 0) FROM docs "
    f"WHERE docs.session = {NUMBER_OF.format('sessions.id')} AND docs.secrets > 0)"
)
UPSERT = (
    f"INSERT OR REPLACE INTO sessions ({', '.join(COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in COLUMNS)})"
)


def row_of(info: SessionInfo) -> tuple[Any, ...]:
    return (
        info.id,
        info.slug,
        info.repo_root,
        info.created_at,
        info.updated_at,
        info.events,
        info.last_seq,
        info.header_title,
        info.title_event,
        info.first_user,
        info.title_seq,
        info.first_user_seq,
        info.state,
        orjson.dumps(info.bad_lines).decode(),
        info.offset,
        info.lines,
        info.file_size,
        info.file_mtime_ns,
        info.source_tool,
        info.git_branch,
        info.source_key,
        info.parent_source,
        info.alias,
        info.stats.first_record if info.source_key else None,  # an import's record
        info.base,
        info.machine,
        info.project_key,
        info.undated,
        orjson.dumps(asdict(info.stats)).decode(),
        "" if info.undated else info.updated_at,
    )


def info_of(row: sqlite3.Row | tuple[Any, ...]) -> SessionInfo:
    """A row of ``COLUMNS``, or of ``COLUMNS`` and ``SECRETS``."""
    secrets = row[len(COLUMNS)] if len(row) > len(COLUMNS) else 0
    values = dict(zip(COLUMNS, row[: len(COLUMNS)], strict=True))
    values["bad_lines"] = orjson.loads(values["bad_lines"])
    values.pop("first_record")  # kept in the stats too
    values.pop("activity_at")  # worked out from the others
    values["stats"] = Stats(**orjson.loads(values["stats"]))
    values["undated"] = bool(values["undated"])
    return SessionInfo(**values, secrets=secrets)
