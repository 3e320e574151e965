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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import tiktoken

__all__ = ["count_tokens", "decode", "encode", "get_encoding", "status"]


@dataclass(frozen=True)
class _State:
    enc: tiktoken.Encoding
    special_ids: dict[str, int]
    special_re: re.Pattern[str]
    first_chars: frozenset[str]


_lock = threading.Lock()
_state: _State | None = None
_source: str | None = None  # where the vocabulary came from (tokens/cache.py Vocabulary.source)
_build_s: float | None = None


def _trie_pattern(words: Iterable[str]) -> str:
    """Regex matching any of ``words``, longest first, with shared prefixes factored out.

    A flat alternation of the 1.3k added tokens makes ``re`` try every branch at each "<" (~15 us);
    the trie fails after a character or two. Greedy optionals make the match leftmost-longest, like
    HF's added-token matcher.
    """
    trie: dict[str, Any] = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}  # end of a word

    def emit(node: dict[str, Any]) -> str:
        alts = [re.escape(ch) + emit(child) for ch, child in sorted(node.items()) if ch]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return f"(?:{body})?" if "" in node else body

    return emit(trie)


def build_encoding() -> tiktoken.Encoding:
    """The encoding from the verified ranks file (tokens/cache.py), without keeping the ranks as Python objects."""
    from stratagate.tokens.cache import load_vocabulary
    from stratagate.tokens.deepseek import encoding_from

    global _source
    vocabulary = load_vocabulary()
    _source = vocabulary.source
    # One step that holds the GIL for ~75 ms (tiktoken's CoreBPE takes the vocabulary item by item through pyo3):
    # built by the first request that counts tokens, in a thread it awaits (App.tokens_ready), never at start.
    enc = encoding_from(vocabulary.ranks, vocabulary.special)
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
    special_ids = {tok: enc.encode_single_token(tok) for tok in enc.special_tokens_set}
    # We split added tokens off ourselves: handing tiktoken the 1.3k-token allowed set costs
    # ~0.3 ms per call, more than encoding a typical message.
    special_re = re.compile(_trie_pattern(special_ids))
    return _State(enc, special_ids, special_re, frozenset(tok[0] for tok in special_ids))


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
    """The cached DeepSeek V4 ``tiktoken.Encoding`` (built lazily, once, thread-safe).

    Use :func:`encode` rather than ``get_encoding().encode``: tiktoken's default rejects added-token
    text, and ``encode_ordinary`` would split it into plain tokens, unlike the real tokenizer.
    """
    return _get_state().enc


def encode(text: str) -> list[int]:
    """Token ids the model sees for ``text`` (no BOS; added-token text maps to its id)."""
    state = _get_state()
    # Every added token starts with "<" or "｜": most text can skip the special-token scan.
    if not any(ch in text for ch in state.first_chars):
        return state.enc.encode_ordinary(text)
    ids: list[int] = []
    last = 0
    for match in state.special_re.finditer(text):
        if match.start() > last:  # segments between added tokens are pre-tokenised independently
            ids += state.enc.encode_ordinary(text[last : match.start()])
        ids.append(state.special_ids[match.group()])
        last = match.end()
    if last < len(text):
        ids += state.enc.encode_ordinary(text[last:])
    return ids


def count_tokens(text: str) -> int:
    """Number of DeepSeek V4 tokens in ``text``."""
    return len(encode(text)) if text else 0


def decode(ids: Sequence[int]) -> str:
    """Inverse of :func:`encode` (invalid UTF-8 from partial sequences becomes U+FFFD)."""
    return get_encoding().decode(list(ids))
