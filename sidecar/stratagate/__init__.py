"""StrataGate-Py sidecar: durable capture, sealed blocks, jobs and recall for DeepSeek Harness.

``from stratagate import Memory`` is the embeddable Python API (``stratagate/embedded/memory.py``). It is imported on
first use (the module ``__getattr__`` below): ``import stratagate`` stays as light as ``stratagate serve``'s start
needs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Memory", "__version__"]

if TYPE_CHECKING:
    from stratagate.embedded.memory import Memory


def __getattr__(name: str) -> Any:
    if name == "Memory":
        from stratagate.embedded.memory import Memory

        return Memory
    raise AttributeError(f"module 'stratagate' has no attribute {name!r}")
