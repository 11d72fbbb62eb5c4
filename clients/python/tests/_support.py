"""Shared by the tests: the package on the path, a PNG made with zlib, and a local HTTP server
(real sockets, in a thread) whose answers a test scripts."""

import json
import os
import struct
import sys
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.dirname(HERE)
if PACKAGE_ROOT not in sys.path:
    sys.path.insert(0, PACKAGE_ROOT)


def make_png(width: int, height: int) -> bytes:
    """An 8-bit RGB PNG with a gradient, written with zlib and struct only."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = []
    for y in range(height):
        row = bytearray([0])  # filter type: none
        for x in range(width):
            row += bytes(((x * 255) // max(1, width - 1), (y * 255) // max(1, height - 1), (x * y) % 256))
        rows.append(bytes(row))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"".join(rows))) + chunk(b"IEND", b"")


def png_size(data: bytes) -> Tuple[int, int]:
    """Width and height from a PNG's IHDR."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise ValueError("not a PNG")
    return struct.unpack(">II", data[16:24])


class Recorded:
    def __init__(self, method: str, path: str, headers: Dict[str, str], body: bytes) -> None:
        self.method = method
        self.path = path
        self.headers = headers  # lower-cased names
        self.body = body

    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8"))


#: What a route answers: (status, headers, body); a dict or list body is sent as JSON.
Answer = Tuple[int, Dict[str, str], Any]


class FakeServer:
    """A ThreadingHTTPServer on 127.0.0.1 that records every request and answers with
    ``handler(request, server)``. Use as a context manager."""

    def __init__(self, handler: Callable[[Recorded, "FakeServer"], Answer]) -> None:
        self.handler = handler
        self.requests: List[Recorded] = []
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                rec = Recorded(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with fake.lock:
                    fake.requests.append(rec)
                status, headers, payload = fake.handler(rec, fake)
                if isinstance(payload, (dict, list)):
                    data = json.dumps(payload).encode("utf-8")
                    headers = dict({"Content-Type": "application/json"}, **headers)
                elif isinstance(payload, str):
                    data = payload.encode("utf-8")
                else:
                    data = payload or b""
                try:
                    self.send_response(status)
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def __enter__(self) -> "FakeServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()

    def count(self, method: Optional[str] = None, path: Optional[str] = None) -> int:
        with self.lock:
            return sum(1 for r in self.requests if (method is None or r.method == method) and (path is None or r.path == path))


def envelope(code: str, message: str = "", errors: Optional[list] = None, details: Optional[dict] = None, request_id: str = "req-1") -> dict:
    return {"error": {"code": code, "message": message or code, "request_id": request_id, "errors": errors, "details": details}}
