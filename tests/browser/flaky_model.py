"""A scripted model for the Memory page tests: the first N block summaries answer HTTP 500, later ones are valid;
event extraction always answers "nothing new".

    python tests/browser/flaky_model.py --fail-summaries 1

prints ``listening <base_url>``, then ``failed a summary`` at each scripted failure, and serves until SIGTERM.
seed.py uses it in process (every summary fails: the seeded failed job); the browser test runs it for the viewer,
where a start re-queues that job (the upgrade) and its one failure leaves the job failed again, so the page's Retry
is the attempt that succeeds.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conftest import summary_arguments
from support.model_server import Behaviour, ScriptedModelServer, auto_tool_call, count_tokens, http_error, tool_call

EXTRACT = "stratagate_extract_events"


class FlakyModel:
    def __init__(self, fail_summaries: int | None, *, announce: bool = False) -> None:
        self.failures_left = fail_summaries  # None: every summary fails
        self.announce = announce  # print a line at each failure (the browser test waits for it, not for time)
        self.summary = auto_tool_call(summary_arguments)
        self._lock = threading.Lock()
        # The server counts every prompt's tokens; loading the tokenizer takes seconds, so it is loaded now rather
        # than inside the first request (which would then outlast the sidecar's model timeout instead of failing).
        count_tokens("warm up")

    def __call__(self, body: dict[str, Any]) -> Behaviour:
        if (body.get("tool_choice") or {}).get("function", {}).get("name") == EXTRACT:
            return tool_call(EXTRACT, {"events": []})
        with self._lock:
            if self.failures_left is None or self.failures_left > 0:
                if self.failures_left is not None:
                    self.failures_left -= 1
                if self.announce:
                    print("failed a summary", flush=True)
                return http_error(500, "scripted model is down")
        return self.summary(body)


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fail-summaries", type=int, default=1)
    args = parser.parse_args()
    server = ScriptedModelServer()
    server.default = FlakyModel(args.fail_summaries, announce=True)
    server.start()
    print(f"listening {server.base_url}", flush=True)
    signal.signal(signal.SIGTERM, _stop)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
