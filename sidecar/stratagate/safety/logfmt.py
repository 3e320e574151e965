"""Logging that never carries memory text, SQL parameters or secrets, at any level.

* Exceptions are logged with their traceback frames and type, never their message: a sqlite, pydantic or model
  error message can quote stored text, tool arguments or a model response.
* Every formatted line is passed through ``redact_shown`` and bounded, as the last line of defence.
* Libraries that log SQL parameters or HTTP bodies at DEBUG (aiosqlite, openai, httpx, httpcore) are held at
  WARNING whatever the sidecar's level.
"""

from __future__ import annotations

import logging
import sys
import traceback

from stratagate.safety.secrets import redact_shown

MAX_LINE_CHARS = 2000
QUIET_LIBRARIES = ("aiosqlite", "openai", "httpx", "httpcore", "urllib3", "hpack", "asyncio")
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


class SafeFormatter(logging.Formatter):
    def formatException(self, ei: logging._SysExcInfoType) -> str:
        exc_type, exc, tb = ei
        lines = traceback.format_tb(tb)
        seen = exc
        chain: list[str] = []
        while seen is not None and len(chain) < 5:
            chain.append(type(seen).__qualname__)
            seen = seen.__cause__ or seen.__context__
        name = exc_type.__qualname__ if exc_type is not None else "Exception"
        causes = f" (caused by {' <- '.join(chain[1:])})" if len(chain) > 1 else ""
        return "Traceback (most recent call last):\n" + "".join(lines) + f"{name}: <message withheld>{causes}"

    def format(self, record: logging.LogRecord) -> str:
        line = redact_shown(super().format(record))
        if len(line) > MAX_LINE_CHARS:
            line = line[: MAX_LINE_CHARS - 1] + "…"
        return line


def configure_logging(level: str) -> None:
    level = level.upper() if level.upper() in LEVELS else "INFO"
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(SafeFormatter("%(asctime)s stratagate %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for name in QUIET_LIBRARIES:
        logging.getLogger(name).setLevel(max(logging.WARNING, logging.getLevelName(level)))
