"""Offline demo model for `npm start`: an OpenAI-compatible /chat/completions server on 127.0.0.1 for DSH.

It answers DSH's agent steps by acknowledging what the user said and what StrataGate recalled, and titles sessions
from the first user message (scripts/demo_replies.py). StrataGate itself makes no model call in the demo
(start.sh runs it with STRATAGATE_MODEL_ROUTE=none). Streams (SSE) or not, as the client asks. Standard library only.
Prints `listening <base_url>` once it serves; SIGTERM or SIGINT stops it.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from demo_replies import reply  # a sibling module: scripts/ is no package

MODEL = "stratagate-demo"
MAX_BODY_BYTES = 64 * 1024 * 1024


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)  # a rough count: the demo has no tokenizer, DSH only shows it


class _Handler(BaseHTTPRequestHandler):
    server_version = "stratagate-demo/1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: start.sh's terminal belongs to DSH

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "stratagate"}]})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length <= 0 or length > MAX_BODY_BYTES:
            self._json(400, {"error": {"message": "a JSON body is required", "type": "invalid_request_error"}})
            return
        try:
            body = json.loads(self.rfile.read(length))
        except ValueError:
            self._json(400, {"error": {"message": "the body is not JSON", "type": "invalid_request_error"}})
            return
        if not isinstance(body, dict):
            self._json(400, {"error": {"message": "the body is not a JSON object", "type": "invalid_request_error"}})
            return
        text = reply(body)
        usage = {
            "prompt_tokens": _tokens(json.dumps(body.get("messages") or [])),
            "completion_tokens": _tokens(text),
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        ident, created, model = "chatcmpl-" + uuid.uuid4().hex[:12], int(time.time()), str(body.get("model") or MODEL)
        if not body.get("stream"):
            message = {"role": "assistant", "content": text}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            obj = "chat.completion"
            self._json(
                200,
                {"id": ident, "object": obj, "created": created, "model": model, "choices": [choice], "usage": usage},
            )
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")  # the body ends when the connection does (HTTP/1.0)
        self.end_headers()
        head = {"id": ident, "object": "chat.completion.chunk", "created": created, "model": model}
        for choices, extra in (
            ([{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}], {}),
            ([{"index": 0, "delta": {}, "finish_reason": "stop"}], {}),
            ([], {"usage": usage}),
        ):
            self.wfile.write(b"data: " + json.dumps(head | {"choices": choices} | extra).encode() + b"\n\n")
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def _json(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def serve(port: int = 0) -> ThreadingHTTPServer:
    """A running demo model server on 127.0.0.1 (``server.shutdown()`` stops it)."""
    server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="demo-model", daemon=True).start()
    return server


def base_url(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/v1"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = serve(args.port)
    print(f"listening {base_url(server)}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    server.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
