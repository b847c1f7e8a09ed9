"""The OpenAPI document, finished: the schemas of bodies that routes read raw, nested
unions named so that discriminator mappings are references, refusals as
``application/problem+json``, path parameters never empty, and links from a created
session to what can be done with it next."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import TypeAdapter

from ..errors import PROBLEM_MEDIA_TYPE
from ..storage.home import ULID_RE
from ..storage.memory.names import NAME_RE
from .models import AppendBody


def openapi_document(app: FastAPI) -> dict[str, Any]:
    """The OpenAPI document, with the schemas of bodies that routes read raw."""
    if app.openapi_schema:
        return app.openapi_schema
    doc = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
    schema = TypeAdapter(AppendBody).json_schema(ref_template="#/components/schemas/{model}")
    components = doc.setdefault("components", {}).setdefault("schemas", {})
    for name, definition in schema.pop("$defs", {}).items():
        if components.setdefault(name, definition) != definition:
            raise RuntimeError(f"two schemas are named {name}: give one of them another name")
    components["AppendBody"] = schema
    _name_nested_unions(doc, components)
    _where_and_how_to_authenticate(doc)
    _path_patterns(doc)
    _conditional_and_busy_answers(doc)
    _problems_as_problem_json(doc)
    _path_segments_not_empty(doc)
    _session_links(doc)
    app.openapi_schema = doc
    return doc


def _path_segments_not_empty(doc: dict[str, Any]) -> None:
    """A path parameter is one whole, non-empty segment: an empty one names another
    resource (``/v1/memory/blocks/`` is the list), so the document says minLength 1."""
    for methods in doc["paths"].values():
        for operation in methods.values():
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "path":
                    parameter.setdefault("schema", {}).setdefault("minLength", 1)


def _session_links(doc: dict[str, Any]) -> None:
    """OpenAPI links: what a client can do next with the session it just created or
    deleted (stateful API tests walk them)."""
    by_id = {op["operationId"]: op for methods in doc["paths"].values() for op in methods.values()}

    def link(source: str, code: str, expression: str, *targets: str) -> None:
        response = by_id[source]["responses"][code]
        response["links"] = {
            target: {"operationId": target, "parameters": {"session_id": expression}}
            for target in targets
        }

    link(
        "sessions-create",
        "201",
        "$response.body#/id",
        "sessions-get",
        "sessions-append",
        "sessions-events",
        "sessions-rename",
        "sessions-delete",
    )
    link("sessions-append", "201", "$request.path.session_id", "sessions-events", "sessions-get")
    link("sessions-rename", "200", "$response.body#/id", "sessions-get", "sessions-delete")
    link("sessions-delete", "204", "$request.path.session_id", "sessions-get", "sessions-restore")


def _problems_as_problem_json(doc: dict[str, Any]) -> None:
    """Refusals are sent as `application/problem+json`; say so, with their schema."""
    for methods in doc["paths"].values():
        for op in methods.values():
            for code, response in op.get("responses", {}).items():
                content = response.get("content", {})
                if (
                    code[0] in "45"
                    and PROBLEM_MEDIA_TYPE in content
                    and "application/json" in content
                ):
                    content[PROBLEM_MEDIA_TYPE] = content.pop("application/json")


def _name_nested_unions(node: Any, components: dict[str, Any]) -> None:
    """A union inside a discriminated union (messages, by role, inside events, by type)
    becomes a named schema, and the outer union loses its discriminator: a mapping must
    name an object schema, and a union is not one, so generators refuse it. The outer
    union is then a plain ``oneOf`` (the event types do not overlap), and the messages
    keep their own discriminator, on ``role``."""
    if isinstance(node, list):
        for item in node:
            _name_nested_unions(item, components)
        return
    if not isinstance(node, dict):
        return
    mapping = node.get("discriminator", {}).get("mapping", {})
    nested = False
    for value, target in list(mapping.items()):
        if isinstance(target, dict):
            nested = True
            name = f"{value.capitalize()}Event"
            components.setdefault(name, target)
            ref = f"#/components/schemas/{name}"
            node["oneOf"] = [{"$ref": ref} if item == target else item for item in node["oneOf"]]
    if nested:
        del node["discriminator"]
    for child in list(node.values()):
        _name_nested_unions(child, components)


def _where_and_how_to_authenticate(doc: dict[str, Any]) -> None:
    """The daemon's default address, and its bearer token: required once the daemon is
    exposed beyond loopback (or ASTER_AUTH is on), not otherwise, so both are listed."""
    doc["servers"] = [{"url": "http://127.0.0.1:4627", "description": "The default address"}]
    doc["components"]["securitySchemes"] = {
        "bearer": {
            "type": "http",
            "scheme": "bearer",
            "description": "ASTER_TOKEN, or the token file in the data home; required when "
            "the daemon is exposed beyond loopback or ASTER_AUTH is on.",
        }
    }
    doc["security"] = [{}, {"bearer": []}]


# What a path segment must be, in the server's own words (the store checks these): a
# request valid by the document names something that can exist. (A session id is not
# given its pattern yet: /v1/sessions/import and its siblings would then be paths that
# the session routes do not match, and answering those 405 needs the routing to agree.)
PATH_PATTERNS: dict[str, str] = {"entry_id": ULID_RE.pattern}
BLOCK_PATTERN = NAME_RE.pattern


def _path_patterns(doc: dict[str, Any]) -> None:
    for path, methods in doc["paths"].items():
        for operation in methods.values():
            for parameter in operation.get("parameters", []):
                if parameter.get("in") != "path":
                    continue
                pattern = PATH_PATTERNS.get(parameter["name"])
                if parameter["name"] == "name" and path.startswith("/v1/memory/blocks/"):
                    pattern = BLOCK_PATTERN
                if pattern is not None:
                    parameter["schema"]["pattern"] = pattern


def _conditional_and_busy_answers(doc: dict[str, Any]) -> None:
    """A GET that reads ``If-None-Match`` can answer 304 with the ETag; a stream can
    answer 503 with ``Retry-After`` when every stream slot is taken."""
    problem = {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}}
    for methods in doc["paths"].values():
        for operation in methods.values():
            names = {
                p["name"].lower() for p in operation.get("parameters", []) if p["in"] == "header"
            }
            responses = operation["responses"]
            if "if-none-match" in names:
                responses["304"] = {
                    "description": "Not modified: the ETag sent is still the current one",
                    "headers": {"ETag": {"schema": {"type": "string"}}},
                }
            if "text/event-stream" in responses.get("200", {}).get("content", {}):
                responses["503"] = {
                    "description": "Every stream slot is taken (ASTER_MAX_SUBSCRIBERS)",
                    "headers": {"Retry-After": {"schema": {"type": "integer"}}},
                    "content": problem,
                }
