"""The exception tree and its rendering as RFC 9457 problem details.

Stores and services raise these; one handler (``api/problems.py``) renders every one
of them, and every other source of errors (unknown route, wrong method, bad body,
crash) is rendered the same way. The ``code`` is the problem type's last part::

    AsterError (500 internal_error)
      NotFound (404 not_found)
        SessionNotFound (session_not_found), BlockNotFound (block_not_found)
      Conflict (409 conflict)
        SessionExists, SessionDamaged, SessionReadOnly, SessionOwnedElsewhere (a team's
        copy: append on its machine), NameTaken, AliasTaken,
        UnsafePath (symlink_refused), NotRegularFile (not_regular_file: a pipe, a
        socket or a device), LearningOff (learning_off: no model configured)
      PreconditionFailed (412 precondition_failed)
      Invalid (422 invalid)
        InvalidName, InvalidEvent, SecretDetected (secret_detected),
        ImportProblem (importers/reader.py), ValidationFailed
      Unauthorized (401), Forbidden (403)
      PayloadTooLarge (413), InsufficientStorage (507)
      ModelUnavailable (502), TooManySubscribers (503)
      StorageFailed (500 storage_failed)
        BaseMissing: the events a copy refers to cannot be read whole
    HomeUnavailable: the data home cannot be used (at start; never over HTTP);
      HomeInUse: another daemon holds it

The guard answers before any of this runs, with the same problem body: 401, 403, 408
(a stalled request), 413, 431 (a request head too large) and 503 (too many requests
at once).

A problem body never carries a traceback or the bytes of a rejected secret.
"""

from __future__ import annotations

from typing import Any, ClassVar

from .schemas.problems import PROBLEM_MEDIA_TYPE as PROBLEM_MEDIA_TYPE
from .schemas.problems import PROBLEM_TYPE as PROBLEM_TYPE


class AsterError(Exception):
    """Base of every error the service reports on purpose."""

    status: ClassVar[int] = 500
    code: ClassVar[str] = "internal_error"
    title: ClassVar[str] = "Internal error"

    def __init__(
        self,
        detail: str,
        *,
        errors: list[dict[str, Any]] | None = None,
        current: str | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.errors = errors
        self.current = current  # the ETag of what the request named, as it is now
        self.retry_after = retry_after  # seconds after which to try again

    def problem(self) -> dict[str, Any]:
        return problem_body(self.status, self.code, self.title, self.detail, self.errors)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled whole (an import's reading process raises these): every field kept."""
        return (_rebuilt, (type(self), self.detail, self.errors, self.current, self.retry_after))


def _rebuilt(
    kind: type[AsterError],
    detail: str,
    errors: list[dict[str, Any]] | None,
    current: str | None,
    retry_after: int | None,
) -> AsterError:
    return kind(detail, errors=errors, current=current, retry_after=retry_after)


class NotFound(AsterError):
    status = 404
    code = "not_found"
    title = "Not found"


class SessionNotFound(NotFound):
    code = "session_not_found"
    title = "Session not found"


class BlockNotFound(NotFound):
    code = "block_not_found"
    title = "Memory block not found"


class Conflict(AsterError):
    status = 409
    code = "conflict"
    title = "Conflict"


class SessionExists(Conflict):
    code = "session_exists"
    title = "Session already exists"


class SessionDamaged(Conflict):
    code = "session_damaged"
    title = "Session is damaged"


class SessionOwnedElsewhere(Conflict):
    code = "session_owned_elsewhere"
    title = "Session is owned by another machine"


class SessionReadOnly(Conflict):
    code = "session_read_only"
    title = "Session is read-only"


class NameTaken(Conflict):
    code = "name_taken"
    title = "Name taken"


class AliasTaken(Conflict):
    code = "alias_taken"
    title = "Alias taken"


class UnsafePath(Conflict):
    code = "symlink_refused"
    title = "Symbolic link refused"


class NotRegularFile(UnsafePath):
    """A pipe, socket or device where the home keeps a file: never opened (a pipe would
    block whoever reads it), refused like a link."""

    code = "not_regular_file"
    title = "Not a regular file"


LEARNING_OFF = (
    "learning is off: no model is configured (set ASTER_LLM_BASE_URL and ASTER_LLM_MODEL)"
)


class LearningOff(Conflict):
    """Learning was asked for and no model is configured."""

    code = "learning_off"
    title = "Learning is off"


class PreconditionFailed(AsterError):
    status = 412
    code = "precondition_failed"
    title = "Precondition failed"


class Invalid(AsterError):
    status = 422
    code = "invalid"
    title = "Invalid request"


class InvalidName(Invalid):
    code = "invalid_name"
    title = "Invalid name"


class InvalidEvent(Invalid):
    code = "invalid_event"
    title = "Invalid event"


class SecretDetected(Invalid):
    code = "secret_detected"
    title = "Secret detected"


class Unauthorized(AsterError):
    status = 401
    code = "unauthorized"
    title = "Unauthorized"


class Forbidden(AsterError):
    status = 403
    code = "forbidden"
    title = "Forbidden"


class PayloadTooLarge(AsterError):
    status = 413
    code = "payload_too_large"
    title = "Payload too large"


class InsufficientStorage(AsterError):
    status = 507
    code = "insufficient_storage"
    title = "Insufficient storage"


class StorageFailed(AsterError):
    status = 500
    code = "storage_failed"
    title = "Storage failed"


class ValidationFailed(Invalid):
    """A body refused as the framework refuses one that does not validate (the rules:
    ``schemas/strict.py``)."""

    code = "validation_failed"
    title = "Invalid request"


class BaseMissing(StorageFailed):
    """The events a copy refers to (``storage/transcripts/copies.py``) cannot be read
    whole: readers serve its own events and call it damaged."""


class HomeUnavailable(Exception):
    """The data home cannot be used; raised at start, never over HTTP."""


class HomeInUse(HomeUnavailable):
    """Another daemon holds the data home."""


def problem_body(
    status: int,
    code: str,
    title: str,
    detail: str,
    errors: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": PROBLEM_TYPE + code,
        "title": title,
        "status": status,
        "detail": detail,
        "code": code,
    }
    if errors is not None:
        body["errors"] = errors
    return body


class TooManySubscribers(AsterError):
    status = 503
    code = "too_many_subscribers"
    title = "Too many subscribers"


class ModelUnavailable(AsterError):
    """The configured model could not be asked, or gave no usable answer."""

    status = 502
    code = "model_unavailable"
    title = "The model could not be asked"
