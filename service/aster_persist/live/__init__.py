"""What is live: the change feed and session tails (``feed``), who follows them
(``followers``), the Server-Sent Events they send (``sse``), and the watcher that takes
in what other programs write to the data home (``watcher``). No web framework here:
the routers in ``api/events.py`` hand these streams to the SSE response."""
