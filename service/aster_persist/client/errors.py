"""The client's errors: one class per refusal status, built from the problem body.

```
ServiceError
  DaemonUnavailable          nothing answered (not running, wrong URL)
  ApiError (any status)      the daemon refused: status, code, title, detail, errors
    BadRequestError (400), UnauthorizedError (401), ForbiddenError (403),
    NotFoundError (404), ConflictError (409), PreconditionFailedError (412),
    PayloadTooLargeError (413), InvalidRequestError (422), UnavailableError (503),
    InsufficientStorageError (507)
```

A status with no class of its own raises ``ApiError`` itself; a body that is not a
problem document still gives one (its reason phrase and the start of its text).

The names end in ``Error`` and none is the name of one of the server's own errors
(``aster_persist.errors``), so a traceback or an ``except`` says which side it is; the
finer server error is in ``code`` (``NotFoundError`` with ``session_not_found``).
"""

from __future__ import annotations

from typing import Any

import httpx

from ..schemas.problems import PROBLEM_TYPE


class ServiceError(Exception):
    """The daemon refused a request, or could not be asked."""


class DaemonUnavailable(ServiceError):
    """The daemon could not be reached (not running, wrong URL)."""


class ApiError(ServiceError):
    """A refusal, from its problem body: ``status``, ``code`` (the problem type's last
    part, such as ``session_not_found``), ``title``, ``detail`` and field ``errors``."""

    status = 0

    def __init__(self, status: int, problem: dict[str, Any]) -> None:
        self.status = status
        self.problem = problem
        kind = str(problem.get("type") or "")
        self.code = kind.removeprefix(PROBLEM_TYPE) if kind.startswith(PROBLEM_TYPE) else kind
        self.title = str(problem.get("title") or "")
        self.detail = str(problem.get("detail") or "")
        self.errors: list[dict[str, Any]] = list(problem.get("errors") or [])
        super().__init__(f"{status} {self.title}: {self.detail}")


class BadRequestError(ApiError):
    status = 400


class UnauthorizedError(ApiError):
    status = 401


class ForbiddenError(ApiError):
    status = 403


class NotFoundError(ApiError):
    status = 404


class ConflictError(ApiError):
    status = 409


class PreconditionFailedError(ApiError):
    status = 412


class PayloadTooLargeError(ApiError):
    status = 413


class InvalidRequestError(ApiError):
    """422: the request was understood and is wrong (a bad event, a secret, a name)."""

    status = 422


class UnavailableError(ApiError):
    """503: busy, or not ready yet."""

    status = 503


class InsufficientStorageError(ApiError):
    status = 507


_ERRORS: dict[int, type[ApiError]] = {
    cls.status: cls
    for cls in (
        BadRequestError,
        UnauthorizedError,
        ForbiddenError,
        NotFoundError,
        ConflictError,
        PreconditionFailedError,
        PayloadTooLargeError,
        InvalidRequestError,
        UnavailableError,
        InsufficientStorageError,
    )
}


def error_of(response: httpx.Response) -> ApiError:
    """The typed error for a refusal (``ApiError`` itself for a status without a class)."""
    try:
        problem = response.json()
        if not isinstance(problem, dict):
            raise ValueError
    except ValueError:
        problem = {"title": response.reason_phrase, "detail": response.text[:500]}
    return _ERRORS.get(response.status_code, ApiError)(response.status_code, problem)


def check(response: httpx.Response, answers: tuple[int, ...] = ()) -> httpx.Response:
    """The response, unless it is a refusal that is not one of the expected ``answers``."""
    if response.status_code >= 400 and response.status_code not in answers:
        raise error_of(response)
    return response


def unavailable(base: httpx.URL, exc: Exception) -> DaemonUnavailable:
    """The error for a request that reached no daemon."""
    return DaemonUnavailable(f"the daemon is not running at {base} ({exc})")
