"""The MCP server at ``/mcp``: the memory tools, the session tools, resources and the
prompt, over the same services as the REST API (``server.py``), loaded on a worker
thread at the first request so that starting the daemon does not pay for the MCP SDK
(``lazy.py``)."""
