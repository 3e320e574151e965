"""A compact, verified vocabulary file: the DeepSeek V4 encoding without parsing tokenizer.json in the sidecar.

Parsing the 6.4 MB tokenizer.json and converting its vocabulary costs ~1 s and leaves ~140 MB of freed-but-kept
Python heap in the process that does it. So a child process (``python -m stratagate.tokens.cache``) converts it
once into a binary ranks file keyed by the sha256 of the tokenizer.json it came from; the sidecar only reads that
file (~1.4 MB) and hands the ranks to tiktoken.

File layout (little-endian): ``MAGIC``, the source sha256 (32 bytes), u32 token count, u32 length-group count,
u32 special-tokens JSON length; then per group its token length (u16) and its token count (u32); the token ids
(u32) and the token bytes back to back, both ordered by (length, id); the special tokens as JSON
(``{"<text>": id}``); last the sha256 of everything before it. Any mismatch (truncated, bit-flipped, built
from another tokenizer.json, older format) makes the file "not there": it is rebuilt, never used, so a count is
never wrong. Files are 0600 in a 0700 folder, replaced atomically.
"""

from __future__ import annotations

import argparse
import array
import contextlib
import hashlib
import json
import logging
import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Literal, NamedTuple

from stratagate.cachefiles import cache_dir, write_file
from stratagate.tokens import deepseek

log = logging.getLogger("stratagate.tokens")

MAGIC = b"SGRANKS1"
"""Format marker; bump the digit whenever the conversion in deepseek.vocabulary() changes."""
_HEAD = struct.Struct("<8s32sIII")
_DIGEST = 32
BUILD_TIMEOUT_S = 120.0


__all__ = ["CacheError", "Vocabulary", "cache_dir", "cache_path", "load_vocabulary", "write_file"]


class Vocabulary(NamedTuple):
    ranks: dict[bytes, int]
    special: dict[str, int]
    source: Literal["cache", "built", "converted"]
    """read from the cache file / the file built now by a child process / tokenizer.json converted in-process"""


class CacheError(ValueError):
    """A ranks file that must not be used (it is rebuilt)."""


def source_digest(raw: bytes | None = None) -> bytes:
    """sha256 of the installed tokenizer.json (hashlib releases the GIL on a buffer this size)."""
    return hashlib.sha256(deepseek.tokenizer_json_bytes() if raw is None else raw).digest()


def _stat_key(path: Path) -> list[object]:
    st = path.stat()
    return [str(path), st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev]


def known_source_digest(folder: Path) -> bytes:
    """``source_digest()``, remembered in the cache folder for the file's path, size, mtime and inode, as Python
    trusts a .pyc on the source's mtime and size: hashing the 6.4 MB file costs ~10 ms of every first count.
    An installed file that changes gets a new mtime (a reinstall, a new inode too): then it is hashed again."""
    source = deepseek.tokenizer_json_path()
    memo = folder / f"{deepseek.ENCODING_NAME}.source.json"
    key = _stat_key(source)
    try:
        stored = json.loads(memo.read_bytes())
        if stored["stat"] == key:
            return bytes.fromhex(stored["sha256"])
    except (OSError, ValueError, TypeError, KeyError):  # missing or bad: hashed and written again
        pass
    digest = source_digest()
    if _stat_key(source) == key:  # unchanged while it was read
        with contextlib.suppress(OSError):
            write_file(memo, json.dumps({"stat": key, "sha256": digest.hex()}).encode())
    return digest


def cache_path(digest: bytes, folder: Path | None = None) -> Path:
    return (folder or cache_dir()) / f"{deepseek.ENCODING_NAME}-{digest.hex()[:32]}.ranks"


def _little(values: array.array[int]) -> array.array[int]:
    if sys.byteorder != "little":
        values.byteswap()
    return values


def encode_file(digest: bytes, ranks: dict[bytes, int], special: dict[str, int]) -> bytes:
    # Tokens grouped by length: each group is split back into bytes objects by one struct call (C speed).
    tokens = sorted(ranks, key=lambda t: (len(t), ranks[t]))
    sizes = sorted({len(t) for t in tokens})
    counts = [sum(1 for t in tokens if len(t) == size) for size in sizes]
    special_json = json.dumps(special, ensure_ascii=False, sort_keys=True).encode()
    body = b"".join(
        [
            _HEAD.pack(MAGIC, digest, len(tokens), len(sizes), len(special_json)),
            _little(array.array("H", sizes)).tobytes(),
            _little(array.array("I", counts)).tobytes(),
            _little(array.array("I", [ranks[t] for t in tokens])).tobytes(),
            *tokens,
            special_json,
        ]
    )
    return body + hashlib.sha256(body).digest()


def _array(code: str, data: bytes) -> array.array[int]:
    values = array.array(code)
    values.frombytes(data)
    return _little(values)


def decode_file(data: bytes, digest: bytes) -> tuple[dict[bytes, int], dict[str, int]]:
    """The ranks and added tokens stored in ``data``; CacheError unless it is whole and built from ``digest``."""
    if len(data) < _HEAD.size + _DIGEST:
        raise CacheError("ranks file is truncated")
    body, check = data[:-_DIGEST], data[-_DIGEST:]
    if hashlib.sha256(body).digest() != check:
        raise CacheError("ranks file checksum does not match (truncated or corrupted)")
    magic, source, count, groups, special_len = _HEAD.unpack_from(body)
    if magic != MAGIC:
        raise CacheError("ranks file has another format")
    if source != digest:
        raise CacheError("ranks file was built from another tokenizer.json")
    at = _HEAD.size
    sizes = _array("H", body[at : at + 2 * groups])
    at += 2 * groups
    counts = _array("I", body[at : at + 4 * groups])
    at += 4 * groups
    ids = _array("I", body[at : at + 4 * count])
    at += 4 * count
    blob_len = sum(size * n for size, n in zip(sizes, counts, strict=True))
    if len(ids) != count or sum(counts) != count or at + blob_len + special_len != len(body):
        raise CacheError("ranks file sizes are inconsistent")
    tokens: list[bytes] = []
    for size, n in zip(sizes, counts, strict=True):
        # Slices, not one struct format per group: struct keeps its compiled formats (~30 MB for these) cached.
        end = at + size * n
        tokens += [body[i : i + size] for i in range(at, end, size)]
        at = end
    special: dict[str, int] = json.loads(body[at:])
    ranks = dict(zip(tokens, ids, strict=True))
    if len(ranks) != count:
        raise CacheError("ranks file repeats a token")
    return ranks, special


def build_file(folder: Path | None = None) -> Path:
    """Convert the installed tokenizer.json into its ranks file (what the child process runs)."""
    raw = deepseek.tokenizer_json_bytes()
    digest = source_digest(raw)
    ranks, special = deepseek.vocabulary(deepseek.load_tokenizer_json(raw))
    path = cache_path(digest, folder)
    write_file(path, encode_file(digest, ranks, special))
    return path


def _build_in_child(folder: Path) -> None:
    """Run build_file in a fresh interpreter, so this process never holds the parsed JSON."""
    env = dict(os.environ)
    # The child must import this very package (a worktree or an editable install), wherever it comes from.
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, "-m", "stratagate.tokens.cache", "--dir", str(folder)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise CacheError(f"ranks build failed: {done.stderr.decode(errors='replace').strip()[-500:]}")


def load_vocabulary(folder: Path | None = None) -> Vocabulary:
    """The verified ranks and added tokens: from the cache file, (re)built in a child process when missing or bad.

    Falls back to converting tokenizer.json in this process when the cache folder cannot be written.
    """
    folder = folder or cache_dir()
    digest = known_source_digest(folder)
    path = cache_path(digest, folder)
    source: Literal["cache", "built"] = "cache"
    for attempt in ("cached", "rebuilt"):
        try:
            return Vocabulary(*decode_file(path.read_bytes(), digest), source)
        except OSError:  # not there (or unreadable): build it
            pass
        except CacheError as exc:
            log.warning("token cache %s is %s: %s", path, "unusable" if attempt == "cached" else "still bad", exc)
        if attempt == "cached":
            try:
                _build_in_child(folder)
                source = "built"
            except (OSError, subprocess.SubprocessError, CacheError) as exc:
                log.warning("cannot build the token cache in %s (%s): converting tokenizer.json here", folder, exc)
                break
    return Vocabulary(*deepseek.vocabulary(deepseek.load_tokenizer_json()), "converted")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the DeepSeek V4 ranks file (tokens/cache.py).")
    parser.add_argument("--dir", type=Path, default=None, help="cache folder (default: %(default)s = cache_dir())")
    args = parser.parse_args(argv)
    print(build_file(args.dir))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
