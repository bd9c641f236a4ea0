"""A fault-injecting HTTP proxy for an OpenAI-compatible server, on loopback.

Each request is forwarded to the upstream server, except that with probability ``rate`` it
meets one fault, drawn evenly from: an HTTP 500, a 429 (``Retry-After: 0``), a stall of
``stall`` seconds before it is forwarded, a malformed JSON body (200), an empty reply (200,
content ""), or a connection dropped without a reply. The faults served are counted::

    with FaultProxy("http://127.0.0.1:8080", rate=0.2, seed=1) as proxy:
        url = proxy.url        # "http://127.0.0.1:PORT/v1"
        ...
        proxy.served           # Counter({"500": 3, "stall": 2, ...})

Standard library and httpx only; one thread per request.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

FAULTS = ("500", "429", "stall", "malformed", "empty", "drop")


class FaultProxy:
    def __init__(self, upstream: str, rate: float, seed: int = 0, stall: float = 30.0) -> None:
        self.upstream = upstream.rstrip("/")
        self.rate, self.stall = rate, stall
        self.served: Counter[str] = Counter()
        self.requests = 0
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _draw(self, path: str) -> str | None:
        with self._lock:
            self.requests += 1
            if not path.endswith("/chat/completions") or self._rng.random() >= self.rate:
                return None
            fault = self._rng.choice(FAULTS)
            self.served[fault] += 1
            return fault

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._forward(None)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self._forward(self.rfile.read(length))

            def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)
                self.close_connection = True

            def _forward(self, body: bytes | None) -> None:
                fault = proxy._draw(self.path)
                streaming = bool(body) and json.loads(body or b"{}").get("stream", False)
                if fault == "500":
                    return self._send(500, b'{"error":{"message":"injected 500"}}')
                if fault == "429":
                    return self._send(
                        429, b'{"error":{"message":"injected 429"}}', {"Retry-After": "0"}
                    )
                if fault == "drop":
                    self.close_connection = True
                    self.connection.close()
                    return None
                if fault == "stall":
                    time.sleep(proxy.stall)
                if fault in ("malformed", "empty") and not streaming:
                    content = "" if fault == "empty" else '{"urgency": 3, "action": {"mo'
                    reply = {
                        "id": "fault",
                        "object": "chat.completion",
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": content},
                                "finish_reason": "stop",
                            }
                        ],
                    }
                    return self._send(200, json.dumps(reply).encode())
                self._relay(body, streaming)
                return None

            def _relay(self, body: bytes | None, streaming: bool) -> None:
                url = proxy.upstream + self.path
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() in ("content-type", "authorization")
                }
                with httpx.Client(timeout=None) as client:
                    method = "POST" if body is not None else "GET"
                    with client.stream(method, url, content=body, headers=headers) as upstream:
                        self.send_response(upstream.status_code)
                        kind = upstream.headers.get("content-type", "application/json")
                        self.send_header("Content-Type", kind)
                        self.send_header("Connection", "close")
                        if streaming:
                            self.send_header("Transfer-Encoding", "chunked")
                            self.end_headers()
                            try:
                                for chunk in upstream.iter_raw():
                                    size = f"{len(chunk):x}\r\n".encode()
                                    self.wfile.write(size + chunk + b"\r\n")
                                    self.wfile.flush()
                            except httpx.RemoteProtocolError:  # the server broke the stream
                                self.close_connection = True  # so does the proxy, as it did
                                return
                            self.wfile.write(b"0\r\n\r\n")
                        else:
                            data = upstream.read()
                            self.send_header("Content-Length", str(len(data)))
                            self.end_headers()
                            self.wfile.write(data)
                self.close_connection = True

        return Handler
