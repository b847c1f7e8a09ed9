"""What the sessions did and cost on the wire: ``GET /v1/stats``."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Spent(BaseModel):
    sessions: int = Field(description="Sessions with an event in the span (or group).")
    turns: int = Field(description="User and assistant messages.")
    tool_calls: int
    tool_errors: int = Field(description="Tool results that were errors.")
    tokens_in: int = Field(description="Tokens the models read, cached ones too.")
    tokens_out: int
    cached_in: int = Field(description="Of tokens_in, those read from a cache.")
    cost_usd: float | None = Field(
        description="An estimate in US dollars, of the models with a price (none: no "
        "model with tokens here has one)."
    )
    unpriced_models: list[str] = Field(
        description="Models with tokens here and no price: counted, never priced."
    )


class Group(Spent):
    key: str | None = Field(description="The day, repository root or model (None: unknown).")


class PriceTable(BaseModel):
    source: str = Field(description="Where the project's price table was read from.")
    date: str = Field(description="The day it was read.")
    overridden: list[str] = Field(description="Models priced by the `prices` setting.")


class Stats(BaseModel):
    since: str = Field(description="The first day counted (UTC).")
    until: str = Field(description="The last day counted (UTC).")
    repo_root: str | None
    group: str | None
    prices: PriceTable
    total: Spent
    groups: list[Group]
