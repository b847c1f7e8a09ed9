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
from pathlib import Path
from typing import Any

from ..schemas.memory import BlockIn, ProcedureIn
from ..storage.commit import GroupCommitter
from ..storage.home import check_session_id
from ..storage.memory import BlockMeta, MemoryStore, check_name, slugify
from ..storage.memory.plans import Plans
from .tools import ToolAnswer, run_tool


def _session(session_id: str | None) -> str | None:
    """The session a memory call names, if any: a ULID, as everywhere a session is named."""
    return None if session_id is None else check_session_id(session_id)


class Memory:
    """Memory for every caller: ``store`` for what it reads, and one method per write."""

    def __init__(self, store: MemoryStore, writer: GroupCommitter) -> None:
        self.store = store
        self._writer = writer
        self._plans = Plans(store)

    async def scope_of(self, repo_root: str | None) -> str:
        """The scope a request names; resolving a worktree reads a file, so off the loop."""
        if repo_root is None:
            return "global"
        return await asyncio.to_thread(self.store.scope_for, repo_root)

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
            return self.store.read_block(scope, name, archived=archived)
        # A recall writes one unsynced journal line: done here unless the journal is busy
        # (a change being synced), then on the writer thread rather than waiting on a disk.
        found = self.store.try_recall(scope, name, session=session_id)
        if found is None:
            return await self._writer.call(self.store.recall, scope, name, session=session_id)
        return found

    async def read_block(self, scope: str, name: str) -> tuple[str, BlockMeta]:
        """A block as the writer thread sees it, after every write queued before."""
        return await self._writer.call(self.store.read_block, scope, name)

    async def write_block(self, scope: str, name: str, **options: Any) -> tuple[BlockMeta, bool]:
        """Write a block (``body``, ``meta``, ``replace``, ``if_match``, ``actor``…)."""
        _session(options.get("session"))
        return await self._writer.call(self.store.write_block, scope, name, **options)

    async def patch_block(
        self, scope: str, name: str, changes: dict[str, Any], **options: Any
    ) -> BlockMeta:
        return await self._writer.call(self.store.patch_block, scope, name, changes, **options)

    async def write_procedure(
        self, scope: str, base: str, *, body: str, meta: dict[str, Any], session: str | None
    ) -> tuple[BlockMeta, bool]:
        return await self._writer.call(
            self.store.write_procedure, scope, base, body=body, meta=meta, session=session
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

    async def forget(self, scope: str, name: str, **options: Any) -> None:
        await self._writer.call(self.store.forget, scope, name, **options)

    async def move(self, scope: str, name: str, *, archive: bool, **options: Any) -> BlockMeta:
        """Archive a block (``archive``) or bring it back."""
        return await self._writer.call(self.store.move, scope, name, archive=archive, **options)

    # -- core memory and notes ----------------------------------------------------------

    async def write_core(self, scope: str, text: str, **options: Any) -> dict[str, Any]:
        return await self._writer.call(self.store.write_core, scope, text, **options)

    async def add_note(self, scope: str, note: str, **options: Any) -> dict[str, Any]:
        """A line in core memory; the one limit for ``ASTER.md`` is the store's."""
        _session(options.get("session"))
        return await self._writer.call(self.store.add_note, scope, note, **options)

    # -- the agent tools, hygiene, the journal ----------------------------------------

    async def tool(
        self, scope: str, name: str, arguments: dict[str, Any] | str, *, session: str | None
    ) -> ToolAnswer:
        """Run one agent tool call: the text the model sees, and whether it failed."""
        _session(session)
        answer: ToolAnswer = await self._writer.call(
            run_tool, self.store, scope, name, arguments, session=session
        )
        return answer

    async def prune(self, scope: str, **options: Any) -> dict[str, Any]:
        return await self._writer.call(self.store.prune, scope, **options)

    async def revert(self, entry: dict[str, Any]) -> dict[str, Any]:
        return await self._writer.call(self.store.revert, entry)

    async def reconcile(self, paths: list[Path]) -> None:
        """Take in memory files people or other programs changed (journaled as such)."""
        await self._writer.call(self.store.reconcile, paths)

    async def record(self, op: str, **fields: Any) -> None:
        """A journal line about memory (``memory.rejected``…), durably."""
        await self._writer.call(self.store.journal.record, op, **fields)

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
        """Read every memory file, and complete (or undo) a plan a crash cut short; the
        ETag of each live block, for the search index."""
        await self._writer.call(self.store.load)
        await self._writer.call(self._plans.finish)
        etags: dict[tuple[str, str], str] = await self._writer.call(self.store.index_etags)
        return etags
