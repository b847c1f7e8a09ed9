"""The Python client of a running daemon: ``Client`` (blocking) and ``AsyncClient``.

Both have the same methods, one per endpoint, typed with the models the API itself
uses, and both raise the same typed errors, built from the problem body of a refusal
(``ApiError`` and one ``...Error`` per status, such as ``NotFoundError``; no name is
one of the server's own errors)::

    with Client() as aster:                       # ASTER_URL, ASTER_TOKEN or the home's token
        sid = aster.create_session(repo_root="/src/app").id
        aster.append(sid, {"type": "message", "role": "user", "content": "hi"})
        for event in aster.follow():              # the change feed, resumed after a drop
            ...

    async with AsyncClient() as aster:
        page = await aster.search("flaky test")

Each method is written once, as a function that describes its request (`Call`); the
`endpoint` descriptor runs it blocking on a `Client` and awaitable on an `AsyncClient`.
``follow`` and ``follow_session`` reconnect by themselves when the connection drops (the
daemon restarted, the network blinked), with ``Last-Event-ID`` set to the last item they
yielded, so nothing is missed and nothing is repeated.

The package, one module per concept (all of it HTTP only: httpx, pydantic, `schemas/`,
never a server module — a test checks each of them)::

    errors.py        the error classes (`ApiError`, `NotFoundError`, …), from a problem body
    calls.py         `Call`, the `endpoint` descriptor, the readers of replies
    connection.py    the daemon's URL and the token to send
    endpoints.py     every endpoint (sessions.py and memory.py hold their groups)
    sse.py           reading a followed stream, and where to resume it
    blocking.py      `Client`
    asynchronous.py  `AsyncClient`
"""

from ..paths import here
from .asynchronous import AsyncClient
from .blocking import Client
from .calls import Call, Scope, endpoint
from .connection import DEFAULT_URL, token_for
from .errors import (
    ApiError,
    BadRequestError,
    ConflictError,
    DaemonUnavailable,
    ForbiddenError,
    InsufficientStorageError,
    InvalidRequestError,
    NotFoundError,
    PayloadTooLargeError,
    PreconditionFailedError,
    ServiceError,
    UnauthorizedError,
    UnavailableError,
    error_of,
)

__all__ = [
    "DEFAULT_URL",
    "ApiError",
    "AsyncClient",
    "BadRequestError",
    "Call",
    "Client",
    "ConflictError",
    "DaemonUnavailable",
    "ForbiddenError",
    "InsufficientStorageError",
    "InvalidRequestError",
    "NotFoundError",
    "PayloadTooLargeError",
    "PreconditionFailedError",
    "Scope",
    "ServiceError",
    "UnauthorizedError",
    "UnavailableError",
    "endpoint",
    "error_of",
    "here",
    "token_for",
]

# The clients and their errors keep the module they had before the package was split:
# tracebacks and reprs say `aster_persist.client.NotFoundError` (httpx does the same for
# its own names). `Call` and `endpoint` are left alone: their annotations are resolved in
# the module that defines them.
for _public in (Client, AsyncClient, ServiceError, DaemonUnavailable, error_of, token_for):
    _public.__module__ = __name__
for _error in ApiError, *ApiError.__subclasses__():
    _error.__module__ = __name__
del _public, _error
