"""The OpenAPI document, finished: the schemas of bodies that routes read raw, nested
unions named so that discriminator mappings are references, refusals as
``application/problem+json``, path parameters never empty, and links from a created
session to what can be done with it next."""

from __future__ import annotations

import copy
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import TypeAdapter

from ..errors import PROBLEM_MEDIA_TYPE
from ..schemas.memory import BlockFields
from ..schemas.tools import MEMORY_TOOLS
from . import rules
from .body import MAX_DEPTH
from .models import AppendBody

# The bodies that routes read raw (to refuse a duplicate key, or to take markdown too).
RAW_BODIES: dict[str, Any] = {"AppendBody": AppendBody, "BlockFields": BlockFields}


def openapi_document(app: FastAPI) -> dict[str, Any]:
    """The OpenAPI document, with the schemas of bodies that routes read raw."""
    if app.openapi_schema:
        return app.openapi_schema
    doc = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
    components = doc.setdefault("components", {}).setdefault("schemas", {})
    for title, model in RAW_BODIES.items():
        schema = TypeAdapter(model).json_schema(ref_template="#/components/schemas/{model}")
        for name, definition in schema.pop("$defs", {}).items():
            if components.setdefault(name, definition) != definition:
                raise RuntimeError(f"two schemas are named {name}: give one of them another name")
        components[title] = schema
    _name_nested_unions(doc, components)
    _where_and_how_to_authenticate(doc)
    _memory_tool_calls(components)
    _json_values(components)
    _typed_branches(components)
    _null_only_in_requests(doc)
    _declared_rules(doc)
    _parameters_never_null(doc)
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


def _declared_rules(doc: dict[str, Any]) -> None:
    """Every name, cursor and ``If-Match`` the server checks, with the pattern it checks
    (``api/rules.py``): parameters wherever they are, and ``repo_root`` in bodies."""
    for path, methods in doc["paths"].items():
        for operation in methods.values():
            op_id = operation["operationId"]
            for parameter in operation.get("parameters", []):
                name = parameter["name"].lower()
                pattern = rules.PATTERNS.get(name)
                if name == "name" and path.startswith("/v1/memory/blocks/"):
                    pattern = rules.BLOCK_NAME
                elif name == "cursor":
                    pattern = rules.CURSORS[op_id]
                elif name == "if-match":
                    pattern = rules.IF_MATCH[op_id.partition("-")[0]]
                elif (op_id, name) in rules.RESUME:
                    pattern = rules.RESUME[op_id, name]
                if pattern is not None:
                    _set_pattern(parameter["schema"], pattern)
    for title, properties in _request_bodies(doc):
        for name, schema in properties.items():
            pattern = rules.BODY_PATTERNS.get(name) or rules.BODY_PATTERNS.get(f"{title}.{name}")
            if pattern is None:
                continue
            for branch in schema.get("anyOf", [schema]):
                if branch.get("type") == "array":
                    _set_pattern(branch["items"], pattern)
                elif branch.get("type") == "string":
                    branch["pattern"] = pattern


def _null_only_in_requests(doc: dict[str, Any]) -> None:
    """A request field that may only be null (``tool_calls`` on a user, tool or system
    message) said as "not anything but null": the same values, but a generated
    TypeScript client (openapi-fetch) takes a property of type ``null`` for a read-only
    one and refuses a batch typed as ``components["schemas"]["AppendBody"]``."""
    components = doc["components"]["schemas"]
    seen: set[str] = set()
    stack: list[Any] = [
        operation["requestBody"]
        for methods in doc["paths"].values()
        for operation in methods.values()
        if "requestBody" in operation
    ]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack += node
        elif isinstance(node, dict):
            name = str(node.get("$ref", "")).rpartition("/")[2]
            if name and name not in seen:
                seen.add(name)
                stack.append(components[name])
            stack += [v for k, v in node.items() if k != "examples"]
    for name in seen:
        for key, schema in components[name].get("properties", {}).items():
            if isinstance(schema, dict) and schema.get("type") == "null":
                told = {k: v for k, v in schema.items() if k in ("title", "description")}
                components[name]["properties"][key] = {"not": {"not": {"type": "null"}}, **told}


def _request_bodies(doc: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The properties of every JSON request body, by its component's name."""
    components = doc["components"]["schemas"]
    found: dict[str, dict[str, Any]] = {}
    for methods in doc["paths"].values():
        for operation in methods.values():
            content = operation.get("requestBody", {}).get("content", {})
            schema = content.get("application/json", {}).get("schema", {})
            branches = list(schema.get("anyOf", [schema]))
            while branches:
                branch = branches.pop()
                name = branch.get("$ref", "").rpartition("/")[2]
                target = components[name] if name else branch
                branches += target.get("oneOf", [])  # the calls of each memory tool
                if "properties" in target:
                    found[name or operation["operationId"]] = target["properties"]
    return list(found.items())


def _memory_tool_calls(components: dict[str, Any]) -> None:
    """The body of ``POST /v1/memory/tools/call``, one schema per tool, told apart by
    ``name``: each takes its tool's own parameters as ``arguments``, from the definitions
    ``GET /v1/memory/tools`` serves. (The server also takes ``arguments`` as the JSON
    text of that object, as a model's tool call carries it.)"""
    base = components["MemoryToolCall"]
    mapping: dict[str, str] = {}
    for tool in MEMORY_TOOLS:
        title = "".join(part.capitalize() for part in tool.name.split("_")) + "Call"
        schema = {
            "title": title,
            "description": tool.description,
            "type": "object",
            "properties": {
                **copy.deepcopy(base["properties"]),
                "name": {"type": "string", "enum": [tool.name]},
                "arguments": tool.parameters(nulls=True),
            },
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
        if components.setdefault(title, schema) is not schema:
            raise RuntimeError(f"two schemas are named {title}: give one of them another name")
        mapping[tool.name] = f"#/components/schemas/{title}"
    components["MemoryToolCall"] = {
        "title": "MemoryToolCall",
        "description": base["description"],
        "examples": base["examples"],
        "oneOf": [{"$ref": ref} for ref in mapping.values()],
        "discriminator": {"propertyName": "name", "mapping": mapping},
    }


def _parameters_never_null(doc: dict[str, Any]) -> None:
    """A parameter left out is how a request says "none": a header or a query value is
    text, and ``null`` would be sent as the four letters, so no parameter is nullable."""
    for methods in doc["paths"].values():
        for operation in methods.values():
            for parameter in operation.get("parameters", []):
                schema = parameter["schema"]
                branches = [b for b in schema.get("anyOf", []) if b != {"type": "null"}]
                if "anyOf" in schema and len(branches) == 1:
                    del schema["anyOf"]
                    schema.update(branches[0])


TRANSCRIPT_BODIES = ("AppendBody", "SessionIn", "EventPage", "SessionDetail")
JSON_LEVELS = 4  # levels of a client's value the document spells out; below, any JSON


def _json_value(level: int) -> dict[str, Any]:
    """A client's value at a depth: its integers fit in 64 bits (as every JSON reader can
    take them). The levels are written out, not recursive, as generators of typed
    clients need; the last is any JSON to the document (the server still refuses an
    integer beyond 64 bits there, and nesting past its depth limit)."""
    described = {
        "description": "Any JSON value the store keeps as it came, in a field of the "
        f"client's own: an integer fits in 64 bits, and nesting stops at {MAX_DEPTH} levels."
    }
    if level + 1 == JSON_LEVELS:
        return described
    below = {"$ref": f"#/components/schemas/JsonValue{level + 1}"}
    return {
        **described,
        "anyOf": [
            {"type": "string"},
            {"type": "boolean"},
            {"type": "null"},
            {"type": "integer", "minimum": -(2**63), "maximum": 2**64 - 1},
            # any number: 1e300 is an integer to JSON Schema but a float to every
            # reader, kept as one; only an integer written out beyond 64 bits is
            # refused (422), which no schema can tell from it
            {"type": "number"},
            {"type": "array", "items": below},
            {"type": "object", "additionalProperties": below},
        ],
    }


def _json_values(components: dict[str, Any]) -> None:
    """A field of a transcript line the server does not know (an event's, a header's
    ``x_…``) holds a ``JsonValue``: any JSON the store can write back as it came. (Memory
    keeps such fields in YAML, which takes any number.)"""
    levels = {f"JsonValue{n or ''}": _json_value(n) for n in range(JSON_LEVELS)}
    for name, schema in levels.items():
        if components.setdefault(name, schema) is not schema:
            raise RuntimeError(f"two schemas are named {name}: give one of them another name")
    ref = {"$ref": "#/components/schemas/JsonValue"}
    seen = set(levels)

    def visit(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                visit(item)
        elif isinstance(node, dict):
            target = node.get("$ref", "").rpartition("/")[2]
            if target and target not in seen:
                seen.add(target)
                visit(components[target])
            if node.get("additionalProperties") is True:
                node["additionalProperties"] = dict(ref)
            for pattern, schema in node.get("patternProperties", {}).items():
                if schema == {}:
                    node["patternProperties"][pattern] = dict(ref)
            for child in node.values():
                visit(child)

    for name in TRANSCRIPT_BODIES:
        visit({"$ref": f"#/components/schemas/{name}"})


def _typed_branches(components: dict[str, Any]) -> None:
    """A rule "at least one of these keys" (``anyOf`` of ``required``) gives each branch
    its key's own type, less null, so that a null is not "given" and generators that
    need a type in every branch take it."""
    for component in components.values():
        for branch in component.get("anyOf", []):
            keys = branch.get("required", [])
            own = component.get("properties", {}).get(keys[0]) if len(keys) == 1 else None
            if own is None or set(branch) - {"required", "properties"}:
                continue
            given = [b for b in own.get("anyOf", [own]) if b != {"type": "null"}]
            typed = given[0] if len(given) == 1 else {"anyOf": given}
            bounds = branch.get("properties", {}).get(keys[0], {})
            kept = {k: v for k, v in typed.items() if k not in ("title", "description")}
            branch["properties"] = {keys[0]: {**copy.deepcopy(kept), **bounds}}


def _set_pattern(schema: dict[str, Any], pattern: str) -> None:
    """The pattern on a string schema, or on the string branch of a nullable one."""
    branches = [b for b in schema.get("anyOf", [schema]) if b.get("type") == "string"]
    if not branches:
        raise RuntimeError(f"a pattern for a schema that is not a string: {schema}")
    for branch in branches:
        branch["pattern"] = pattern


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
