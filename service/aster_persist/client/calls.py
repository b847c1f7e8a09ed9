"""How each endpoint is written once for both clients: a function builds a `Call` (the
request and how to read its reply), and the `endpoint` descriptor runs it blocking on a
`Client` and awaitable on an `AsyncClient`.

Parameters left as ``None`` are not sent; booleans go as ``true``/``false`` and lists as
repeated parameters. The readers here turn a successful reply into its model.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, ParamSpec, Protocol, TypeVar, overload

import httpx
import orjson
from pydantic import BaseModel

from ..schemas.memory import Note, SavedBlock


class Blocking(Protocol):
    """What an endpoint method is blocking on (`Client`)."""

    blocking: Literal[True]

    def run(self, call: Call[Any]) -> Any: ...


class Asynchronous(Protocol):
    """What an endpoint method is awaitable on (`AsyncClient`)."""

    blocking: Literal[False]

    def run(self, call: Call[Any]) -> Awaitable[Any]: ...


T = TypeVar("T")
P = ParamSpec("P")
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request and how to read its reply."""

    method: str
    path: str
    read: Callable[[httpx.Response], T]
    params: dict[str, Any] = field(default_factory=dict)
    json: Any = None
    content: bytes | Iterable[bytes] | None = None  # an iterable: sent as it is read
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float | None = None
    answers: tuple[int, ...] = ()  # refusal statuses that are answers, not errors

    def request(self, http: httpx.Client | httpx.AsyncClient) -> httpx.Request:
        params = {k: _param(v) for k, v in self.params.items() if v is not None}
        return http.build_request(
            self.method,
            self.path,
            params=params,
            json=self.json,
            content=self.content,
            headers=self.headers,
            timeout=httpx.Timeout(10, read=self.timeout)
            if self.timeout
            else httpx.USE_CLIENT_DEFAULT,
        )


def _param(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    return list(value) if isinstance(value, list | tuple) else value  # repeated


def read_model(cls: type[M]) -> Callable[[httpx.Response], M]:
    return lambda response: cls.model_validate_json(response.content)


def read_saved_or_note(response: httpx.Response) -> SavedBlock | Note:
    data = orjson.loads(response.content)
    return SavedBlock.model_validate(data) if "name" in data else Note.model_validate(data)


def read_json(response: httpx.Response) -> Any:
    return orjson.loads(response.content)


def read_nothing(response: httpx.Response) -> None:
    return None


def read_text(response: httpx.Response) -> str:
    return response.text


def body_of(**fields: Any) -> dict[str, Any]:
    """A JSON body from keyword arguments, leaving out the ones not given."""
    return {k: v for k, v in fields.items() if v is not None}


def if_match_header(etag: str | None) -> dict[str, str]:
    return {"If-Match": etag} if etag else {}


class endpoint(Generic[P, T]):
    """A method of both clients from one request description: blocking on `Client`,
    awaitable on `AsyncClient`."""

    def __init__(self, build: Callable[P, Call[T]]) -> None:
        self.build = build
        self.__doc__ = build.__doc__

    @overload
    def __get__(self, obj: None, owner: type) -> endpoint[P, T]: ...
    @overload
    def __get__(self, obj: Blocking, owner: type) -> Callable[P, T]: ...
    @overload
    def __get__(self, obj: Asynchronous, owner: type) -> Callable[P, Awaitable[T]]: ...
    def __get__(self, obj: Any, owner: type) -> Any:
        if obj is None:
            return self
        build, send = self.build, obj.run

        @functools.wraps(build)
        def bound(*args: Any, **kwargs: Any) -> Any:
            return send(build(*args, **kwargs))

        return bound


Scope = str | None  # a project's repository root; None for global memory
