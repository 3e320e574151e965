"""The sidecar's cache folder and its one way of writing a file there (the token ranks, the secret detector's data):
derived files, each keyed by what it was derived from, so a stale one is never read."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$STRATAGATE_TOKENS_CACHE``, else ``$XDG_CACHE_HOME/stratagate/tokens``, else ``~/.cache/stratagate/tokens``."""
    explicit = os.environ.get("STRATAGATE_TOKENS_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "stratagate" / "tokens"


def write_file(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: a 0600 temporary file in a 0700 folder, fsynced, then renamed."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path.parent, 0o700)  # mkdir's mode is masked by the umask, and the folder may predate us
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb", closefd=False) as out:
            out.write(data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
