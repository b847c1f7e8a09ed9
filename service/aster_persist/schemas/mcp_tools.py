"""The tools only the MCP server offers, and the parameters an MCP call adds to the
memory tools to say where it comes from; each defined once, from ``tools.py``'s parts,
with what it does to the store (MCP's annotations) and the shape of its structured
result (MCP's output schema)."""

from __future__ import annotations

from .tools import (
    BLOCK_NAME,
    FORGET,
    MAX_HITS,
    MAX_LISTED,
    MAX_WINDOW,
    RECALL,
    REMEMBER,
    SEARCH_MEMORY,
    Param,
    ToolSpec,
    returns,
)

MAX_MEMORY_LISTED = 100  # blocks one list_memory call returns at most


ITEMS = returns(items="array")


def at_most(what: str, default: int, maximum: int) -> Param:
    """The ``limit`` of a tool that lists: how many of ``what`` it returns."""
    return Param(
        "limit",
        int,
        f"How many {what} to return ({default} unless given).",
        default=default,
        minimum=1,
        maximum=maximum,
    )


# -- what an MCP call says about where it comes from ---------------------------------------

REPO_ROOT = Param(
    "repo_root",
    str,
    "The absolute path of the repository root of the project whose memory to use (a "
    "subfolder or a git worktree resolves to its repository). Left out: the project "
    "this connection was opened for (`/mcp?repo_root=…`), else the client's first "
    "root; with neither, the global memory every project shares.",
)
SESSION_ID = Param(
    "session_id",
    str,
    "The id of the session making the call; the memory journal records it, and a new "
    "block names it as its source.",
)
SESSIONS_OF = Param(
    "repo_root", str, "Only sessions in this repository root. Without it, every session."
)

# -- the MCP tools ------------------------------------------------------------------------

SEARCH_SESSIONS = ToolSpec(
    "search_sessions",
    "Search past sessions (turns, tool calls and results, summaries): any of the "
    'words, best first; "phrases", prefix*, AND/OR/NOT and repo:/role:/after: '
    'filters work. A question in the first person ("what did I change") finds your own '
    'turns first, one about the user\'s words ("the path you gave") theirs. Each hit '
    "names its session and turn for get_session.",
    (
        Param("query", str, "Words, phrases and filters to search for.", required=True),
        SESSIONS_OF,
        at_most("hits", 10, MAX_HITS),
    ),
    read_only=True,
    output=ITEMS,
)
GET_SESSION = ToolSpec(
    "get_session",
    "Read a window of a session's transcript: the events after seq `after`, at "
    "most `limit` of them (long contents cut).",
    (
        Param(
            "session_id",
            str,
            "The session's id, as search_sessions and list_sessions give it.",
            required=True,
        ),
        Param(
            "after",
            int,
            "Start after the event with this seq (0, the start, unless given).",
            default=0,
            minimum=0,
        ),
        at_most("events", 50, MAX_WINDOW),
    ),
    read_only=True,
    output=returns(session_id="string", events="array", more="boolean"),
)
LIST_SESSIONS = ToolSpec(
    "list_sessions",
    "List sessions, most recently active first.",
    (
        SESSIONS_OF,
        at_most("sessions", 20, MAX_LISTED),
    ),
    read_only=True,
    output=ITEMS,
)
EDIT_BLOCK = ToolSpec(
    "edit_block",
    "Correct a memory block you recalled: replace its body (the markdown after the "
    "frontmatter), its one-line description or its tags; what you leave out stays as "
    "it is. Prefer this to forget-and-remember: the block keeps its name, history and "
    "importance, and the change is journaled and can be undone by a person.",
    (
        BLOCK_NAME,
        Param("body", str, "The new body, in full (markdown)."),
        Param("description", str, "The new one-line description shown in the index."),
        Param("tags", str, "The new tags, comma-separated; they replace the old ones."),
    ),
    destructive=True,
    idempotent=True,
    output=returns(result="string", name="string", scope="string"),
)
LIST_MEMORY = ToolSpec(
    "list_memory",
    "List memory blocks, most recently updated first, with their type, tags and "
    "description: what was learned lately, beyond the index in your instructions. "
    "Then recall(name) the ones that matter.",
    (at_most("blocks", 10, MAX_MEMORY_LISTED),),
    read_only=True,
    output=ITEMS,
)
RECORD_PROCEDURE = ToolSpec(
    "record_procedure",
    "Record how a task went, so a later session repeats what worked and avoids what "
    "failed: the outcome, the task in a few words, the tools used, and the result or "
    "the error. Record after a real success or failure, not for every step; the same "
    "record twice is kept once.",
    (
        Param("outcome", str, "success or failure.", required=True, choices=("success", "failure")),
        Param("task", str, "The task, in a few words.", required=True),
        Param("tools", str, "The tools or commands used, comma-separated."),
        Param("detail", str, "What came of it: the result, or the error and its cause."),
    ),
    idempotent=True,
    output=returns(result="string", name="string", scope="string", merged="boolean"),
)

MCP_TOOLS: tuple[ToolSpec, ...] = (
    REMEMBER.taking(REPO_ROOT, SESSION_ID).returning(result="string", scope="string"),
    RECALL.taking(REPO_ROOT, SESSION_ID).returning(name="string", scope="string", text="string"),
    FORGET.taking(REPO_ROOT).returning(result="string", name="string"),
    SEARCH_MEMORY.taking(REPO_ROOT).returning(items="array"),
    EDIT_BLOCK.taking(REPO_ROOT, SESSION_ID),
    LIST_MEMORY.taking(REPO_ROOT),
    RECORD_PROCEDURE.taking(REPO_ROOT, SESSION_ID),
    SEARCH_SESSIONS,
    GET_SESSION,
    LIST_SESSIONS,
)
