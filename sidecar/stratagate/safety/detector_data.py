"""What secrets.py takes from detect-secrets as data — the denylist patterns of the plugins it uses and the keyword
list — read from a cache file instead of importing the package for them.

Importing detect-secrets costs ~0.1 s of CPU and ~8 MB (its package imports its scanner, whose plugins import
``requests``), and its patterns are needed by any text with a long token-like run (a file path in a log line). So
the first process that needs them imports the package once and writes them to ``detect-secrets-<key>.json`` in the
sidecar's cache folder; later processes compile them from that file. The key covers the path, size and mtime of
every ``.py`` file of the installed package (and this format and the kinds taken), so a file written from other
sources is never read; an unreadable, corrupted or foreign file is rewritten. The package's code (the entropy
function) is still imported where it is used.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
from pathlib import Path
from typing import NamedTuple

from stratagate.cachefiles import cache_dir, write_file
from stratagate.safety import ds_import

FORMAT = "stratagate-detector-data-1"
"""Bump whenever what ``from_package`` extracts changes."""


class Pattern(NamedTuple):
    kind: str
    pattern: str
    flags: int
    group: int


class DetectorData(NamedTuple):
    patterns: list[Pattern]
    """The denylist patterns of the plugins taken, in detect-secrets' order, under our kind."""
    keywords: list[str]
    """KeywordDetector's DENYLIST (the key names that make a value secret), as regex fragments."""


def data_key(kinds: dict[str, str]) -> str:
    """sha256 of this format, ``kinds`` and the installed detect-secrets sources: each ``.py`` file's path, size and
    mtime, as Python trusts a .pyc (found without importing them; reading and hashing them would cost ~6 ms)."""
    spec = importlib.util.find_spec("detect_secrets")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("the detect-secrets package is not installed")
    root = Path(next(iter(spec.submodule_search_locations)))
    files = []
    for path in sorted(root.rglob("*.py")):
        st = path.stat()
        files.append([path.relative_to(root).as_posix(), st.st_size, st.st_mtime_ns])
    return hashlib.sha256(json.dumps([FORMAT, kinds, str(root), files], sort_keys=True).encode()).hexdigest()


def cache_path(key: str, folder: Path | None = None) -> Path:
    return (folder or cache_dir()) / f"detect-secrets-{key[:32]}.json"


def from_package(kinds: dict[str, str]) -> DetectorData:
    """Import detect-secrets and take its data: the regex plugins named in ``kinds`` (secret type → our kind)."""
    regex_based = ds_import.module("detect_secrets.plugins.base").RegexBasedDetector
    denylist = ds_import.module("detect_secrets.plugins.keyword").DENYLIST
    plugins = ds_import.module("detect_secrets.core.plugins.util").get_mapping_from_secret_type_to_class()

    patterns: list[Pattern] = []
    for secret_type, plugin_class in plugins.items():
        kind = kinds.get(secret_type)
        if kind is None or not issubclass(plugin_class, regex_based):
            continue
        for pattern in plugin_class().denylist:
            # detect-secrets reports group 1 when there is one (the value after a keyword), else the match.
            patterns.append(Pattern(kind, pattern.pattern, pattern.flags, 1 if pattern.groups else 0))
    return DetectorData(patterns, [str(k) for k in denylist])


def _encode(key: str, data: DetectorData) -> bytes:
    return json.dumps({"format": FORMAT, "key": key, "patterns": data.patterns, "keywords": data.keywords}).encode()


def _decode(raw: bytes, key: str) -> DetectorData:
    stored = json.loads(raw)
    if stored.get("format") != FORMAT or stored.get("key") != key:
        raise ValueError("written from other detect-secrets sources")
    patterns = [Pattern(str(k), str(p), int(f), int(g)) for k, p, f, g in stored["patterns"]]
    keywords = [str(k) for k in stored["keywords"]]
    return DetectorData(patterns, keywords)


def load(kinds: dict[str, str], folder: Path | None = None) -> DetectorData:
    """The data from the cache file, or from the package (then written to the cache file for the next process).

    Silent: it runs inside the log formatter's redaction, where a log line of its own would re-enter it."""
    key = data_key(kinds)
    path = cache_path(key, folder)
    try:
        return _decode(path.read_bytes(), key)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):  # missing, corrupted or foreign: rewritten
        pass
    data = from_package(kinds)
    with contextlib.suppress(OSError):  # an unwritable cache folder: the next process imports the package again
        write_file(path, _encode(key, data))
    return data
