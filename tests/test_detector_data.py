"""detect-secrets' data from a cache file: the same patterns and keywords as the package gives, read without
importing the package (its import is ~0.1 s of CPU), rewritten when missing, corrupted or written from other
sources; and the redaction it feeds stays the same."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from stratagate.safety import detector_data
from stratagate.safety import secrets as S

REPO = Path(__file__).resolve().parents[1]


def test_the_cache_holds_what_the_package_gives(tmp_path: Path) -> None:
    first = detector_data.load(S._DS_KINDS, tmp_path)
    path = detector_data.cache_path(detector_data.data_key(S._DS_KINDS), tmp_path)
    assert path.exists() and path.stat().st_mode & 0o777 == 0o600
    assert first == detector_data.from_package(S._DS_KINDS)
    assert detector_data.load(S._DS_KINDS, tmp_path) == first
    assert {p.kind for p in first.patterns} <= set(S._DS_KINDS.values()) and first.keywords


def test_a_bad_or_foreign_file_is_rewritten(tmp_path: Path) -> None:
    good = detector_data.load(S._DS_KINDS, tmp_path)
    path = detector_data.cache_path(detector_data.data_key(S._DS_KINDS), tmp_path)
    for bad in (b"", b"{not json", b"[]", json.dumps({"format": detector_data.FORMAT, "key": "other"}).encode()):
        path.write_bytes(bad)
        assert detector_data.load(S._DS_KINDS, tmp_path) == good
        assert json.loads(path.read_bytes())["key"] == detector_data.data_key(S._DS_KINDS)


def test_other_kinds_make_another_key() -> None:
    assert detector_data.data_key(S._DS_KINDS) != detector_data.data_key({**S._DS_KINDS, "Extra": "extra"})


PROBE = """
import json, sys
from stratagate.safety.secrets import redact_text
log_line = redact_text("stratagate ready (db=/home/someone/.dsh/stratagate/memory.db, pid=4242)")
loaded = "detect_secrets" in sys.modules
token = redact_text("ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8")
judged = redact_text("the session_id=Zq8xW3vR7tY2uP9k here")
print(json.dumps([log_line, token, judged, loaded, "detect_secrets" in sys.modules]))
"""


def test_a_text_with_a_long_run_does_not_import_the_package(tmp_path: Path) -> None:
    """A log line with a database path holds a long token-like run: the rules run, from the cached data; the package
    is imported only for a value whose entropy must be judged."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATAGATE_")}
    env |= {"PYTHONPATH": str(REPO / "sidecar"), "STRATAGATE_TOKENS_CACHE": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300)
            for _ in range(2)]  # the first writes the cache file, the second reads it
    for out in runs:
        assert out.returncode == 0, out.stderr
    first, second = (json.loads(out.stdout.splitlines()[-1]) for out in runs)
    # The children hash placeholders under the default key; this process may hold a database's (an earlier test in
    # the same worker opened one), so the expected texts are made under the default key too.
    previous = S._key
    S.configure_key(S.DEFAULT_KEY)
    try:
        judged = S.redact_text("the session_id=Zq8xW3vR7tY2uP9k here")
        token = S.redact_text("ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8")
    finally:
        S.configure_key(previous)
    assert first[:3] == second[:3] == [
        "stratagate ready (db=/home/someone/.dsh/stratagate/memory.db, pid=4242)",
        token,
        judged,
    ]
    assert "[secret:" in first[1] and "[secret:" in judged
    assert second[3:] == [False, True]  # the log line needed no import; a value to judge did
