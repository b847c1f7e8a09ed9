"""/docs: the OpenAPI UI, with its script, style and icon served from the package
(fastapi-swagger ships a current Swagger UI), so it works offline and loads nothing
from another host."""

from __future__ import annotations

import asyncio
from importlib import resources

from fastapi import APIRouter
from fastapi.openapi.docs import get_swagger_ui_html
from starlette.responses import HTMLResponse, Response

from ..errors import NotFound

router = APIRouter(include_in_schema=False)

ASSETS = resources.files("fastapi_swagger") / "resources"
FILES = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon-32x32.png": "image/png",
}


@router.get("/docs")
async def docs() -> HTMLResponse:
    return get_swagger_ui_html(
        openapi_url="/openapi.json",
        title="aster-persist API",
        swagger_js_url="/docs/swagger-ui-bundle.js",
        swagger_css_url="/docs/swagger-ui.css",
        swagger_favicon_url="/docs/favicon-32x32.png",
    )


@router.get("/docs/{name}")
async def docs_file(name: str) -> Response:
    if name not in FILES:
        raise NotFound(f"no docs file {name[:60]!r}")
    data = await asyncio.to_thread((ASSETS / name).read_bytes)  # a few MB: off the loop
    return Response(data, media_type=FILES[name], headers={"Cache-Control": "max-age=86400"})
