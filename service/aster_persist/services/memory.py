"""The memory service: every read and write of memory, one way for every caller.

REST, the fast path, the agent tools (``POST /v1/memory/tools/call``), MCP, the
watcher, the scheduled prune and the learner all come here, so each rule (a name, a
scope, the core-note limit, a secret refused, a merge into a duplicate) is applied once,
by ``storage.memory.MemoryStore``. Writes run on the single writer thread that also
writes transcripts and the journal; reads of the in-memory block index run where they
are asked. Outcomes are returned as values (a block and whether it was merged); only
the routers turn them into status codes and headers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ..schemas.conditions import TagCondition
from ..schemas.memory import BlockIn, ProcedureIn
from ..schemas.names import check_name, check_session_id
from ..storage.commit import GroupCommitter
from ..storage.memory import BlockMeta, MemoryStore, slugify
from ..storage.memory.plans import Plans
from ..storage.memory.sharing import Sharing
from ..storage.memory.versions import Versions
from .tools import ToolAnswer, run_tool

T = TypeVar("T")


def _session(session_id: str | None) -> str | None:
    """The session a memory call names, if any: a ULID, as everywhere a session is named."""
    return None if session_id is None else check_session_id(session_id)


class Memory:
    """Memory for every caller: typed reads and writes over a store no caller reaches."""

    def __init__(self, store: MemoryStore, writer: GroupCommitter) -> None:
        self._store = store
        self._writer = writer
        self._plans = Plans(store)
        self.root = store.root  # the memory folder, which the watcher watches

    async def scope_of(self, repo_root: str | None) -> str:
        """The scope a request names; resolving a worktree reads a file, so off the loop."""
        if repo_root is None:
            return "global"
        return await asyncio.to_thread(self._store.scope_for, repo_root)

    # -- a team ------------------------------------------------------------------------

    def share_with(self, sharing: Sharing) -> None:
        """From now on, every change of a shared file goes through ``sharing`` first."""
        self._store.share_with(sharing)

    async def with_versions(self, work: Callable[[Versions], T]) -> T:
        """``work`` on the writer thread, given the files' versions as a team sees them:
        what it reads and puts is one step, no other write in between."""
        return await self._writer.call(work, self._store.versions)

    # -- reads: the block index where they are asked, files off the loop -----------------

    def block(self, scope: str, name: str) -> BlockMeta | None:
        """A block as the index knows it, or None (no file read)."""
        return self._store.block(scope, name)

    def blocks(
        self,
        scope: str,
        *,
        tags: list[str] | None = None,
        match: str = "all",
        type: str | None = None,
        include_archived: bool = False,
        with_global: bool = False,
    ) -> list[BlockMeta]:
        """Blocks of a scope (``with_global``: and of global memory, shadowed by name)
        with all (``match="any"``: any) of ``tags``, most recently updated first."""
        return self._store.list_blocks(
            scope,
            tags=tags,
            match=match,
            type=type,
            include_archived=include_archived,
            with_global=with_global,
        )

    def usage(self, block: BlockMeta) -> dict[str, Any]:
        """How often and when last a block was recalled."""
        return self._store.usage(block)

    def count(self) -> int:
        """How many blocks, archived ones included."""
        return self._store.count()

    def scopes(self) -> list[str]:
        """Every scope that has blocks."""
        return self._store.scopes()

    async def core(self, scope: str) -> tuple[str, str]:
        """``ASTER.md`` of a scope and its ETag."""
        return await asyncio.to_thread(self._store.read_core, scope)

    async def read(self, scope: str, name: str, *, archived: bool = False) -> tuple[str, BlockMeta]:
        """A block's text and metadata as they are on disk now (no recall journaled)."""
        return await asyncio.to_thread(self._store.read_block, scope, name, archived=archived)

    async def context(self, project: str | None, relevant: list[str] | None) -> dict[str, Any]:
        """The prompt context of a project, or of global memory (``project`` None)."""
        return await asyncio.to_thread(self._store.render_context, project, relevant)

    async def holds(self, scope: str, body: str, meta: dict[str, Any]) -> bool:
        """Whether a live block already has this body from this provenance."""
        return await asyncio.to_thread(self._store.holds, scope, body, meta)

    async def journal_entries(self) -> list[dict[str, Any]]:
        """Every journal entry, oldest first."""
        return await asyncio.to_thread(self._store.journal.entries)

    def where(self, path: Path, root: Path) -> tuple[str, str, str] | None:
        """The (scope, name, real path) of a live memory file, or None."""
        return self._store.where(path, root)

    def known_files(self, folder: Path) -> list[Path]:
        """The live memory files under ``folder`` as memory last wrote or saw them."""
        return self._store.known_files(folder)

    def name_for(self, title: str) -> str:
        """A block name from a title ("API conventions!" -> "api-conventions")."""
        return slugify(title)

    # -- blocks -------------------------------------------------------------------------

    async def remember(self, body: BlockIn, repo_root: str | None) -> tuple[BlockMeta, bool]:
        """Write a block (or merge it into its duplicate): the block, and whether merged."""
        scope = await self.scope_of(repo_root)
        name = (
            check_name(body.name)
            if body.name is not None
            else slugify(body.title or body.content[:60])
        )
        meta = body.model_dump(
            exclude={"content", "name", "title", "replace", "session_id", "repo_root"},
            exclude_none=True,
        )
        if body.session_id:
            meta["source_session"] = body.session_id
        return await self.write_block(
            scope,
            name,
            body=body.content,
            meta=meta,
            replace=body.replace,
            actor="api",
            session=body.session_id,
        )

    async def recall(
        self,
        name: str,
        repo_root: str | None,
        *,
        track: bool = True,
        archived: bool = False,
        session_id: str | None = None,
    ) -> tuple[str, BlockMeta]:
        """A block's text and metadata, the read journaled as a recall when ``track``."""
        scope = await self.scope_of(repo_root)
        _session(session_id)
        if not track or archived:
            return await self.read(scope, name, archived=archived)
        # A recall writes one unsynced journal line: done here unless the journal is busy
        # (a change being synced), then on the writer thread rather than waiting on a disk.
        found = self._store.try_recall(scope, name, session=session_id)
        if found is None:
            return await self._writer.call(self._store.recall, scope, name, session=session_id)
        return found

    async def read_block(self, scope: str, name: str) -> tuple[str, BlockMeta]:
        """A block as the writer thread sees it, after every write queued before."""
        return await self._writer.call(self._store.read_block, scope, name)

    async def write_block(
        self,
        scope: str,
        name: str,
        *,
        body: str,
        meta: dict[str, Any],
        replace: bool = False,
        if_match: TagCondition = None,
        actor: str = "api",
        session: str | None = None,
        detail: dict[str, Any] | None = None,
    ) -> tuple[BlockMeta, bool]:
        """Write a block, or merge it into the live block with its body: the block, and
        whether it was merged (a different block of its name is 409 unless ``replace``)."""
        _session(session)
        return await self._writer.call(
            self._store.write_block,
            scope,
            name,
            body=body,
            meta=meta,
            replace=replace,
            if_match=if_match,
            actor=actor,
            session=session,
            detail=detail,
        )

    async def patch_block(
        self,
        scope: str,
        name: str,
        changes: dict[str, Any],
        *,
        if_match: TagCondition = None,
        actor: str = "api",
        session: str | None = None,
    ) -> BlockMeta:
        """Set frontmatter keys (and the body, as ``body``); every other byte stays."""
        return await self._writer.call(
            self._store.patch_block,
            scope,
            name,
            changes,
            if_match=if_match,
            actor=actor,
            session=session,
        )

    async def write_procedure(
        self, scope: str, base: str, *, body: str, meta: dict[str, Any], session: str | None
    ) -> tuple[BlockMeta, bool]:
        return await self._writer.call(
            self._store.write_procedure, scope, base, body=body, meta=meta, session=session
        )

    async def procedure(self, scope: str, body: ProcedureIn) -> tuple[BlockMeta, bool]:
        """``rememberSuccess`` / ``rememberFailure``: a procedural block with the task, the
        tools used and the outcome or error; the same record twice is kept once."""
        _session(body.session_id)
        detail = body.result if body.outcome == "success" else body.error
        lines = [f"**Task:** {body.task}", f"**Outcome:** {body.outcome}"]
        if body.tools:
            lines.append(f"**Tools:** {', '.join(body.tools)}")
        if detail:
            lines += ["", detail] if body.outcome == "success" else ["", f"**Error:** {detail}"]
        meta: dict[str, Any] = {
            "type": "procedural",
            "tags": [body.outcome, *body.tools],
            "importance": body.importance,
            "description": f"{body.outcome}: {body.task}"[:200],
            "tools": body.tools,
            "outcome": body.outcome,
        }
        if body.session_id:
            meta["source_session"] = body.session_id
        return await self.write_procedure(
            scope,
            slugify(f"{body.task}-{body.outcome}")[:56],
            body="\n".join(lines) + "\n",
            meta=meta,
            session=body.session_id,
        )

    async def forget(
        self,
        scope: str,
        name: str,
        *,
        actor: str = "api",
        session: str | None = None,
        if_match: TagCondition = None,
    ) -> None:
        """Delete a block; the journal keeps its content, so it can be reverted."""
        await self._writer.call(
            self._store.forget, scope, name, actor=actor, session=session, if_match=if_match
        )

    async def move(
        self,
        scope: str,
        name: str,
        *,
        archive: bool,
        actor: str = "api",
        session: str | None = None,
        detail: dict[str, Any] | None = None,
    ) -> BlockMeta:
        """Archive a block (``archive``) or bring it back (``detail``: why, journaled)."""
        return await self._writer.call(
            self._store.move,
            scope,
            name,
            archive=archive,
            actor=actor,
            session=session,
            detail=detail,
        )

    # -- core memory and notes ----------------------------------------------------------

    async def write_core(
        self,
        scope: str,
        text: str,
        *,
        if_match: TagCondition = None,
        actor: str = "api",
        session: str | None = None,
    ) -> dict[str, Any]:
        """Replace ``ASTER.md`` of a scope; 412 when ``if_match`` is stale."""
        return await self._writer.call(
            self._store.write_core, scope, text, if_match=if_match, actor=actor, session=session
        )

    async def add_note(
        self, scope: str, note: str, *, actor: str = "api", session: str | None = None
    ) -> dict[str, Any]:
        """A line in core memory; the one limit for ``ASTER.md`` is the store's."""
        _session(session)
        return await self._writer.call(
            self._store.add_note, scope, note, actor=actor, session=session
        )

    # -- the agent tools, hygiene, the journal ----------------------------------------

    async def tool(
        self, scope: str, name: str, arguments: dict[str, Any] | str, *, session: str | None
    ) -> ToolAnswer:
        """Run one agent tool call: the text the model sees, and whether it failed."""
        _session(session)
        answer: ToolAnswer = await self._writer.call(
            run_tool, self._store, scope, name, arguments, session=session
        )
        return answer

    async def prune(
        self,
        scope: str,
        *,
        max_age_days: float,
        max_importance: float,
        dry_run: bool,
        actor: str = "api",
        trigger: str = "prune asked for",
    ) -> dict[str, Any]:
        """Archive stale, unimportant blocks (never a protected one), each journaled."""
        return await self._writer.call(
            self._store.prune,
            scope,
            max_age_days=max_age_days,
            max_importance=max_importance,
            dry_run=dry_run,
            actor=actor,
            trigger=trigger,
        )

    async def revert(self, entry: dict[str, Any]) -> dict[str, Any]:
        return await self._writer.call(self._store.revert, entry)

    async def reconcile(self, paths: list[Path]) -> list[dict[str, Any]]:
        """Take in memory files people or other programs changed; the entries that
        journal them."""
        entries: list[dict[str, Any]] = await self._writer.call(self._store.reconcile, paths)
        return entries

    async def record(
        self,
        op: str,
        *,
        scope: str,
        actor: str = "api",
        session: str | None = None,
        detail: dict[str, Any] | None = None,
    ) -> None:
        """A journal line about memory (``memory.rejected``…), durably."""
        await self._writer.call(
            self._store.journal.record, op, scope=scope, actor=actor, session=session, detail=detail
        )

    async def apply_plan(
        self, scope: str, steps: list[dict[str, Any]], *, actor: str, detail: dict[str, Any]
    ) -> list[dict[str, Any]]:
        """Many changes as one (``storage.memory.plans``): every step checked first, then
        all made, or none."""
        done: list[dict[str, Any]] = await self._writer.call(
            self._plans.apply, scope, steps, actor=actor, detail=detail
        )
        return done

    async def load(self) -> dict[tuple[str, str], str]:
        """Journal what changed in memory unjournaled, read every memory file, and
        complete (or undo) a plan a crash cut short; the ETag of each live block, for the
        search index."""
        await self._writer.call(self._store.catch_up)
        await self._writer.call(self._store.load)
        await self._writer.call(self._plans.finish)
        etags: dict[tuple[str, str], str] = await self._writer.call(self._store.index_etags)
        return etags
