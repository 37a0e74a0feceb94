"""A real HTTP server on loopback whose routes a test sets, counting every request."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable


@dataclass
class Route:
    body: bytes = b""
    status: int = 200
    headers: dict[str, str] = field(
        default_factory=lambda: {"Content-Type": "text/html; charset=utf-8"}
    )


class WebServer:
    def __init__(self):
        self.routes: dict[str, Route | Callable] = {}
        self.post_routes: dict[str, Callable] = {}
        self.hits: Counter[str] = Counter()
        self.requests: list[tuple[str, dict[str, str]]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                server.hits[self.path] += 1
                server.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                route = server.routes.get(self.path)
                if callable(route):
                    route = route(self)
                    if route is None:
                        return
                if route is None:
                    route = Route(b"not found", 404, {"Content-Type": "text/plain"})
                etag = route.headers.get("ETag")
                if etag and self.headers.get("If-None-Match") == etag:
                    self.send_response(304)
                    self.send_header("ETag", etag)
                    self.end_headers()
                    return
                self.send(route)

            def do_POST(self):
                server.hits[self.path] += 1
                handler = server.post_routes.get(self.path)
                self.send(
                    handler(self)
                    if handler
                    else Route(b"not found", 404, {"Content-Type": "text/plain"})
                )

            def send(self, route: Route) -> None:
                self.send_response(route.status)
                for name, value in route.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(route.body)))
                self.end_headers()
                self.wfile.write(route.body)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, path: str = "/", host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def page(self, path: str, html: str, **headers) -> None:
        merged = {"Content-Type": "text/html; charset=utf-8", **headers}
        self.routes[path] = Route(html.encode("utf-8"), 200, merged)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


class StaticSite:
    """A directory served over loopback as `python -m http.server` serves it (Last-Modified and
    304 for If-Modified-Since), with a count of the statuses it answered."""

    def __init__(self, directory: str):
        from functools import partial
        from http.server import SimpleHTTPRequestHandler

        self.statuses: Counter[int] = Counter()
        site = self

        class Handler(SimpleHTTPRequestHandler):
            def send_response(self, code, message=None):
                site.statuses[code] += 1
                super().send_response(code, message)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=directory))
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
