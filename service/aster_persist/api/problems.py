"""One rendering for every error: RFC 9457 problem details, never a traceback."""

from __future__ import annotations

import logging
import re

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from ..errors import AsterError, problem_body
from .plumbing import problem_headers, problem_response

log = logging.getLogger("aster_persist")

_HTTP_CODES = {
    400: ("bad_request", "Bad request"),
    404: ("not_found", "Not found"),
    405: ("method_not_allowed", "Method not allowed"),
    406: ("not_acceptable", "Not acceptable"),
    415: ("unsupported_media_type", "Unsupported media type"),
}


async def _aster_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, AsterError)
    if exc.status >= 500:
        log.error("%s %s failed: %s", request.method, request.url.path, exc.detail)
    return problem_response(exc.problem(), problem_headers(exc))


async def _validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    errors = []
    for err in exc.errors():
        loc = ".".join(str(part) for part in err.get("loc", ()))
        errors.append({"loc": loc, "msg": err.get("msg", ""), "type": err.get("type", "")})
    first = errors[0] if errors else {"loc": "request", "msg": "invalid"}
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    body = problem_body(
        422, "validation_failed", "Invalid request", f"{first['loc']}: {first['msg']}{more}", errors
    )
    return problem_response(body)


def allowed_methods(request: Request) -> list[str]:
    """The methods the API documents at this path (a 405 from one route names only its
    own, not those of the routes beside it)."""
    table = getattr(request.app.state, "allowed_methods", None)
    if table is None:
        table = [
            (
                re.compile("^" + re.sub(r"\{[^}/]+\}", "[^/]+", path) + "$"),
                sorted(m.upper() for m in ops),
            )
            for path, ops in sorted(  # the most specific first: /sessions/import, not /{id}
                request.app.openapi()["paths"].items(), key=lambda item: item[0].count("{")
            )
        ]
        request.app.state.allowed_methods = table
    return next((methods for pattern, methods in table if pattern.match(request.url.path)), [])


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    code, title = _HTTP_CODES.get(exc.status_code, ("http_error", "HTTP error"))
    detail = exc.detail if isinstance(exc.detail, str) else title
    if exc.status_code == 404 and detail == "Not Found":
        detail = f"no route for {request.method} {request.url.path}"
    headers = dict(exc.headers) if exc.headers else None
    if exc.status_code == 405:
        detail = f"{request.method} is not allowed on {request.url.path}"
        headers = {**(headers or {}), "Allow": ", ".join(allowed_methods(request))}
    return problem_response(problem_body(exc.status_code, code, title, detail), headers)


async def _not_utf8(request: Request, exc: Exception) -> Response:
    # JSON may carry lone surrogates ("\\ud800") that no file can store; they are caught
    # where text is encoded, before anything is written.
    body = problem_body(
        422,
        "invalid_text",
        "Invalid request",
        "text fields must be valid Unicode (a lone surrogate was sent)",
    )
    return problem_response(body)


async def _crash(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error in %s %s", request.method, request.url.path)
    body = problem_body(
        500,
        "internal_error",
        "Internal error",
        "the service failed to handle this request; the log has the details",
    )
    return problem_response(body)


def install(app: FastAPI) -> None:
    app.add_exception_handler(AsterError, _aster_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(UnicodeEncodeError, _not_utf8)
    app.add_exception_handler(Exception, _crash)
