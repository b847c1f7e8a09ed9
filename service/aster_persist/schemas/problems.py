"""The problem document on the wire (RFC 9457): the prefix of every problem ``type`` and
the media type of a refusal, read by the server that writes them and the client that
reads them."""

from __future__ import annotations

PROBLEM_TYPE = "urn:aster-persist:problem:"
PROBLEM_MEDIA_TYPE = "application/problem+json"
