"""Exact, offline DeepSeek V4 token counts via a tiktoken encoding built from the shipped vocabulary.

Semantics match HuggingFace ``tokenizers`` on DeepSeek's tokenizer.json (see ``deepseek.py``):

* No BOS/EOS or other tokens are added: the tokenizer's post-processor adds none, and
  ``ds_token.encode(text, add_special_tokens=True)`` returns the same ids as ``False``.
* Added-token text that appears in the input (``"<｜end▁of▁sentence｜>"``, ``"<think>"`` ...) is
  encoded as that single added token id, exactly as the reference encoder and HF do. We match them
  rather than treating it as plain text because that is what the model is fed for such input.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import tiktoken

__all__ = ["count_tokens", "decode", "encode", "get_encoding", "status"]


@dataclass(frozen=True)
class _State:
    enc: tiktoken.Encoding
    added: _AddedTokens
    special_text: dict[int, bytes]  # id → the added token's UTF-8 text (decode)


_lock = threading.Lock()
_state: _State | None = None
_source: str | None = None  # where the vocabulary came from (tokens/cache.py Vocabulary.source)
_special: dict[str, int] = {}  # its added tokens (text → id), which the encoding itself does not know
_build_s: float | None = None


class _AddedTokens:
    """Finds added-token text, leftmost-longest like HF's added-token matcher: a candidate is a place where an added
    token's first two characters occur (one small regex, C speed; "<" before a space or a digit is none), and there
    the longest added token wins. Built in ~1 ms: a regex of the 1.3k tokens costs ~45 ms to compile."""

    def __init__(self, ids: dict[str, int]):
        self.ids = ids
        by_first: dict[str, set[int]] = {}
        for token in ids:
            by_first.setdefault(token[0], set()).add(len(token))
        self.lengths = {first: sorted(sizes, reverse=True) for first, sizes in by_first.items()}
        self.first_chars = frozenset(by_first)
        self.start = re.compile("(?=" + "|".join(sorted({re.escape(t[:2]) for t in ids})) + ")")

    def spans(self, text: str) -> Iterator[tuple[int, int]]:
        end = 0
        for candidate in self.start.finditer(text):
            at = candidate.start()
            if at < end:
                continue  # inside the added token just found
            left = len(text) - at
            for size in self.lengths[text[at]]:
                if size <= left and text[at : at + size] in self.ids:
                    end = at + size
                    yield at, end
                    break


def build_encoding() -> tiktoken.Encoding:
    """The encoding of the ordinary tokens from the verified ranks file (tokens/cache.py), without keeping the ranks
    as Python objects. It knows no added token: ``encode`` and ``decode`` handle those (``_special``), so tiktoken
    never compiles its 1.3k-token matcher (~15 ms of CPU and ~7 MB that nothing would use)."""
    from stratagate.tokens.cache import load_vocabulary
    from stratagate.tokens.deepseek import encoding_from

    global _source, _special
    vocabulary = load_vocabulary()
    _source, _special = vocabulary.source, vocabulary.special
    # One step that holds the GIL for ~75 ms (tiktoken's CoreBPE takes the vocabulary item by item through pyo3):
    # built by the first request that counts tokens, in a thread it awaits (App.tokens_ready), never at start.
    enc = encoding_from(vocabulary.ranks, {})
    del vocabulary
    # tiktoken's CoreBPE holds its own copy of the vocabulary; the Encoding keeps the dict only for pickling,
    # which we never do: dropping it saves ~20 MB.
    enc._mergeable_ranks = {}
    _return_freed_memory()
    return enc


def _return_freed_memory() -> None:
    """Hand the heap the ranks were read into back to the system (glibc keeps freed heap memory mapped: ~14 MB of
    the process's resident size). Elsewhere, or without glibc, nothing to do."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        pass


def _build_state() -> _State:
    enc = build_encoding()
    # We split added tokens off ourselves: handing tiktoken the 1.3k-token allowed set costs
    # ~0.3 ms per call, more than encoding a typical message.
    return _State(enc, _AddedTokens(dict(_special)), {i: tok.encode() for tok, i in _special.items()})


def _get_state() -> _State:
    global _state, _build_s
    state = _state
    if state is None:
        with _lock:  # build once (~0.2 s from the cache file) even if many threads ask at the same time
            if _state is None:
                started = time.perf_counter()
                _state = _build_state()
                _build_s = time.perf_counter() - started
            state = _state
    return state


def status() -> dict[str, Any]:
    """For system.info: ready or not, where the vocabulary came from, how long the build took."""
    return {
        "ready": _state is not None,
        "source": _source,
        "build_ms": None if _build_s is None else round(_build_s * 1000, 1),
    }


def get_encoding() -> tiktoken.Encoding:
    """The cached DeepSeek V4 ``tiktoken.Encoding`` of the ordinary tokens (built lazily, once, thread-safe).

    Use :func:`encode` and :func:`decode` rather than the encoding's own: it knows no added token, so its
    ``encode_ordinary`` would split added-token text into plain tokens, unlike the real tokenizer.
    """
    return _get_state().enc


def encode(text: str) -> list[int]:
    """Token ids the model sees for ``text`` (no BOS; added-token text maps to its id)."""
    state = _get_state()
    added = state.added
    # Every added token starts with "<" or "｜": most text can skip the special-token scan.
    if not any(ch in text for ch in added.first_chars):
        return state.enc.encode_ordinary(text)
    ids: list[int] = []
    last = 0
    for start, end in added.spans(text):
        if start > last:  # segments between added tokens are pre-tokenised independently
            ids += state.enc.encode_ordinary(text[last:start])
        ids.append(added.ids[text[start:end]])
        last = end
    if last < len(text):
        ids += state.enc.encode_ordinary(text[last:])
    return ids


def count_tokens(text: str) -> int:
    """Number of DeepSeek V4 tokens in ``text``."""
    return len(encode(text)) if text else 0


def decode(ids: Sequence[int]) -> str:
    """Inverse of :func:`encode` (invalid UTF-8 from partial sequences becomes U+FFFD)."""
    state = _get_state()
    parts: list[bytes] = []
    run: list[int] = []
    for i in ids:
        text = state.special_text.get(i)
        if text is None:
            run.append(i)
            continue
        if run:
            parts.append(state.enc.decode_bytes(run))
            run = []
        parts.append(text)
    if run:
        parts.append(state.enc.decode_bytes(run))
    return b"".join(parts).decode("utf-8", errors="replace")
