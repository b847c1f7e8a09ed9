"""A scripted OpenAI-compatible chat-completions server on a loopback port: the one
fake the learning tests use, at the true boundary (the model). It speaks the real wire
format; what it answers is scripted per request kind (the `json_schema` name the
daemon asks for), or computed by a responder from the request."""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[dict[str, Any]], "Reply"]


@dataclass
class Reply:
    """One answer: the message text (a dict is sent as JSON), or a raw status and body."""

    content: Any = None
    status: int = 200
    body: str | None = None
    delay: float = 0.0
    hold: threading.Event | None = None  # answer only once this is set
    trickle: float = 0.0  # send the body a byte at a time, this many seconds apart


@dataclass
class ScriptedModel:
    port: int = 0
    script: dict[str, deque[Reply]] = field(default_factory=lambda: defaultdict(deque))
    responders: dict[str, Responder] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    arrived: threading.Event = field(default_factory=threading.Event)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def then(self, kind: str, *replies: Reply | dict[str, Any]) -> None:
        """Queue answers to requests of ``kind`` (memory_items, session_title,
        consolidation)."""
        for reply in replies:
            self.script[kind].append(reply if isinstance(reply, Reply) else Reply(reply))

    def of(self, kind: str) -> list[dict[str, Any]]:
        """The requests of one kind received so far."""
        return [r for r in self.requests if kind_of(r) == kind]

    def prompt(self, request: dict[str, Any]) -> str:
        return "\n".join(str(m.get("content")) for m in request["messages"])

    def answer(self, request: dict[str, Any]) -> Reply:
        kind = kind_of(request)
        if self.script[kind]:
            return self.script[kind].popleft()
        if kind in self.responders:
            return self.responders[kind](request)
        if kind == "session_title":
            return Reply({"title": "A scripted title"})
        if kind == "memory_items":
            return Reply({"items": []})
        return Reply({"merges": [], "archives": [], "new": []})

    def start(self) -> ScriptedModel:
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                request = json.loads(self.rfile.read(length))
                request["_path"] = self.path
                request["_auth"] = self.headers.get("Authorization")
                model.requests.append(request)
                model.arrived.set()
                reply = model.answer(request)
                if reply.hold is not None:
                    reply.hold.wait(60)
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.body is not None or reply.status != 200:
                    data = (reply.body or '{"error": {"message": "scripted failure"}}').encode()
                else:
                    text = reply.content
                    if not isinstance(text, str):
                        text = json.dumps(text)
                    data = json.dumps(
                        {
                            "id": "chatcmpl-scripted",
                            "object": "chat.completion",
                            "created": int(time.time()),
                            "model": request.get("model"),
                            "choices": [
                                {
                                    "index": 0,
                                    "message": {"role": "assistant", "content": text},
                                    "finish_reason": "stop",
                                }
                            ],
                            "usage": {
                                "prompt_tokens": 1,
                                "completion_tokens": 1,
                                "total_tokens": 2,
                            },
                        }
                    ).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if reply.trickle:
                        for byte in data:
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                            time.sleep(reply.trickle)
                    else:
                        self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the daemon gave up waiting (a timeout test) or was killed

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def kind_of(request: dict[str, Any]) -> str:
    schema = (request.get("response_format") or {}).get("json_schema") or {}
    if schema.get("name"):
        return str(schema["name"])
    text = json.dumps(request.get("messages"))
    if "short title" in text:
        return "session_title"
    if "tidy the long-term memory" in text:
        return "consolidation"
    return "memory_items"
