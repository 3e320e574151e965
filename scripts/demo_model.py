"""Offline demo model for `npm start`: an OpenAI-compatible server on 127.0.0.1 that DSH can talk to.

It answers DSH's agent steps with a fixed note, session titles with a short title, and StrataGate's
block-summary requests with real summaries of the transcript, so memory fills up without any network.
Prints `listening <base_url>` once it serves.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.dsh_model import DshModel
from support.model_server import ScriptedModelServer

ANSWER = (
    "(offline demo model) I received your message. StrataGate-Py stored this turn; open Settings → StrataGate "
    "Memory to see it. Set DEEPSEEK_API_KEY and run `npm start` again to talk to a real model."
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = ScriptedModelServer(port=args.port, model_name="stratagate-demo")
    server.default = DshModel(answer=ANSWER, title="StrataGate demo")
    server.start()
    print(f"listening {server.base_url}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
