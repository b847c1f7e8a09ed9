"""Checking the model's answers: extraction items and consolidation proposals.

Structure and safety only (meaning is the model's business): an item is accepted in its
normalised form or rejected with a reason, and every rejection is redacted: no secret of
the model's reaches the journal or the feed. Pure functions, no I/O.
"""

from __future__ import annotations

from typing import Any

from ..errors import Invalid
from ..secrets import scan_text
from ..storage.memory import slugify


def validate_items(
    answer: dict[str, Any], *, max_items: int, shown: set[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The model's items split into accepted (normalised) and rejected (with the reason,
    secrets redacted). Structure and safety only: meaning is the model's business."""
    items = answer.get("items")
    if not isinstance(items, list):
        return [], [{"item": redact(answer), "reason": "the answer has no items list"}]
    accepted: list[dict[str, Any]] = []
    rejected: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        if index >= max_items:
            rejected.append({"item": redact(item), "reason": f"more than {max_items} items"})
            continue
        problem = item_problem(item, shown)
        if problem:
            rejected.append({"item": redact(item), "reason": problem})
        else:
            accepted.append(normal_item(item))
    return accepted, rejected


def item_problem(item: Any, shown: set[str]) -> str | None:
    """Why an item cannot be kept, or None."""
    if not isinstance(item, dict):
        return "an item is not an object"
    if item.get("type") not in ("semantic", "procedural"):
        return f"type must be semantic or procedural, not {_quote(item.get('type'))}"
    if "scope" not in item:
        return "scope is missing: project, or global for what holds across projects"
    if item["scope"] not in ("project", "global"):
        return f"scope must be project or global, not {_quote(item['scope'])}"
    for key, limit in (("title", 200), ("content", 4000)):
        value = item.get(key)
        if not isinstance(value, str) or not value.strip():
            return f"{key} is missing"
        if len(value) > limit:
            return f"{key} is longer than {limit} characters"
    if not isinstance(item.get("reason"), str) or not item["reason"].strip():
        return "reason is missing: an item must say why it will matter later"
    for key in ("importance", "confidence"):
        value = item.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            return f"{key} must be a number from 0 to 1, not {_quote(value, 20, plain=True)}"
    tags = item.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        return "tags must be a list of strings"
    for key in ("supersedes", "conflicts_with"):
        names = item.get(key, [])
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            return f"{key} must be a list of names"
        unknown = [n for n in names if n not in shown]
        if unknown:
            shown_names = ", ".join(_quote(n, plain=True) for n in unknown)
            return f"{key} names memories it was not shown: {shown_names[:200]}"
    try:
        slugify(item["title"])
    except Invalid:
        return "the title gives no usable name"
    if not any(ch.isalnum() for ch in item["title"]):  # a model's "!!!" names nothing
        return "the title gives no usable name"
    secrets = [
        finding
        for key in ("title", "content", "reason")
        for finding in scan_text(str(item.get(key, "")), key)
    ] + [finding for tag in tags for finding in scan_text(tag, "tags")]
    if secrets:
        where = ", ".join(f"{f.kind} in {f.field}" for f in secrets)
        return f"secret detected ({where})"
    return None


def item_meta(item: dict[str, Any]) -> dict[str, Any]:
    """A validated item's frontmatter keys (its title is the index's one-line entry)."""
    meta = {
        "type": item["type"],
        "description": item["title"],
        "tags": item.get("tags") or [],
        "importance": item["importance"],
        "confidence": item["confidence"],
        "reason": item["reason"],
    }
    if item.get("origin"):  # whose words: the user's, the assistant's or a tool's
        meta["source_origin"] = item["origin"]
    return meta


def normal_item(item: dict[str, Any]) -> dict[str, Any]:
    keys = ("type", "title", "content", "importance", "confidence", "reason")
    out = {key: item[key] for key in keys}
    out["scope"] = item["scope"]
    out["tags"] = [t.strip() for t in item.get("tags", []) if t.strip()][:20]
    for key in ("supersedes", "conflicts_with"):
        if item.get(key):
            out[key] = list(dict.fromkeys(item[key]))
    return out


def _quote(value: Any, limit: int = 60, *, plain: bool = False) -> str:
    """A value of the model's for a rejection reason: quoted (or ``plain``) and cut, or
    only the kind of secret it holds (reasons are journaled and sent on the feed)."""
    text = str(value)
    found = scan_text(text)
    if found:
        return f"[redacted: {', '.join(sorted({f.kind for f in found}))}]"
    return text[:limit] if plain else repr(text[:limit])


def redact(value: Any) -> Any:
    """``value`` with every string that holds a secret replaced by what was found."""
    if isinstance(value, str):
        found = scan_text(value)
        return f"[redacted: {', '.join(sorted({f.kind for f in found}))}]" if found else value
    if isinstance(value, dict):
        return {k: redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


def validate_proposal(
    proposal: dict[str, Any], names: set[str], *, max_items: int
) -> dict[str, Any]:
    """A consolidation proposal reduced to what is well formed and names real blocks;
    what is dropped is listed under ``rejected`` with the reason."""
    plan: dict[str, Any] = {"merges": [], "archives": [], "new": [], "rejected": []}
    consumed: set[str] = set()  # blocks an accepted merge writes or archives
    for key in ("merges", "archives", "new"):
        if not isinstance(proposal.get(key) or [], list):
            plan["rejected"].append({key: redact(proposal[key]), "reason": f"{key} is not a list"})
            proposal = {**proposal, key: []}
    for merge in proposal.get("merges") or []:
        if not isinstance(merge, dict):
            plan["rejected"].append({"merge": redact(merge), "reason": "a merge is not an object"})
            continue
        sources = merge.get("from")
        into = merge.get("into")
        problem = None
        if not isinstance(into, str) or into not in names:
            problem = f"merge into an unknown block {_quote(into)}"
        elif (
            not isinstance(sources, list)
            or not sources
            or any(not isinstance(s, str) or s not in names for s in sources)
        ):
            problem = "merge from blocks that are not all known"
        elif not isinstance(merge.get("content"), str) or not merge["content"].strip():
            problem = "merge without content"
        elif not str(merge.get("reason") or "").strip():
            problem = "merge without a reason"
        elif scan_text(merge["content"]):
            problem = "secret detected in a merge"
        elif into in consumed or any(s in consumed for s in sources):
            problem = "merge names a block an earlier merge already takes in"
        if problem:
            plan["rejected"].append({"merge": redact(merge), "reason": problem})
            continue
        consumed.update([str(into), *map(str, sources or [])])
        plan["merges"].append(
            {
                "into": merge["into"],
                "from": [s for s in dict.fromkeys(sources or []) if s != merge["into"]],
                "content": merge["content"],
                "reason": redact(str(merge["reason"]))[:500],  # journaled: never a secret
            }
        )
    for archive in proposal.get("archives") or []:
        name = archive.get("name") if isinstance(archive, dict) else None
        if not isinstance(name, str) or name not in names:
            plan["rejected"].append({"archive": redact(archive), "reason": "unknown block"})
        elif name in consumed:
            reason = "archive of a block a merge already takes in"
            plan["rejected"].append({"archive": redact(archive), "reason": reason})
        elif not str(archive.get("reason") or "").strip():
            plan["rejected"].append({"archive": archive, "reason": "archive without a reason"})
        else:
            reason = redact(str(archive["reason"]))[:500]  # journaled: never a secret
            plan["archives"].append({"name": archive["name"], "reason": reason})
    fresh, rejected = validate_items(
        {"items": proposal.get("new") or []}, max_items=max_items, shown=names
    )
    plan["new"] = fresh
    plan["rejected"] += rejected
    return plan
