"""/v1/memory: core memory, blocks, remember/recall/forget, archive, tools and prune."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from pydantic import StringConstraints, ValidationError
from starlette.responses import Response

from ..errors import Invalid
from ..index.text import parse_query
from ..schemas import frontmatter
from ..schemas.memory import (
    MAX_INDEX_ENTRIES,
    Block,
    BlockFields,
    BlockIn,
    BlockList,
    BlockPatch,
    BlockRead,
    ContextOut,
    Core,
    CoreWritten,
    Frontmatter,
    MemoryPruneIn,
    MemoryPruneOut,
    MemoryToolCall,
    Note,
    NoteIn,
    ProcedureIn,
    RememberIn,
    SavedBlock,
    ToolList,
    ToolResult,
)
from ..schemas.names import check_name, check_session_id
from ..secrets import found_in
from ..services.memory import Memory
from ..services.tools import TOOLS, run_search_tool
from . import body as strict
from .memory_docs import BLOCK_BODY, CORE_BODY, MARKDOWN, MERGED
from .models import LIST_LIMIT, page_of
from .plumbing import ERRORS, json_response, running
from .rules import IfMatch, IfNoneMatch, parse_etag_match

if TYPE_CHECKING:
    from ..storage.memory import BlockMeta

router = APIRouter(prefix="/v1", tags=["memory"], route_class=strict.StrictRoute)
# a tag to filter by: one tag (a list is the parameter given again), no control characters
Tag = Annotated[
    str, StringConstraints(min_length=1, max_length=100, pattern=r"^[^\x00-\x1f\x7f,]+$")
]


def _memory(request: Request) -> Memory:
    return running(request).memory


async def _scope(request: Request, repo_root: str | None) -> str:
    return await _memory(request).scope_of(repo_root)


def _block(meta: BlockMeta, memory: Memory | None = None) -> dict[str, Any]:
    out = meta.public()
    if memory is not None:
        out |= memory.usage(meta)
    return out


@router.get("/memory/core", operation_id="memory-core-get", response_model=Core, responses=ERRORS)
async def get_core(
    request: Request,
    repo_root: str | None = None,
    if_none_match: IfNoneMatch = None,
) -> Response:
    """`ASTER.md` of the global scope, or of a project with `repo_root`."""
    scope = await _scope(request, repo_root)
    text, etag = await _memory(request).core(scope)
    if if_none_match == etag:
        return Response(status_code=304, headers={"ETag": etag})
    if MARKDOWN in request.headers.get("accept", ""):
        return Response(text, media_type=MARKDOWN, headers={"ETag": etag})
    core = {"scope": scope, "content": text, "etag": etag, "secrets": found_in(text)}
    return json_response(core, headers={"ETag": etag})


@router.put(
    "/memory/core",
    operation_id="memory-core-put",
    response_model=CoreWritten,
    responses=ERRORS,
    openapi_extra=CORE_BODY,
)
async def put_core(
    request: Request,
    repo_root: str | None = None,
    if_match: IfMatch = None,
) -> Response:
    """Replace `ASTER.md` (raw `text/markdown`, or JSON `{"content": …}`); `If-Match` guards it."""
    memory = _memory(request)
    text = await _text_body(request)
    scope = await _scope(request, repo_root)
    result = await memory.write_core(scope, text, if_match=parse_etag_match(if_match))
    return json_response(result, headers={"ETag": result["etag"]})


@router.post(
    "/memory/core/notes",
    operation_id="memory-core-note",
    status_code=201,
    response_model=Note,
    responses={**ERRORS, 200: {"model": Note, "description": "Already there: kept once"}},
)
async def add_note(request: Request, body: NoteIn, repo_root: str | None = None) -> Response:
    """Append a note as a bullet to `ASTER.md`; the same note twice is kept once."""
    memory = _memory(request)
    scope = await _scope(request, repo_root)
    result = await memory.add_note(scope, body.note, session=body.session_id)
    return json_response(
        result, 200 if result["duplicate"] else 201, headers={"ETag": result["etag"]}
    )


@router.get(
    "/memory/blocks", operation_id="memory-blocks-list", response_model=BlockList, responses=ERRORS
)
async def list_blocks(
    request: Request,
    repo_root: str | None = None,
    tag: Annotated[list[Tag] | None, Query()] = None,
    match: Literal["all", "any"] = "all",
    type: Literal["semantic", "procedural"] | None = None,
    include_archived: bool = False,
    limit: Annotated[int, Query(ge=1, le=1000)] = LIST_LIMIT,
    cursor: str | None = None,
) -> Response:
    """Blocks of a scope, most recently updated first. With `tag` (`recallByTags`), the
    blocks with all of the tags (`match=any`: any of them), of the project and of global
    memory, as recall by similarity searches both (a project's block shadows a global
    one of its name)."""
    memory = _memory(request)
    blocks = memory.blocks(
        await _scope(request, repo_root),
        tags=tag,
        match=match,
        type=type,
        include_archived=include_archived,
        with_global=bool(tag),
    )
    page, next_cursor = page_of(blocks, lambda b: (b.updated_at, b.name), limit, cursor)
    return json_response({"items": [_block(b, memory) for b in page], "next_cursor": next_cursor})


@router.get(
    "/memory/recent", operation_id="memory-recent", response_model=BlockList, responses=ERRORS
)
async def recent(
    request: Request, repo_root: str | None = None, n: Annotated[int, Query(ge=1, le=500)] = 10
) -> Response:
    """`memoryRecent`: the `n` most recently updated blocks, of the project and of global
    memory (a project's block shadowing a global one of its name)."""
    scope = await _scope(request, repo_root)
    blocks = _memory(request).blocks(scope, with_global=True)[:n]
    return json_response({"items": [_block(b) for b in blocks]})


async def _remember(request: Request, body: BlockIn, repo_root: str | None) -> Response:
    block, merged = await _memory(request).remember(body, repo_root)
    return json_response(saved(block, merged), 200 if merged else 201, headers={"ETag": block.etag})


def saved(block: BlockMeta, merged: bool) -> dict[str, Any]:
    """The reply to a block written (or merged into its duplicate)."""
    return _block(block) | {"merged": merged}


@router.post(
    "/memory/blocks",
    operation_id="memory-blocks-create",
    status_code=201,
    response_model=SavedBlock,
    responses={**ERRORS, 200: MERGED},
)
async def create_block(request: Request, body: BlockIn, repo_root: str | None = None) -> Response:
    """Remember a named block. The same content (normalized) returns the existing block."""
    return await _remember(request, body, repo_root)


@router.post(
    "/memory/remember",
    operation_id="memory-remember",
    status_code=201,
    response_model=SavedBlock | Note,
    responses={**ERRORS, 200: {"model": SavedBlock | Note, "description": "Already there"}},
)
async def remember(request: Request, body: RememberIn, repo_root: str | None = None) -> Response:
    """The `remember` tool: with a title, a named block; without, a bullet in `ASTER.md`."""
    if not body.note.strip():
        raise Invalid("the note is empty")
    if body.title is None:
        memory = _memory(request)
        scope = await _scope(request, repo_root)
        result = await memory.add_note(scope, body.note, session=body.session_id)
        return json_response(
            result, 200 if result["duplicate"] else 201, headers={"ETag": result["etag"]}
        )
    block = BlockIn(
        content=body.note,
        title=body.title,
        tags=body.tags,
        replace=body.replace,
        session_id=body.session_id,
    )
    return await _remember(request, block, repo_root)


@router.get(
    "/memory/blocks/{name}",
    operation_id="memory-recall",
    response_model=BlockRead,
    responses=ERRORS,
)
async def recall(
    request: Request,
    name: str,
    repo_root: str | None = None,
    track: bool = True,
    archived: bool = False,
    session_id: str | None = None,
    if_none_match: IfNoneMatch = None,
) -> Response:
    """Recall a block's full text (journaled as a recall unless `track=false`); 304 when
    `If-None-Match` holds its ETag (no recall is journaled then: nothing was read)."""
    memory = _memory(request)
    if if_none_match is not None:
        scope = await _scope(request, repo_root)
        _, block = await memory.read(scope, name, archived=archived)
        if block.etag in [tag.strip() for tag in if_none_match.split(",")]:
            return Response(status_code=304, headers={"ETag": block.etag})
    text, block = await memory.recall(
        name, repo_root, track=track, archived=archived, session_id=session_id
    )
    if MARKDOWN in request.headers.get("accept", ""):
        return Response(text, media_type=MARKDOWN, headers={"ETag": block.etag})
    return json_response(recalled(text, block), headers={"ETag": block.etag})


def recalled(text: str, block: BlockMeta) -> dict[str, Any]:
    """A block read in full: its fields, its text, and that text's body and frontmatter
    apart (every key, those the service does not know too)."""
    try:
        document = frontmatter.parse(text)
    except Invalid:  # a hand edit broke the frontmatter: the body is all of it
        return _block(block) | {"content": text, "body": text, "metadata": {}}
    metadata = frontmatter.plain(document.meta)
    return _block(block) | {"content": text, "body": document.body, "metadata": metadata}


@router.put(
    "/memory/blocks/{name}",
    operation_id="memory-blocks-put",
    response_model=SavedBlock,
    responses=ERRORS,
    openapi_extra=BLOCK_BODY,
)
async def put_block(
    request: Request,
    name: str,
    repo_root: str | None = None,
    if_match: IfMatch = None,
) -> Response:
    """Replace a block: raw markdown with frontmatter, or JSON like `POST /blocks`."""
    memory = _memory(request)
    check_name(name)
    session = None
    if "json" in request.headers.get("content-type", ""):
        try:
            block_in = BlockFields.model_validate(_json_body(await request.body()))
        except ValidationError as exc:
            raise Invalid(f"the block is not valid: {_first_error(exc)}") from None
        meta = block_in.model_dump(
            exclude={"content", "session_id", "repo_root"}, exclude_none=True
        )
        if block_in.session_id is not None:
            meta["source_session"] = session = block_in.session_id
        body = block_in.content
    else:
        doc = frontmatter.parse(await _text_body(request))
        meta = {k: v for k, v in doc.meta.items() if k != "name"}
        try:
            Frontmatter.model_validate(meta)
        except ValidationError as exc:
            raise Invalid(f"the frontmatter is not valid: {_first_error(exc)}") from None
        body = doc.body
    scope = await _scope(request, repo_root)
    block, merged = await memory.write_block(
        scope,
        name,
        body=body,
        meta=meta,
        replace=True,
        if_match=parse_etag_match(if_match),
        session=session,
    )
    return json_response(saved(block, merged), headers={"ETag": block.etag})


@router.patch(
    "/memory/blocks/{name}",
    operation_id="memory-blocks-patch",
    response_model=Block,
    responses=ERRORS,
)
async def patch_block(
    request: Request,
    name: str,
    body: BlockPatch,
    repo_root: str | None = None,
    if_match: IfMatch = None,
) -> Response:
    """Change metadata keys; every other byte of the file stays as it was."""
    memory = _memory(request)
    changes = body.model_dump(exclude_unset=True)
    if not changes:
        raise Invalid("say which keys to change")
    if "body" in changes and changes["body"] is None:
        raise Invalid("body: send the new body as text (a block cannot have none)")
    block = await memory.patch_block(
        await _scope(request, repo_root), name, changes, if_match=parse_etag_match(if_match)
    )
    return json_response(_block(block), headers={"ETag": block.etag})


@router.delete(
    "/memory/blocks/{name}", operation_id="memory-forget", status_code=204, responses=ERRORS
)
async def forget(
    request: Request,
    name: str,
    repo_root: str | None = None,
    if_match: IfMatch = None,
) -> Response:
    """Forget a block; the journal keeps its content, so it can be reverted. `If-Match`
    guards it (412 when the block changed since)."""
    memory = _memory(request)
    await memory.forget(await _scope(request, repo_root), name, if_match=parse_etag_match(if_match))
    return Response(status_code=204)


@router.post(
    "/memory/blocks/{name}/archive",
    operation_id="memory-archive",
    response_model=Block,
    responses=ERRORS,
)
async def archive(request: Request, name: str, repo_root: str | None = None) -> Response:
    """Move a block to `.archive/`: it leaves listings and the prompt context."""
    memory = _memory(request)
    block = await memory.move(await _scope(request, repo_root), name, archive=True)
    return json_response(_block(block))


@router.post(
    "/memory/blocks/{name}/restore",
    operation_id="memory-restore",
    response_model=Block,
    responses=ERRORS,
)
async def restore(request: Request, name: str, repo_root: str | None = None) -> Response:
    """Bring a block back from `.archive/`."""
    memory = _memory(request)
    block = await memory.move(await _scope(request, repo_root), name, archive=False)
    return json_response(_block(block))


@router.get(
    "/memory/context", operation_id="memory-context", response_model=ContextOut, responses=ERRORS
)
async def context(
    request: Request,
    repo_root: str | None = None,
    query: Annotated[str | None, Query(max_length=2000)] = None,
) -> Response:
    """The markdown for a system prompt: global and project `ASTER.md` in full, then an
    index of recallable blocks (60 lines at most), with counts and a token estimate.
    Most recently updated first; with `query`, the blocks most relevant to it first
    (BM25 relevance raised by recency), then the rest by recency."""
    scope = await _scope(request, repo_root)
    project = None if scope == "global" else scope
    relevant = None
    if query is not None and query.strip():
        found = await running(request).sessions.search_memory(
            parse_query(query),
            scopes=["global"] if project is None else [project, "global"],
            kinds=("block",),
            k=MAX_INDEX_ENTRIES,
        )
        relevant = [hit["name"] for hit in found]
    result = await _memory(request).context(project, relevant)
    return json_response(result)


@router.get("/memory/tools", operation_id="memory-tools", response_model=ToolList, tags=["tools"])
async def tools() -> Response:
    """`remember`, `recall`, `forget` and `search_memory` as OpenAI function-calling tool
    definitions."""
    return json_response({"tools": TOOLS})


@router.post(
    "/memory/tools/call",
    operation_id="memory-tools-call",
    response_model=ToolResult,
    tags=["tools"],
    responses=ERRORS,
)
async def call_tool(request: Request, body: MemoryToolCall) -> Response:
    """Run one tool call; the reply's `content` is the text for the model, and
    `is_error` says the call failed (a miss, a refusal: said in `content`)."""
    memory = _memory(request)
    scope = await _scope(request, body.repo_root)
    if body.name == "search_memory":  # (a read: the one tool not run by the memory service)
        if body.session_id is not None:
            check_session_id(body.session_id)
        answer = await run_search_tool(running(request).sessions, scope, body.arguments)
    else:
        answer = await memory.tool(scope, body.name, body.arguments, session=body.session_id)
    return json_response({"name": body.name, "content": answer.text, "is_error": answer.failed})


@router.post(
    "/memory/procedures",
    operation_id="memory-procedures",
    status_code=201,
    response_model=SavedBlock,
    responses={**ERRORS, 200: MERGED},
)
async def procedure(request: Request, body: ProcedureIn, repo_root: str | None = None) -> Response:
    """`rememberSuccess` / `rememberFailure`: a procedural block with the task, the tools
    used and the outcome or error. The same record twice is kept once."""
    memory = _memory(request)
    scope = await _scope(request, repo_root)
    block, merged = await memory.procedure(scope, body)
    return json_response(saved(block, merged), 200 if merged else 201)


@router.post(
    "/memory/prune", operation_id="memory-prune", response_model=MemoryPruneOut, responses=ERRORS
)
async def prune(request: Request, body: MemoryPruneIn, repo_root: str | None = None) -> Response:
    """Archive stale, low-importance blocks (dry run by default). Pinned blocks, blocks
    recalled 3 times or more, and blocks with relations are never touched."""
    memory = _memory(request)
    scope = await _scope(request, repo_root)
    result = await memory.prune(
        scope,
        max_age_days=body.max_age_days,
        max_importance=body.max_importance,
        dry_run=body.dry_run,
    )
    return json_response(result)


async def _text_body(request: Request) -> str:
    """The text of a raw text/markdown or a JSON {"content"} body."""
    raw = await request.body()
    if not raw and "content-type" not in request.headers:  # (an empty text/markdown is fine)
        raise Invalid('send the new content: raw text/markdown, or JSON {"content": …}')
    if "json" in request.headers.get("content-type", ""):
        data = _json_body(raw)
        if isinstance(data, dict):
            strict.refuse_unknown(data.keys() - {"content"})
        if not isinstance(data, dict) or not isinstance(data.get("content"), str):
            raise Invalid('send {"content": "<markdown>"} or raw text/markdown')
        return str(data["content"])
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Invalid("the body is not UTF-8 text") from None


def _json_body(raw: bytes) -> Any:
    try:
        return strict.loads(raw)
    except ValueError as exc:
        raise Invalid(f"the body is not valid JSON: {exc}") from None


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(part) for part in err.get("loc", ())) or "body"
    return f"{where}: {err['msg']}"
