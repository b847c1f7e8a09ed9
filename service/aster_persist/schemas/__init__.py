"""The wire and line formats: what the HTTP API takes and gives, and the transcript line
format. Pydantic models and TypedDicts only: no web framework, no storage, so the
server, MCP and the client all read the same definitions."""
