"""The team on the wire: ``GET /v1/team``."""

from __future__ import annotations

from pydantic import BaseModel, Field


class MachineSeen(BaseModel):
    machine: str
    last_seen: float = Field(description="When a line of it last came, in Unix seconds.")


class Pending(BaseModel):
    out: int = Field(description="Sessions of this machine with lines not published yet.")
    # None: not known while the cluster cannot be asked
    in_: int | None = Field(
        alias="in", description="Lines of other machines not taken in yet (None: unknown)."
    )


class Lag(BaseModel):
    p50: float | None = Field(
        description="Milliseconds from a line's arrival in the stream to its copy here, the median of the last 100."
    )
    max: float | None


class SessionProblem(BaseModel):
    session_id: str
    problem: str = Field(description="Why it is not shared (or copied) further.")


class SharedMemory(BaseModel):
    shared_projects: int = Field(description="Projects whose memory this machine shares.")
    pending: int = Field(description="Memory files changed here and not set in the team yet.")
    conflicts: int = Field(
        description="Changes here that met another machine's since the daemon started "
        "(each a `memory.conflict` in the journal and in `/v1/memory/review`)."
    )
    sent: int = Field(description="Versions set in the team after they waited, since start.")
    applied: int = Field(description="Versions of other machines put in place, since start.")
    problems: list[str] = Field(
        description="Files not taken in as the team holds them, and why (a value that is "
        "not of the contract, written over by the next change here; a secret, refused)."
    )


class TeamStatus(BaseModel):
    enabled: bool = Field(description="Joined to a team (ASTER_TEAM_URL) or alone.")
    machine: str
    connected: bool
    error: str | None
    servers: list[str]
    replicas: int | None = Field(description="The replicas of the team's stream.")
    machines: list[MachineSeen]
    pending: Pending
    problems: list[SessionProblem] = Field(
        description="Sessions that cannot be published or copied on, and why."
    )
    memory: SharedMemory
    published: int = Field(description="Lines this daemon published since it started.")
    applied: int = Field(description="Lines of other machines it copied since it started.")
    lag_ms: Lag
