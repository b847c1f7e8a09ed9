"""The memory endpoints of both clients: core memory (``ASTER.md``) and its notes,
blocks, recall, the prompt context, memory search, procedures, pruning and the agents'
tools (one `Call` each; see `calls.py`)."""

from __future__ import annotations

from typing import Any, Literal

from ..schemas.memory import (
    Block,
    BlockList,
    BlockRead,
    ContextOut,
    Core,
    CoreWritten,
    MemoryPruneOut,
    Note,
    SavedBlock,
    ToolList,
    ToolResult,
)
from ..schemas.search import MemoryHits
from .calls import (
    Call,
    Scope,
    body_of,
    endpoint,
    if_match_header,
    read_model,
    read_nothing,
    read_saved_or_note,
)


class MemoryEndpoints:
    """``/v1/memory``, in the order of the README."""

    @endpoint
    def core(repo_root: Scope = None) -> Call[Core]:
        """``GET /v1/memory/core``: ``ASTER.md`` of the global scope or a project."""
        return Call("GET", "/v1/memory/core", read_model(Core), params={"repo_root": repo_root})

    @endpoint
    def put_core(
        content: str, repo_root: Scope = None, *, if_match: str | None = None
    ) -> Call[CoreWritten]:
        """``PUT /v1/memory/core``: replace ``ASTER.md``; ``if_match`` guards it (412)."""
        return Call(
            "PUT",
            "/v1/memory/core",
            read_model(CoreWritten),
            params={"repo_root": repo_root},
            json={"content": content},
            headers=if_match_header(if_match),
        )

    @endpoint
    def add_note(
        note: str, repo_root: Scope = None, *, session_id: str | None = None
    ) -> Call[Note]:
        """``POST /v1/memory/core/notes``: a bullet in ``ASTER.md`` (kept once)."""
        return Call(
            "POST",
            "/v1/memory/core/notes",
            read_model(Note),
            params={"repo_root": repo_root},
            json=body_of(note=note, session_id=session_id),
        )

    @endpoint
    def remember(
        content: str,
        repo_root: Scope = None,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        type: Literal["semantic", "procedural"] | None = None,
        tags: list[str] | None = None,
        importance: float | None = None,
        pinned: bool | None = None,
        replace: bool | None = None,
        session_id: str | None = None,
        **meta: Any,
    ) -> Call[SavedBlock]:
        """``POST /v1/memory/blocks``: a named block (the same content twice is merged)."""
        body = body_of(
            content=content,
            name=name,
            title=title,
            description=description,
            type=type,
            tags=tags,
            importance=importance,
            pinned=pinned,
            replace=replace,
            session_id=session_id,
        )
        return Call(
            "POST",
            "/v1/memory/blocks",
            read_model(SavedBlock),
            params={"repo_root": repo_root},
            json=body | meta,
        )

    @endpoint
    def remember_tool(
        note: str,
        repo_root: Scope = None,
        *,
        title: str | None = None,
        tags: list[str] | None = None,
        replace: bool | None = None,
        session_id: str | None = None,
    ) -> Call[SavedBlock | Note]:
        """``POST /v1/memory/remember``: the agents' `remember` tool: with a title, a
        block named after it; without, a bullet in ``ASTER.md``."""
        body = body_of(note=note, title=title, tags=tags, replace=replace, session_id=session_id)
        return Call(
            "POST",
            "/v1/memory/remember",
            read_saved_or_note,
            params={"repo_root": repo_root},
            json=body,
        )

    @endpoint
    def recall(
        name: str,
        repo_root: Scope = None,
        *,
        track: bool | None = None,
        archived: bool | None = None,
        session_id: str | None = None,
    ) -> Call[BlockRead]:
        """``GET /v1/memory/blocks/{name}``: a block in full (journaled as a recall)."""
        params = {
            "repo_root": repo_root,
            "track": track,
            "archived": archived,
            "session_id": session_id,
        }
        return Call("GET", f"/v1/memory/blocks/{name}", read_model(BlockRead), params=params)

    @endpoint
    def blocks(
        repo_root: Scope = None,
        *,
        tag: str | list[str] | None = None,
        match: Literal["all", "any"] | None = None,
        type: str | None = None,
        include_archived: bool | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Call[BlockList]:
        """``GET /v1/memory/blocks``: the blocks of a scope, filtered, a page at a time
        (``next_cursor``); with ``tag`` (one or several: all of them, or ``match="any"``),
        global memory's too."""
        params = {
            "repo_root": repo_root,
            "tag": tag,
            "match": match,
            "type": type,
            "include_archived": include_archived,
            "limit": limit,
            "cursor": cursor,
        }
        return Call("GET", "/v1/memory/blocks", read_model(BlockList), params=params)

    @endpoint
    def recent(repo_root: Scope = None, *, n: int | None = None) -> Call[BlockList]:
        """``GET /v1/memory/recent``: the most recently changed blocks."""
        params = {"repo_root": repo_root, "n": n}
        return Call("GET", "/v1/memory/recent", read_model(BlockList), params=params)

    @endpoint
    def put_block(
        name: str,
        content: str,
        repo_root: Scope = None,
        *,
        if_match: str | None = None,
    ) -> Call[SavedBlock]:
        """``PUT /v1/memory/blocks/{name}``: replace a block with markdown (frontmatter
        and body); ``if_match`` guards it (412 when someone else changed it)."""
        return Call(
            "PUT",
            f"/v1/memory/blocks/{name}",
            read_model(SavedBlock),
            params={"repo_root": repo_root},
            content=content.encode(),
            headers={"Content-Type": "text/markdown", **if_match_header(if_match)},
        )

    @endpoint
    def patch_block(
        name: str,
        repo_root: Scope = None,
        *,
        if_match: str | None = None,
        **changes: Any,
    ) -> Call[Block]:
        """``PATCH /v1/memory/blocks/{name}``: tags, importance, pinned, description…"""
        return Call(
            "PATCH",
            f"/v1/memory/blocks/{name}",
            read_model(Block),
            params={"repo_root": repo_root},
            json=changes,
            headers=if_match_header(if_match),
        )

    @endpoint
    def forget(name: str, repo_root: Scope = None) -> Call[None]:
        """``DELETE /v1/memory/blocks/{name}``: forget (the journal keeps it: revertible)."""
        return Call(
            "DELETE", f"/v1/memory/blocks/{name}", read_nothing, params={"repo_root": repo_root}
        )

    @endpoint
    def archive(name: str, repo_root: Scope = None) -> Call[Block]:
        """``POST /v1/memory/blocks/{name}/archive``: out of the context, kept."""
        return Call(
            "POST",
            f"/v1/memory/blocks/{name}/archive",
            read_model(Block),
            params={"repo_root": repo_root},
        )

    @endpoint
    def restore(name: str, repo_root: Scope = None) -> Call[Block]:
        """``POST /v1/memory/blocks/{name}/restore``: back from the archive."""
        return Call(
            "POST",
            f"/v1/memory/blocks/{name}/restore",
            read_model(Block),
            params={"repo_root": repo_root},
        )

    @endpoint
    def context(repo_root: Scope = None, *, query: str | None = None) -> Call[ContextOut]:
        """``GET /v1/memory/context``: the markdown an agent puts in its prompt."""
        params = {"repo_root": repo_root, "query": query}
        return Call("GET", "/v1/memory/context", read_model(ContextOut), params=params)

    @endpoint
    def search_memory(q: str, repo_root: Scope = None, *, k: int | None = None) -> Call[MemoryHits]:
        """``GET /v1/memory/search``: blocks and core memory by relevance and recency."""
        params = {"q": q, "repo_root": repo_root, "k": k}
        return Call("GET", "/v1/memory/search", read_model(MemoryHits), params=params)

    @endpoint
    def remember_procedure(
        outcome: Literal["success", "failure"],
        task: str,
        repo_root: Scope = None,
        *,
        tools: list[str] | None = None,
        result: str | None = None,
        error: str | None = None,
        importance: float | None = None,
        session_id: str | None = None,
    ) -> Call[SavedBlock]:
        """``POST /v1/memory/procedures``: how a task went, as a procedural block."""
        body = body_of(
            outcome=outcome,
            task=task,
            tools=tools,
            result=result,
            error=error,
            importance=importance,
            session_id=session_id,
        )
        return Call(
            "POST",
            "/v1/memory/procedures",
            read_model(SavedBlock),
            params={"repo_root": repo_root},
            json=body,
        )

    @endpoint
    def prune_memory(
        repo_root: Scope = None,
        *,
        max_age_days: float | None = None,
        max_importance: float | None = None,
        dry_run: bool = True,
    ) -> Call[MemoryPruneOut]:
        """``POST /v1/memory/prune``: archive stale, unimportant blocks (dry run first)."""
        body = body_of(max_age_days=max_age_days, max_importance=max_importance, dry_run=dry_run)
        return Call(
            "POST",
            "/v1/memory/prune",
            read_model(MemoryPruneOut),
            params={"repo_root": repo_root},
            json=body,
        )

    @endpoint
    def tools() -> Call[ToolList]:
        """``GET /v1/memory/tools``: remember, recall and forget as tool definitions."""
        return Call("GET", "/v1/memory/tools", read_model(ToolList))

    @endpoint
    def call_tool(
        name: str,
        arguments: dict[str, Any] | str,
        *,
        repo_root: Scope = None,
        session_id: str | None = None,
    ) -> Call[ToolResult]:
        """``POST /v1/memory/tools/call``: run a model's tool call; ``content`` is its reply."""
        body = body_of(name=name, arguments=arguments, repo_root=repo_root, session_id=session_id)
        return Call("POST", "/v1/memory/tools/call", read_model(ToolResult), json=body)
