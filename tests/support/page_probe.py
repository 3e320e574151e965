"""Run ``stratagate`` with two test-only Memory page routes bound (``GET /probe/read``, ``POST /probe/echo``), so the
standalone server's HTTP handling is tested independently of which real routes exist. Used as a script:
``python tests/support/page_probe.py ui --db PATH --port 0``."""

from __future__ import annotations

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


method("page.probe.read", params=ProbeParams, result=ProbeResult, http="GET /probe/read")(_echo)
method("page.probe.echo", params=ProbeParams, result=ProbeResult, http="POST /probe/echo")(_echo)

if __name__ == "__main__":
    from stratagate.cli import main

    sys.exit(main(sys.argv[1:]))
