"""Liveness and readiness on the wire."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class Health(BaseModel):
    status: str


class Readiness(BaseModel):
    status: str
    index: dict[str, Any]
    writable: bool
    degraded: str | None = None
