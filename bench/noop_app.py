"""The baseline: a no-op FastAPI POST endpoint with a pydantic body, served like the daemon."""

from __future__ import annotations

from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict

app = FastAPI()


class Body(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: str
    role: str
    content: str | None = None


@app.post("/noop", status_code=201)
async def noop(body: Body) -> dict[str, bool]:
    return {"ok": True}
