"""The agent tools the sidecar serves, in tools.list order (the protocol table's registration order, fixed by
``stratagate/tools/__init__.py``); tools flagged ``evidence=True`` are wrapped by evidence batching.

`stratagate tools` prints these specs; `plugin/tools.json` is that output, so the DSH shim can register the
tools before the sidecar has started (a test keeps the file and this list identical).
"""

from __future__ import annotations

from typing import Any

import stratagate.tools  # noqa: F401  (registers every tool)
from stratagate.evidence.batches import batched
from stratagate.protocol import TOOL_TABLE
from stratagate.protocol.toolbox import Toolbox


def build_registry() -> Toolbox:
    return Toolbox(TOOL_TABLE, evidence_wrap=batched)


def tool_specs() -> list[dict[str, Any]]:
    return build_registry().specs()
