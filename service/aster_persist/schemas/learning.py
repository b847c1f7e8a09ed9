"""Learning on the wire: extraction on demand, its status, and consolidation."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .numbers import WHOLE


class ExtractIn(BaseModel):
    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        json_schema_extra={"examples": [{"from_seq": 1, "to_seq": 12}]},
    )

    from_seq: Annotated[int, Field(ge=1), WHOLE] | None = Field(
        default=None, description="Default: the turn's start."
    )
    to_seq: Annotated[int, Field(ge=1), WHOLE] | None = Field(
        default=None, description="Default: the last event."
    )


class Queued(BaseModel):
    job: str
    queued: int


class ExtractionStatus(BaseModel):
    enabled: bool
    extraction: bool
    model: str | None
    queued: int
    in_progress: bool
    done: int
    failed: int
    accepted: int
    rejected: int
    last_errors: list[dict[str, Any]]
    model_latency_ms: dict[str, float | None]


class ConsolidateIn(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    proposal: dict[str, Any] | None = Field(
        default=None, description="A dry run's answer to apply as it is (else the model is asked)."
    )


class Consolidation(BaseModel):
    model_config = ConfigDict(extra="allow")

    scope: str
    applied: bool
    merges: list[dict[str, Any]]
    archives: list[dict[str, Any]]
    new: list[dict[str, Any]]
    rejected: list[dict[str, Any]]


class HeldItem(BaseModel):
    """What waits for review: an extracted item held back (instruction-like words from a
    tool result), or a team's memory conflict."""

    id: str = Field(description="The `memory.held` journal entry that holds it.")
    ts: str
    scope: str
    session: str | None
    item: dict[str, Any] = Field(description="The item as the model gave it (redacted).")
    reason: str
    origin: str = Field(
        description="Whose words it is made of: user, assistant or tool; `team` for a "
        "change of a shared memory file that met another machine's (`item.content` is this "
        "machine's version, `item.machine` the one whose version is in place)."
    )


class ReviewList(BaseModel):
    items: list[HeldItem]


class ReviewIn(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    decision: Literal["accept", "dismiss"] = Field(
        description="`accept` stores the item as a block (for a team's conflict: puts "
        "this machine's version back, for the team); `dismiss` refuses it for good (a "
        "conflict: the version in place stays)."
    )


class Reviewed(BaseModel):
    id: str
    decision: Literal["accept", "dismiss"]
    block: str | None = Field(default=None, description="The block it became, if accepted.")
