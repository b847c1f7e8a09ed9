"""The names the wire format gives things, and their rules: a session id (a ULID), a
repository root (an absolute path), a project's folder (its slug), a memory block's
name. They are checked wherever a name comes in; a name that breaks its rule is the
server's ``InvalidName`` (422), imported when one is raised, so loading these rules
loads no server module.
"""

from __future__ import annotations

import hashlib
import re

ULID_RE = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
REPO_ROOT_RE = re.compile(r"^/[^\x00]{0,4095}$")  # absolute, no NUL, at most 4096 characters
SLUG_RE = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,79}-[0-9a-f]{8}$")
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
_SLUG_RUN = re.compile(r"[^A-Za-z0-9._]+")


def project_slug(repo_root: str) -> str:
    """Readable, collision-free folder name for a repository root (SPEC §2)."""
    # Dots are trimmed from the ends too, so a slug never names a hidden folder.
    readable = _SLUG_RUN.sub("-", repo_root).strip("-.")[:80].strip("-.") or "root"
    digest = hashlib.sha256(repo_root.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{readable}-{digest}"


def check_session_id(session_id: str) -> str:
    if not isinstance(session_id, str) or not ULID_RE.fullmatch(session_id):
        raise _invalid_name(
            "session id must be a ULID: 26 characters of Crockford base32 in upper case"
        )
    return session_id


def check_slug(slug: str) -> str:
    if not SLUG_RE.fullmatch(slug) or slug in (".", ".."):
        raise _invalid_name(f"not a project slug: {slug[:100]!r}")
    return slug


def check_name(name: str) -> str:
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise _invalid_name(
            "a block name is 1 to 64 characters of a-z, 0-9 and '-', starting with a letter or digit"
        )
    return name


def _invalid_name(message: str) -> Exception:
    from ..errors import InvalidName

    return InvalidName(message)
