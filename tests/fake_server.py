"""A small fake model server on 127.0.0.1 that answers each request with whatever bytes a test
chooses (a valid chat completion, a torn one, a redirect, no HTTP at all). It stops when its `with`
block ends, and by itself after `lifetime_s` whatever happens to the test."""

from __future__ import annotations

import json
import socketserver
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def http(status: int, body: bytes, headers: dict[str, str] | None = None, length: int | None = None) -> bytes:
    """A whole HTTP/1.1 response; `length` overrides Content-Length (a lie, when it is not len(body))."""
    head = {"Content-Length": str(len(body) if length is None else length), "Connection": "close", **(headers or {})}
    lines = [f"HTTP/1.1 {status} X"] + [f"{k}: {v}" for k, v in head.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def completion(*contents: object, usage: object = None, logprobs: object = None, **choice: object) -> bytes:
    """A chat completion answering 200 with one choice per content."""
    choices = [
        {"index": i, "message": {"role": "assistant", "content": c}, "finish_reason": "stop", **choice}
        for i, c in enumerate(contents)
    ]
    if logprobs is not None:
        for c in choices:
            c["logprobs"] = logprobs
    body = {"choices": choices, "usage": {"prompt_tokens": 5, "completion_tokens": 3} if usage is None else usage}
    return http(200, json.dumps(body).encode())


def top_logprobs(pairs: list[tuple[object, object]]) -> dict:
    """An expected-mode answer's logprobs block (json writes NaN and Infinity as the servers that do)."""
    return {
        "content": [{"token": "3", "logprob": -0.1, "top_logprobs": [{"token": t, "logprob": p} for t, p in pairs]}]
    }


class FakeServer:
    """`answer(path, headers, body)` returns the raw bytes to send; every request is kept in `requests`."""

    def __init__(self, answer: Callable[[str, dict[str, str], bytes], bytes], lifetime_s: float = 120.0):
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        outer = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                request_line = self.rfile.readline(65536).decode("latin-1").split()
                headers: dict[str, str] = {}
                while (line := self.rfile.readline(65536).decode("latin-1").strip()) != "":
                    key, _, value = line.partition(":")
                    headers[key.strip().lower()] = value.strip()
                body = self.rfile.read(int(headers.get("content-length", "0")))
                path = request_line[1] if len(request_line) > 1 else ""
                outer.requests.append((path, headers, body))
                self.wfile.write(answer(path, headers, body))

        socketserver.ThreadingTCPServer.allow_reuse_address = True
        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.root = f"http://127.0.0.1:{self._server.server_address[1]}"
        self.url = self.root + "/v1"
        # a short poll: shutdown() waits for it, once per server per test
        threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True).start()
        self._timer = threading.Timer(lifetime_s, self.close)
        self._timer.daemon = True
        self._timer.start()

    def close(self) -> None:
        self._timer.cancel()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Server:
    """A real HTTP server on 127.0.0.1 answering every POST with one canned reply."""

    def __init__(self, status: int, body: bytes):
        reply = (status, body)
        self.hits = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                outer.hits += 1
                self.rfile.read(int(self.headers["Content-Length"]))
                self.send_response(reply[0])
                self.send_header("Content-Length", str(len(reply[1])))
                self.end_headers()
                self.wfile.write(reply[1])

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True).start()  # shutdown() waits a poll

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
