"""The one way the sidecar imports detect-secrets: every module of it, under one process-wide lock.

detect-secrets' package is circular (its filters import its core, which imports its filters). Two threads importing
parts of it at once — the start-up warm-up in a thread and the first text on the event loop that needs a heuristic
filter — can fail both with "cannot import name … from partially initialized module" or Python's
``_DeadlockError``, and a redaction that fails fails its request. Under one lock the package is imported by one
thread at a time, as a single-threaded program would; after that a name is a dict lookup.
"""

from __future__ import annotations

import importlib
import threading
from types import ModuleType

_lock = threading.RLock()  # reentrant: importing one module may ask for another through this loader
_modules: dict[str, ModuleType] = {}


def module(name: str) -> ModuleType:
    """The detect-secrets module ``name`` (``detect_secrets.filters.heuristic``), imported under the lock once."""
    found = _modules.get(name)
    if found is not None:
        return found
    if not name.startswith("detect_secrets"):
        raise ValueError(f"not a detect-secrets module: {name}")
    with _lock:
        found = _modules.get(name)
        if found is None:
            found = _modules[name] = importlib.import_module(name)
    return found
