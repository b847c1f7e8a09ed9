"""The services: what the routers, MCP, the watcher and the learner ask of the store.

A service turns one request into the stores' work and says what happened; it knows no
HTTP (routers map its outcomes and errors to status codes and headers). Each is built
in ``app.py`` from parts built there too (the single writer thread, the catalog
worker), and tells whoever ``app.py`` subscribed of what it did, instead of holding them::

    sessions/   transcripts: writes and their journal lines, reads, listings, search,
                imports, changes other programs made, pruning, what session tails read
    memory.py   memory: every read and write of blocks, core memory and notes, for
                REST, the fast path, the agent tools, MCP and the learner
"""
