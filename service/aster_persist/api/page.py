"""The dashboard: one HTML page and its files, served from the package (no build step).

The page talks only to this daemon; its Content-Security-Policy says so to the browser.
"""

from __future__ import annotations

from importlib import resources

from fastapi import APIRouter
from starlette.responses import Response

from ..errors import NotFound

router = APIRouter(include_in_schema=False)

WEB = resources.files("aster_persist") / "web"
TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}
POLICY = (
    "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; "
    "script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
    "form-action 'self'"
)
HEADERS = {
    "Content-Security-Policy": POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def _file(name: str) -> Response:
    suffix = name[name.rfind(".") :] if "." in name else ""
    target = WEB / name
    if suffix not in TYPES or "/" in name or name.startswith(".") or not target.is_file():
        raise NotFound(f"no page file {name[:60]!r}")
    media = TYPES[suffix] + "; charset=utf-8"
    return Response(target.read_bytes(), media_type=media, headers=HEADERS)


@router.get("/")
async def page() -> Response:
    """The dashboard."""
    return _file("index.html")


@router.get("/ui/{name}")
async def page_file(name: str) -> Response:
    return _file(name)
