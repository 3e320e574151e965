"""Run ``stratagate`` with test-only Memory page routes bound (``GET /probe/read``, ``POST /probe/echo``, and
``GET /probe/hang``, which never answers: a stand-in for the long poll), so the standalone server's HTTP handling is
tested independently of which real routes exist. Used as a script:
``python tests/support/page_probe.py ui --db PATH``."""

from __future__ import annotations

import asyncio
import sys

from pydantic import BaseModel, ConfigDict, Field

from stratagate.protocol import method


class ProbeParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    n: int = Field(default=0, ge=0, le=10)
    text: str = ""
    flag: bool = False


class ProbeResult(BaseModel):
    n: int
    text: str
    flag: bool
    db_path: str


async def _echo(app: object, p: ProbeParams) -> ProbeResult:
    return ProbeResult(n=p.n, text=p.text, flag=p.flag, db_path=str(app.settings.db))  # type: ignore[attr-defined]


class Empty(BaseModel):
    model_config = ConfigDict(extra="forbid")


async def _hang(app: object, p: Empty) -> ProbeResult:
    print("probe: hang started", file=sys.stderr, flush=True)  # the test waits for this line, not for a time
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


method("page.probe.hang", params=Empty, result=ProbeResult, http="GET /probe/hang")(_hang)
method("page.probe.read", params=ProbeParams, result=ProbeResult, http="GET /probe/read")(_echo)
method("page.probe.echo", params=ProbeParams, result=ProbeResult, http="POST /probe/echo")(_echo)

if __name__ == "__main__":
    from stratagate.cli import main

    sys.exit(main(sys.argv[1:]))
