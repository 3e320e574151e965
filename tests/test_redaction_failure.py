"""When redaction itself fails (a bug, a package that failed to load), nothing made from the text is stored or sent
and the user's words are not replaced by a placeholder: the request fails with one clear JSON-RPC error, the host
keeps the turn spooled and sends it again. A failure that passes (two threads importing detect-secrets at once) is
retried in place. Logs and error messages, the last lines of defence, still never raise. Real SQLite files, the
protocol table's own adapter (the Python API)."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from jsonrpcserver.sentinels import NODATA

from stratagate import Memory
from stratagate.errors import INTERNAL_ERROR, RpcError
from stratagate.safety import secrets
from stratagate.safety.logfmt import SafeFormatter
from stratagate.safety.secrets import RedactionFailed, redact_shown, redact_text, secrets_in

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
USER = f"deploy the zebra-77 build; my token is {TOKEN}"


@pytest.fixture
def failing(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[int], None]]:
    """``failing(n)``: the next ``n`` redactions of a text holding "zebra-77" raise, quoting the text."""
    real = secrets._find  # (what redaction and secrets_in both run)
    left = [0]

    def flaky(text: str) -> list[secrets.Span]:
        if "zebra-77" in text and left[0] > 0:
            left[0] -= 1
            raise RuntimeError(f"boom on {text}")
        return real(text)

    monkeypatch.setattr(secrets, "_find", flaky)
    secrets._CLEAN.clear()
    yield lambda n: left.__setitem__(0, n)
    secrets._CLEAN.clear()


def test_a_failure_that_passes_is_retried_in_place(failing: Callable[[int], None]):
    failing(1)
    out = redact_text(USER)
    assert TOKEN not in out and "zebra-77" in out and secrets.PLACEHOLDER_RE.search(out)
    failing(1)
    assert [kind for _, kind in secrets_in(USER)] and TOKEN in [found for found, _ in secrets_in(USER)]


def test_a_failure_that_stays_raises_for_what_is_stored_and_shows_a_placeholder_in_logs(
    failing: Callable[[int], None],
):
    failing(10**6)
    with pytest.raises(RedactionFailed) as raised:
        redact_text(USER)
    assert "zebra-77" not in str(raised.value) and TOKEN not in str(raised.value) and raised.value.__cause__ is None
    with pytest.raises(RedactionFailed):
        secrets_in(USER)  # (an empty answer would let an import store its secrets in clear)
    shown = redact_shown(USER)
    assert secrets.PLACEHOLDER_RE.fullmatch(shown) and "unscannable" in shown
    record = logging.LogRecord("t", logging.WARNING, __file__, 1, "said %s", (USER,), None)
    line = SafeFormatter("%(message)s").format(record)
    assert TOKEN not in line and "zebra-77" not in line
    error = RpcError(INTERNAL_ERROR, f"failed on {USER}", {"text": USER})
    assert TOKEN not in repr(error) and "zebra-77" not in repr(error) and error.data is NODATA


def _stored(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return [r[0] for r in conn.execute("SELECT content FROM messages WHERE role = 'user' ORDER BY id")]


async def test_a_capture_whose_redaction_fails_stores_nothing_and_its_retry_stores_the_turn_whole(
    tmp_path: Path, failing: Callable[[int], None]
):
    db = tmp_path / "memory.db"
    async with Memory.open(db, namespace="proj") as memory:
        failing(10**6)
        with pytest.raises(RpcError) as raised:
            await memory.capture_turn(user=USER, assistant="done", receipt="turn-1")
        assert raised.value.code == INTERNAL_ERROR
        assert "secret redaction failed" in raised.value.message and "sent again" in raised.value.message
        assert "zebra-77" not in raised.value.message and TOKEN not in raised.value.message
        assert _stored(db) == []  # nothing half-stored, and no placeholder in place of the words
        failing(0)  # the host sends the spooled turn again
        captured = await memory.capture_turn(user=USER, assistant="done", receipt="turn-1")
        assert captured.turn_id and not captured.duplicate
    stored = _stored(db)
    assert len(stored) == 1 and stored[0] == redact_text(USER) and "zebra-77" in stored[0] and TOKEN not in stored[0]
