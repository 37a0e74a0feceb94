"""A real HTTP server on loopback speaking the chat-completions protocol with scripted replies.

A fake model, for the protocol's cases only (a dead endpoint, a slow one, a malformed stream,
uncited text, tool calls); what a real model does is tested through the real model server.
Each reply is a list of steps: text pieces, tool calls, pauses, raw lines, or an HTTP status.
Every request body is kept, so a test reads exactly what the product sent.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    text: list[str] = field(default_factory=list)  # content pieces, each its own chunk
    tool_calls: list[dict] = field(
        default_factory=list
    )  # {"name": ..., "arguments": {...} or raw JSON text}
    delay: float = 0.0  # seconds before the first byte of the stream
    status: int = 200
    error_body: str = ""
    raw: list[str] = field(default_factory=list)  # lines sent as they are, instead of chunks


class ScriptedModel:
    """`replies`: one Reply per request, in order (the last one repeats)."""

    def __init__(self, replies: list[Reply], model: str = "scripted"):
        self.replies = replies
        self.model = model
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                if self.path.endswith("/models"):
                    self._json(
                        200, {"object": "list", "data": [{"id": server.model, "object": "model"}]}
                    )
                else:
                    self._json(404, {"error": "not found"})

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append(body)
                reply = server.replies[min(len(server.requests) - 1, len(server.replies) - 1)]
                if reply.status != 200:
                    self._json(reply.status, {"error": {"message": reply.error_body or "refused"}})
                    return
                time.sleep(reply.delay)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    for line in reply.raw or list(_chunks(reply, server.model)):
                        self.wfile.write(line.encode() + b"\n\n")
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the product hung up (a deadline)
                self.close_connection = True

            def _json(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> ScriptedModel:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _chunks(reply: Reply, model: str):
    def chunk(delta: dict, finish: str | None = None) -> str:
        return "data: " + json.dumps(
            {
                "id": "c1",
                "object": "chat.completion.chunk",
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
        )

    yield chunk({"role": "assistant"})
    for piece in reply.text:
        yield chunk({"content": piece})
    for index, call in enumerate(reply.tool_calls):
        arguments = (
            call["arguments"]
            if isinstance(call["arguments"], str)
            else json.dumps(call["arguments"])
        )
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": f"call_{index}",
                        "type": "function",
                        "function": {"name": call["name"], "arguments": arguments[:5]},
                    }
                ]
            }
        )
        yield chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[5:]}}]})
    yield chunk({}, "tool_calls" if reply.tool_calls else "stop")
    yield "data: [DONE]"
