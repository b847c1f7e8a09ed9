"""`aster-persist doctor`: an offline check of a whole data home, and its repair.

What it finds, in a home no daemon holds:

- ``torn_tail``: a transcript (or the journal) ending in a torn line or a batch cut
  short by a crash. Repair moves those bytes to ``<file>.torn-<ts>`` beside it and cuts
  the file back to its last whole line (what the daemon does before its next append).
- ``bad_line``: a line in the middle that is not a JSON object, which makes a session
  ``damaged`` and refuses appends. Repair moves the bad lines, byte for byte, to
  ``<file>.bad-<ts>`` beside it and rewrites the file without them, atomically.
- ``no_header``: a transcript whose first line is not a session header (reported).
- ``unreadable``: a compressed transcript (``.jsonl.zst``) that does not decompress
  (reported; a compressed one with bad lines is reported too, never rewritten).
- ``both_forms``: a compressed transcript beside its plain file, which a crash during a
  change of form can leave. Repair moves the compressed copy aside (the daemon drops
  it at start, journaled); the plain file is the session.
- ``temp_file``: a temporary file an interrupted rewrite left behind. Repair moves it
  under ``<home>/lost+found/<ts>/`` at the same relative path.
- ``missing_blob``: an event that refers to a blob no longer on disk (reported: the
  bytes are gone, nothing can bring them back).
- ``missing_base``: a copy whose header refers to events of another session of its
  project that cannot be read whole (that session deleted by hand, say). Reported: its
  own events are still served; the daemon never deletes a session a copy refers to
  without writing those events into the copy first.
- ``index_drift``: the index missing, unreadable, or disagreeing with the files.
  Repair rebuilds it from the files.
- ``symlink``: a symbolic link anywhere in the home, which the daemon refuses to follow
  (so what it names is unreachable). Repair moves the link itself, never what it points
  to, under ``<home>/lost+found/<ts>/``.

Nothing is ever deleted: every byte a repair takes out of a file is in a file beside it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .errors import BaseMissing, StorageFailed, UnsafePath
from .index.sqlite import sqlite3
from .schemas.clock import Clock, format_ts, utc_now
from .storage.blobs import BlobStore
from .storage.home import PACKED, Home, ensure_dir, fsync_dir
from .storage.jsonl import TEMP_MARK, Parsed, atomic_write, parse, read_bytes, write_new
from .storage.packed import is_packed
from .storage.transcripts import incomplete_batch
from .storage.transcripts.copies import expanded

Progress = Callable[[int, int], None]


@dataclass
class Finding:
    """One thing wrong with the home."""

    kind: str
    path: str  # relative to the home
    detail: str
    repairable: bool = True
    repaired: bool = False
    moved_to: str | None = None

    def public(self) -> dict[str, Any]:
        return asdict(self)


class Doctor:
    """Checks (and with ``repair``, fixes) an opened, locked home."""

    def __init__(self, home: Home, *, repair: bool = False, clock: Clock = utc_now) -> None:
        self.home = home
        self.root = home.root
        self.repair = repair
        self.stamp = format_ts(clock()).replace(":", "").replace("-", "")
        self.blobs = BlobStore(home.root / "blobs", threshold=0)
        self.findings: list[Finding] = []
        self.ends: dict[str, int] = {}  # a live transcript's length in whole lines

    def run(self, progress: Progress | None = None) -> list[Finding]:
        self.symlinks()
        self.temp_files()
        transcripts = [
            p
            for p in sorted(
                [*self.home.sessions.rglob("*.jsonl"), *self.home.sessions.rglob("*.jsonl.zst")]
            )
            if not p.is_symlink()
        ]
        for done, path in enumerate(transcripts, 1):
            with contextlib.suppress(UnsafePath):  # a link above it: found by symlinks()
                self.transcript(path)
            if progress:
                progress(done, len(transcripts))
        journal = self.root / "journal.jsonl"
        if journal.is_file() and not journal.is_symlink():  # a link: found by symlinks()
            self.jsonl(journal)
        self.index()
        return self.findings

    # -- checks ---------------------------------------------------------------------

    def symlinks(self) -> None:
        for dirpath, dirs, files in os.walk(self.root):  # links to folders are not entered
            dirs.sort()
            links = sorted(n for n in dirs + files if (Path(dirpath) / n).is_symlink())
            if Path(dirpath) == self.root:  # what a repair moved aside stays there, unread
                dirs[:] = [d for d in dirs if d != "lost+found"]
            for name in links:
                path = Path(dirpath) / name
                aside_of_its_own = path == self.root / "lost+found"
                found = self._found(
                    "symlink",
                    path,
                    f"a symbolic link to {os.readlink(path)[:200]!r}; the daemon never follows "
                    "one, so what it names is not part of the store"
                    + ("; remove it by hand" if aside_of_its_own else ""),
                    repairable=not aside_of_its_own,
                )
                if self.repair and not aside_of_its_own:
                    aside = self.root / "lost+found" / self.stamp / path.relative_to(self.root)
                    ensure_dir(aside.parent)
                    os.rename(path, aside)  # the link itself moves; its target is untouched
                    fsync_dir(aside.parent)
                    self._repaired(found, aside)

    def temp_files(self) -> None:
        for dirpath, dirs, files in os.walk(self.root):
            dirs[:] = [d for d in dirs if d != "lost+found"]
            for name in files:
                if not name.startswith(TEMP_MARK):
                    continue
                path = Path(dirpath) / name
                found = self._found(
                    "temp_file", path, "left by an interrupted rewrite (never part of the data)"
                )
                if self.repair:
                    aside = self.root / "lost+found" / self.stamp / path.relative_to(self.root)
                    ensure_dir(aside.parent)
                    os.replace(path, aside)
                    fsync_dir(aside.parent)
                    self._repaired(found, aside)

    def transcript(self, path: Path) -> None:
        if is_packed(path):
            parsed = self.compressed(path)
            if parsed is None:
                return
        else:
            parsed = self.jsonl(path, header=True)
        if path.parent.parent == self.home.sessions:  # not in a project's trash
            self.ends.setdefault(path.name.split(".", 1)[0], parsed.good_end)
        try:
            expanded(parsed, path.parent)
        except BaseMissing as exc:
            self._found(
                "missing_base",
                path,
                f"a copy whose shared start cannot be read: {exc.detail}; its own events "
                "are still served",
                repairable=False,
            )
        for ref in self.blobs.missing(parsed.lines):
            self._found(
                "missing_blob",
                path,
                f"refers to {ref}, which is not in blobs/",
                repairable=False,
            )

    def compressed(self, path: Path) -> Parsed | None:
        """Check a compressed transcript: it reads whole, and holds whole lines with a
        header first. Reported only: it is read-only to repairs (``zstd -d`` makes it
        plain, for a repair by hand). Beside its plain form (a change of form a crash cut
        short), it is the copy the daemon drops at start; repair moves it aside."""
        plain = path.with_name(path.name[: -len(PACKED)])
        if plain.is_file() and not plain.is_symlink():
            found = self._found(
                "both_forms",
                path,
                "a compressed copy beside the plain file (the plain one is the session)",
            )
            if self.repair:
                aside = self._aside(path, "doubled")
                os.rename(path, aside)
                fsync_dir(path.parent)
                self._repaired(found, aside)
            return None
        try:
            data = read_bytes(path)
        except StorageFailed as exc:
            self._found("unreadable", path, exc.detail, repairable=False)
            return None
        parsed = parse(data)
        cut = incomplete_batch(parsed)
        if parsed.bad or parsed.torn is not None or cut is not None:
            self._found(
                "bad_line",
                path,
                "compressed, with lines that are not whole JSON objects "
                "(decompress it with `zstd -d` to repair it)",
                repairable=False,
            )
        if not parsed.lines or parsed.lines[0].get("type") != "session":
            self._found(
                "no_header", path, "the first line is not a session header", repairable=False
            )
        return parsed

    def jsonl(self, path: Path, *, header: bool = False) -> Parsed:
        """Check one JSONL file; what is readable in it (after any repair)."""
        data = read_bytes(path)
        parsed = parse(data)
        cut = incomplete_batch(parsed) if header else None
        if cut is not None:
            parsed = parse(data[:cut])
            parsed.torn = (cut, len(data))
        if parsed.bad:
            numbers = ", ".join(str(n) for n in parsed.bad[:10])
            found = self._found(
                "bad_line",
                path,
                f"{len(parsed.bad)} line(s) not JSON objects: line {numbers}",
            )
            if self.repair:
                end = parsed.torn[0] if parsed.torn else len(data)
                kept, bad = _split_bad(data[:end], set(parsed.bad))
                aside = self._aside(path, "bad")
                write_new(aside, bad)
                atomic_write(path, kept + data[end:])
                self._repaired(found, aside)
                data = read_bytes(path)
                parsed = parse(data)
                if header and (cut := incomplete_batch(parsed)) is not None:
                    parsed = parse(data[:cut])
                    parsed.torn = (cut, len(data))
        if parsed.torn is not None:
            start, end = parsed.torn
            found = self._found(
                "torn_tail", path, f"{end - start} bytes after the last whole line (a crash)"
            )
            if self.repair:
                aside = self._aside(path, "torn")
                write_new(aside, data[start:end])
                fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW)
                try:
                    os.ftruncate(fd, start)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                self._repaired(found, aside)
                parsed.torn = None
        if header and (not parsed.lines or parsed.lines[0].get("type") != "session"):
            self._found(
                "no_header", path, "the first line is not a session header", repairable=False
            )
        return parsed

    def index(self) -> None:
        problem = self._index_problem()
        if problem is None:
            return
        found = self._found("index_drift", self.home.index, problem)
        if self.repair:
            from .index.catalog import rebuild

            if self.home.index.is_symlink():
                return  # reported by symlinks(); the index is rebuilt once it is moved
            ensure_dir(self.home.index)  # (a link moved aside took the folder's name)
            rebuild(self.home)
            self._repaired(found, None)

    def _index_problem(self) -> str | None:
        from .index.catalog import SCHEMA_VERSION

        database = self.home.index / "catalog.sqlite3"
        if self.home.index.is_symlink() or database.is_symlink():
            return "the index is reached through a symbolic link (never opened)"
        if not database.exists():
            return "no index (the daemon rebuilds it at start)"
        try:
            db = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
            try:
                if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                    return "the index has an older schema (the daemon rebuilds it at start)"
                rows = dict(db.execute("SELECT id, offset FROM sessions").fetchall())
            finally:
                db.close()
        except sqlite3.DatabaseError as exc:
            return f"the index cannot be read ({exc})"
        files = self.ends
        missing = sorted(set(files) - set(rows))
        stale = sorted(set(rows) - set(files))
        behind = sorted(sid for sid, end in files.items() if sid in rows and rows[sid] != end)
        parts = []
        if missing:
            parts.append(f"{len(missing)} session(s) not indexed")
        if stale:
            parts.append(f"{len(stale)} indexed session(s) with no file")
        if behind:
            parts.append(f"{len(behind)} session(s) indexed at another length")
        return "; ".join(parts) or None

    # -- helpers -------------------------------------------------------------------------

    def _found(self, kind: str, path: Path, detail: str, *, repairable: bool = True) -> Finding:
        finding = Finding(kind, str(path.relative_to(self.root)), detail, repairable)
        self.findings.append(finding)
        return finding

    def _repaired(self, finding: Finding, aside: Path | None) -> None:
        finding.repaired = True
        if aside is not None:
            finding.moved_to = str(aside.relative_to(self.root))

    def _aside(self, path: Path, what: str) -> Path:
        aside = path.with_name(f"{path.name}.{what}-{self.stamp}")
        n = 0
        while aside.exists():
            n += 1
            aside = path.with_name(f"{path.name}.{what}-{self.stamp}-{n}")
        return aside


def _split_bad(data: bytes, bad: set[int]) -> tuple[bytes, bytes]:
    """``data`` (whole lines) as the lines to keep and the bad ones, each line whole."""
    pieces = data.split(b"\n")
    tail = pieces.pop()
    kept: list[bytes] = []
    out: list[bytes] = []
    for number, piece in enumerate(pieces, 1):
        (out if number in bad else kept).append(piece + b"\n")
    return b"".join(kept) + tail, b"".join(out)
