"""A client of any OpenAI-compatible chat-completions endpoint, asking for JSON.

It asks for ``response_format`` with a JSON schema; an endpoint that refuses that (a
400 naming it) is asked again with ``json_object``, then with nothing, and the answer is
parsed tolerantly (code fences and prose around the object are skipped). Timeouts,
connection errors, 429 and 5xx are retried with exponential backoff; anything else is
a `ModelError` at once.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import deque
from typing import Any

import httpx
import orjson

FORMATS = ("json_schema", "json_object", "none")


class ModelError(Exception):
    """The model could not be asked, or did not answer with a JSON object; ``transient``
    when asking again later may work (unreachable, timed out, 429, 5xx)."""

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


MAX_RETRY_AFTER = 30.0  # seconds: the most a Retry-After is honoured within one call


class ModelClient:
    """An OpenAI-compatible chat-completions endpoint asked for JSON answers, with
    retries, a whole-call deadline and response-format fallbacks."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        retries: int = 2,
        backoff: float = 0.5,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = httpx.AsyncClient(
            base_url=base_url.rstrip("/") + "/",
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
            transport=transport,
        )
        self.model = model
        self.timeout = timeout  # for a whole call: a reply that trickles in is cut too
        self.retries = retries
        self.backoff = backoff
        self.format = 0  # index into FORMATS: lowered once an endpoint refuses one
        self.latencies: deque[float] = deque(maxlen=200)  # seconds, successful calls

    async def close(self) -> None:
        await self.http.aclose()

    async def json(
        self,
        messages: list[dict[str, Any]],
        *,
        schema: dict[str, Any],
        name: str,
        max_tokens: int = 1024,
    ) -> dict[str, Any]:
        """The model's answer to ``messages`` as a JSON object."""
        attempt = 0
        while True:
            body: dict[str, Any] = {
                "model": self.model,
                "messages": messages,
                "temperature": 0,
                "max_tokens": max_tokens,
            }
            kind = FORMATS[self.format]
            if kind == "json_schema":
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": name, "schema": schema},
                }
            elif kind == "json_object":
                body["response_format"] = {"type": "json_object"}
            started = time.perf_counter()
            wait = self.backoff * 2**attempt
            try:
                response = await asyncio.wait_for(
                    self.http.post("chat/completions", json=body), self.timeout
                )
            except TimeoutError:
                problem = f"no whole reply within {self.timeout:g} s"
            except httpx.TransportError as exc:  # timeouts included
                problem = f"{type(exc).__name__}: {exc}"
            else:
                if (
                    response.status_code == 400
                    and self.format < len(FORMATS) - 1
                    and ("response_format" in response.text or "json_schema" in response.text)
                ):
                    self.format += 1  # this endpoint does not take that: ask more plainly
                    continue
                if response.status_code < 300:
                    self.latencies.append(time.perf_counter() - started)
                    return parse_answer(response)
                problem = f"HTTP {response.status_code}: {response.text[:200]}"
                if response.status_code != 429 and response.status_code < 500:
                    raise ModelError(problem)
                wait = max(wait, _retry_after(response))
            if attempt >= self.retries:
                raise ModelError(f"{problem} (after {attempt + 1} attempts)", transient=True)
            await asyncio.sleep(wait)
            attempt += 1


def _retry_after(response: httpx.Response) -> float:
    """The seconds a 429 or 503 asks to wait (capped), or 0."""
    try:
        return min(MAX_RETRY_AFTER, max(0.0, float(response.headers.get("retry-after", 0))))
    except ValueError:  # an HTTP date: the backoff will do
        return 0.0


def parse_answer(response: httpx.Response) -> dict[str, Any]:
    """The JSON object in a chat-completions reply's first message."""
    try:
        text = response.json()["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise ModelError(f"not a chat-completions reply: {response.text[:200]}") from None
    if not isinstance(text, str):
        raise ModelError("the reply has no text")
    return parse_object(text)


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def parse_object(text: str) -> dict[str, Any]:
    """A JSON object from model text: as it is, inside a code fence, or the outermost
    braces in prose."""
    candidates = [text.strip(), *_FENCE.findall(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            value = orjson.loads(candidate)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    raise ModelError(f"the reply is not a JSON object: {text[:200]!r}")
