"""The bearer token of a data home: ``<home>/token``, private, made once, read without
following a link."""

from __future__ import annotations

import logging
import os
import secrets

from . import fs
from .home import FILE_MODE, Home

log = logging.getLogger("aster_persist")


def load_token(home: Home, *, enabled: bool, given: str | None) -> str | None:
    """The bearer token when auth is ``enabled``: the one ``given`` (ASTER_TOKEN), else
    ``<home>/token``, made with a new random token if missing."""
    if not enabled:
        return None
    if given:
        return given
    path = home.root / "token"
    try:
        fd = fs.open_file(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        token = fs.read_bytes(path).decode("utf-8").strip()
        if len(token) < 32:
            raise ValueError(f"the token in {path} is shorter than 32 characters") from None
        log.info("auth is on; the token is in %s", path)
        return token
    token = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(token + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    log.info("auth is on; a new token was written to %s", path)
    return token
