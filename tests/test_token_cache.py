"""The compact vocabulary file (tokens/cache.py): built on a machine without one, verified on every load,
rebuilt when truncated or corrupted (never a wrong count), 0600 in a 0700 folder, counts equal to tokenizer.json's."""

from __future__ import annotations

import sqlite3
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratagate.tokens import cache, deepseek
from support.sidecar import SidecarClient

TEXTS = [
    "hello world",
    "    return x\n  \n y",
    "用 pnpm 安装依赖，别用 npm。 <think>ok</think> 12345",
    "<｜end▁of▁sentence｜> emoji 🙂 and tabs\t\tend",
]


@pytest.fixture(scope="module")
def reference() -> tuple[dict[bytes, int], dict[str, int]]:
    return deepseek.vocabulary(deepseek.load_tokenizer_json())


@pytest.fixture(scope="module")
def digest() -> bytes:
    return cache.source_digest()


@pytest.fixture(scope="module")
def good_file(reference: tuple[dict[bytes, int], dict[str, int]], digest: bytes) -> bytes:
    return cache.encode_file(digest, *reference)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_round_trip_equals_tokenizer_json(good_file: bytes, digest: bytes, reference: tuple) -> None:
    assert cache.decode_file(good_file, digest) == reference


def test_a_fresh_machine_builds_the_file_in_a_child(tmp_path: Path, digest: bytes, reference: tuple) -> None:
    folder = tmp_path / "cache" / "tokens"
    vocabulary = cache.load_vocabulary(folder)
    assert vocabulary.source == "built"
    assert (vocabulary.ranks, vocabulary.special) == reference
    path = cache.cache_path(digest, folder)
    assert mode(path) == 0o600 and mode(folder) == 0o700
    memo = f"{deepseek.ENCODING_NAME}.source.json"  # the source's digest, remembered for its stat
    assert sorted(p.name for p in folder.iterdir()) == sorted([path.name, memo])  # no temporary file left behind
    again = cache.load_vocabulary(folder)
    assert again.source == "cache" and (again.ranks, again.special) == reference


def test_an_existing_open_folder_is_closed_to_0700(tmp_path: Path, digest: bytes, good_file: bytes) -> None:
    folder = tmp_path / "tokens"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    cache.write_file(cache.cache_path(digest, folder), good_file)
    assert mode(folder) == 0o700 and mode(cache.cache_path(digest, folder)) == 0o600


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "other source"])
def test_a_damaged_file_is_rebuilt(tmp_path: Path, digest: bytes, good_file: bytes, reference: tuple, damage: str):
    path = cache.cache_path(digest, tmp_path)
    data = {
        "truncate": good_file[: len(good_file) // 2],
        "flip": good_file[:5000] + bytes([good_file[5000] ^ 1]) + good_file[5001:],
        "empty": b"",
        "other source": cache.encode_file(b"\0" * 32, *reference),
    }[damage]
    cache.write_file(path, data)
    with pytest.raises(cache.CacheError):
        cache.decode_file(data, digest)
    vocabulary = cache.load_vocabulary(tmp_path)
    assert vocabulary.source == "built" and (vocabulary.ranks, vocabulary.special) == reference
    assert cache.decode_file(path.read_bytes(), digest) == reference


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_truncation_or_bit_flip_is_detected(data: st.DataObject, good_file: bytes, digest: bytes) -> None:
    if data.draw(st.booleans(), label="truncate"):
        damaged = good_file[: data.draw(st.integers(0, len(good_file) - 1), label="keep")]
    else:
        at = data.draw(st.integers(0, len(good_file) - 1), label="at")
        bit = data.draw(st.integers(0, 7), label="bit")
        damaged = good_file[:at] + bytes([good_file[at] ^ (1 << bit)]) + good_file[at + 1 :]
    with pytest.raises(cache.CacheError):
        cache.decode_file(damaged, digest)


def test_an_unwritable_folder_falls_back_to_converting_here(tmp_path: Path, reference: tuple) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    vocabulary = cache.load_vocabulary(blocker / "tokens")
    assert vocabulary.source == "converted" and (vocabulary.ranks, vocabulary.special) == reference


def block_token_counts(db: Path) -> list[tuple[int, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT l5_tokens, l4_tokens, l3_tokens FROM blocks ORDER BY id").fetchall()


async def test_sidecars_build_use_and_rebuild_the_cache(tmp_path: Path, digest: bytes) -> None:
    folder = tmp_path / "tokens-cache"
    path = cache.cache_path(digest, folder)
    counts = []
    for run, prepare in enumerate(["none", "keep", "corrupt"]):
        if prepare == "corrupt":
            data = path.read_bytes()
            path.write_bytes(data[:-100] + bytes(b ^ 0xFF for b in data[-100:]))
        env = {"STRATAGATE_DENSE": "off", "STRATAGATE_MODEL_ROUTE": "none", "STRATAGATE_TOKENS_CACHE": str(folder)}
        db = tmp_path / f"memory-{run}.db"
        client = await SidecarClient.start(db, env=env)
        try:
            for i in range(6):  # one sealed block: its layers are counted with the encoding under test
                await client.call("turn.capture", {
                    "namespace": "proj", "session": "s1", "receipt": f"dsh:s1:turn:{i}", "user": TEXTS[i % 4],
                    "assistant": TEXTS[(i + 1) % 4], "started_at": f"2026-05-01T10:0{i}:00Z",
                    "ended_at": f"2026-05-01T10:0{i}:30Z", "end_reason": "stop",
                })  # fmt: skip
            await client.settled()
            info = await client.call("system.info")
            assert info["tokens"]["source"] == {"none": "built", "keep": "cache", "corrupt": "built"}[prepare]
        finally:
            await client.close()
        assert mode(path) == 0o600 and mode(folder) == 0o700
        counts.append(block_token_counts(db))
    assert counts[0] and counts[0] == counts[1] == counts[2]


def test_the_source_digest_is_remembered_for_the_files_stat(tmp_path: Path, digest: bytes,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    assert cache.known_source_digest(tmp_path) == digest  # hashed, then remembered
    memo = tmp_path / f"{deepseek.ENCODING_NAME}.source.json"
    assert mode(memo) == 0o600

    def no_hashing(raw: bytes | None = None) -> bytes:
        raise AssertionError("hashed although the file is unchanged")

    with monkeypatch.context() as m:
        m.setattr(cache, "source_digest", no_hashing)
        assert cache.known_source_digest(tmp_path) == digest
    # Another stat (a reinstalled file) or a damaged memo: hashed again, never trusted.
    stored = memo.read_text()
    memo.write_text(stored.replace(f'"{digest.hex()}"', '"' + "00" * 32 + '"').replace('"stat": ["', '"stat": ["x'))
    assert cache.known_source_digest(tmp_path) == digest
    memo.write_text("{broken")
    assert cache.known_source_digest(tmp_path) == digest
    assert memo.read_text() == stored
