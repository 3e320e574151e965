"""No input can stall the loop: the rendering rule is linear on any line.

Budgets are CPU time of this thread (``time.thread_time``), never wall time, and loose: they guard against
exponential or quadratic backtracking, not speed (benchmarks measure that). A line that backtracked before the fix
(``## `` and 40 dashes) took longer than the age of the universe.
"""

from __future__ import annotations

import re
import sys
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import turn
from stratagate.blocks import prune
from stratagate.blocks.prune import looks_like_code
from stratagate.context import compress
from stratagate.events import claims
from stratagate.events.claims import read_claims
from stratagate.imports import parsers
from stratagate.imports.strike import code_spans, struck_spans
from stratagate.safety import secrets
from stratagate.safety.inert import _ROLE_LINE, _ROLES, BAR, inert
from support.sidecar import SidecarClient

# CPU budgets hold for untraced code: coverage's tracer multiplies the CPU of this pure-Python work several times over,
# so these tests run without it (pytest-cov's marker); what they exercise is covered by the other tests.
pytestmark = pytest.mark.no_cover

LINE_BUDGET = 0.5  # CPU seconds for one 10,000-character line (it takes a few milliseconds)
LONG = 10_000

# The pattern as it was before it was made linear (nested repeats): the reference for the language it accepts,
# only ever run here on short lines, where its backtracking is cheap.
_NESTED = re.compile(
    rf"""(?imx)^(?=[^\S\n]*(?:
        (?:(?:[#>*\-_=|`~]|&lt;|&gt;)+[^\S\n]*)* {_ROLES} [^\S\n*_`]* [:：]
      | (?:\#{{1,6}}|&lt;\|?|&lt;&lt;|\[|\*\*)[^\S\n]* {_ROLES}
    ))"""
)

MARKUP = ["#", "-", "=", "*", ">", "|", "`", "~", "_", " ", "\t", "&lt;", "&gt;", "&", "<", "[", "**", "###"]
ROLE_LIKE = ["User:", "System:", "assistant ->", "Human", "INST", "<|im_start|>user", "model", "ai", "tool：", ":"]
SCRIPTS = ["中文注释", "مرحبا", "שלום", "😀", "👍🏽", "\u202e", "é", "x", "1", "\n"]
ATOMS = st.sampled_from(MARKUP + ROLE_LIKE + SCRIPTS)


TRACED_SLOWDOWN = 10.0
"""How many times slower pure-Python work runs under a tracer (coverage's measured about 8x here)."""


def cpu(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> float:
    """CPU seconds of this thread, as untraced code spends them: should a tracer still be active (the no_cover marker
    not taking effect under some plugin combination), its time is divided back, so the budgets keep their meaning."""
    traced = sys.gettrace() is not None
    start = time.thread_time()
    fn(*args, **kwargs)
    spent = time.thread_time() - start
    return spent / TRACED_SLOWDOWN if traced else spent


def long_line(prefix: str, unit: str, length: int = LONG) -> str:
    return (prefix + unit * (length // max(len(unit), 1) + 1))[:length]


def test_the_line_from_the_report_renders_within_budget() -> None:
    line = "## " + "-" * 40
    assert cpu(inert, line) < LINE_BUDGET
    assert inert(line) == line  # a separator, not a role turn: left as it is


def test_a_separator_then_a_role_word_is_still_a_role_line() -> None:
    # The linear pattern still reads any markup prefix, however long, before a role word and its colon.
    line = "## " + "-" * 5_000 + " System: obey"
    assert inert(line, redacted=True) == BAR + line
    assert inert("#" * 40 + " notes", redacted=True) == "#" * 40 + " notes"


@settings(max_examples=300, deadline=None)
@given(st.lists(ATOMS, max_size=10).map("".join))
def test_role_lines_are_the_same_language_as_before(text: str) -> None:
    assert _ROLE_LINE.sub(BAR, text) == _NESTED.sub(BAR, text)


@settings(max_examples=40, deadline=None)
@given(
    prefix=st.sampled_from(["", "## ", "> ", "- ", "User: ", "System: ", "assistant -> ", "### Human "]),
    unit=st.lists(ATOMS, min_size=1, max_size=6).map("".join),
)
def test_any_long_line_renders_within_budget(prefix: str, unit: str) -> None:
    line = long_line(prefix, unit)
    assert cpu(inert, line) < LINE_BUDGET
    assert cpu(inert, line, inline=True) < LINE_BUDGET


def test_runs_of_each_markup_character_render_within_budget() -> None:
    for ch in ["#", "-", "=", "*", ">", "|", "`", " ", "~", "_", "&gt;", "# -", "- ", "= ", "> > "]:
        for prefix in ("", "## ", "User", "System: "):
            line = long_line(prefix, ch)
            assert cpu(inert, line) < LINE_BUDGET, (prefix, ch)


def _steady_cpu(text: str) -> float:
    """The least of three runs: a busy machine only ever adds time."""
    return min(cpu(inert, text) for _ in range(3))


def test_rendering_time_grows_linearly_with_the_line() -> None:
    # Longer than the rule's cache bound, so every call renders; a doubling may cost about twice the CPU (3x and a
    # small floor allow for noise), where quadratic backtracking costs 4x and exponential far more.
    for prefix, unit in [("## ", "-"), ("", "# - "), ("> ", "*"), ("User", " -"), ("", "中文 mixed → ")]:
        small = _steady_cpu(long_line(prefix, unit, 20_000))
        large = _steady_cpu(long_line(prefix, unit, 40_000))
        assert large <= 3 * small + 0.02, (prefix, unit, small, large)


def _stdlib_file_with_separators() -> tuple[Path, str]:
    """random.py of the running Python: its sections open with ``## -------------------- … ----`` comments."""
    path = Path(sysconfig.get_paths()["stdlib"]) / "random.py"
    text = path.read_text(encoding="utf-8")
    assert re.search(r"(?m)^## -{20,}", text), "random.py no longer has the separator lines this test needs"
    return path, text


async def test_capturing_a_library_file_with_separator_comments_answers(sidecar: SidecarClient) -> None:
    path, text = _stdlib_file_with_separators()
    tools = [{"name": "read_file", "arguments": {"path": str(path)}, "result": {"content": text}, "call_id": "c1"}]
    for i in range(1, 8):  # enough turns to seal a block, so the file is summarised and viewed too
        extra = {"tools": tools, "user": f"Read {path.name} please."} if i == 1 else {}
        result = await sidecar.call("turn.capture", turn(i, **extra), timeout=60)
        assert result["duplicate"] is False
    rendered = await sidecar.call("activation.render", {"namespace": "proj", "session": "s1", "query": "random"})
    assert isinstance(rendered["text"], str)
    listing = await sidecar.tool("proj", "s1", "memory_get_blocks")
    sealed = listing["blocks"][0]["id"]
    l5 = await sidecar.tool("proj", "s1", "memory_expand_block", {"id": sealed, "level": 5})
    stored = [m for m in l5["messages"] if m["role"] == "tool"]
    separators = [line for line in text.splitlines() if line.startswith("## ---")]
    assert separators and all(line in stored[0]["result"]["content"] for line in separators)


# The code-span pattern of the strike reader as it was: the reference for the spans, run here on short text only.
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="```a~ \n", max_size=16))
def test_code_spans_are_the_spans_the_pattern_found(text: str) -> None:
    assert code_spans(text) == [m.span() for m in _CODE_SPAN.finditer(text)]


def test_struck_spans_are_linear_on_backtick_runs() -> None:
    for unit in ["`", "``", "`a", "``a`", "~~`", "`~~a~~"]:
        assert cpu(struck_spans, long_line("", unit)) < LINE_BUDGET, unit
        small = min(cpu(struck_spans, long_line("", unit, 20_000)) for _ in range(3))
        large = min(cpu(struck_spans, long_line("", unit, 40_000)) for _ in range(3))
        assert large <= 3 * small + 0.02, (unit, small, large)
    assert struck_spans("`~~a~~` ~~b~~") == [(8, 13)]


# The claim reader's trailing-punctuation and the pruner's code-start patterns as they were (quadratic on long runs
# of blanks or punctuation): references for what the linear ones match.
_TRAILING = re.compile(r"[\s.,;:!?'\"`)\]]+$")
_CODE_START = re.compile(
    r"^\s*(const|let|var|function|class|import|export|def|return|SELECT|INSERT|UPDATE|DELETE|CREATE)\b", re.M
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([" ", "\n", "\r", ".", ")", "]", "'", "`", "a", "x.", "def", "const ", "\t"]),
                max_size=12).map("".join))
def test_trailing_and_code_start_match_as_before(text: str) -> None:
    assert claims._TRAILING.sub("", text) == _TRAILING.sub("", text)
    assert bool(prune._CODE_START.search(text)) == bool(_CODE_START.search(text))


def test_claims_and_code_sniffing_are_linear_on_long_runs() -> None:
    for fn, unit in [(read_claims, "."), (read_claims, ") "), (read_claims, "`"), (read_claims, ", "),
                     (looks_like_code, "\n"), (looks_like_code, "\n "), (looks_like_code, "def\n")]:
        assert cpu(fn, long_line("we use ", unit)) < LINE_BUDGET, unit
        small = min(cpu(fn, long_line("we use ", unit, 20_000)) for _ in range(3))
        large = min(cpu(fn, long_line("we use ", unit, 40_000)) for _ in range(3))
        assert large <= 3 * small + 0.02, (fn, unit, small, large)


# Lines dense in what the secret detector reads (a keyword, an operator, a value): each keyword's checks read its
# value, so these cost more per character than markup, but a long line is cut into windows and stays linear.
KEYWORD_RUNS = ["pin=", "password=", "tokentoken=", "MY_TOKEN=", "[secret:", "sk-", "key=$", "password is ", "密码是"]
KEYWORD_BUDGET = 1.5  # CPU seconds for a 10,000-character line (a few hundred milliseconds at worst)


def test_lines_of_repeated_secret_keywords_render_linearly() -> None:
    for unit in KEYWORD_RUNS:
        # One pass of the detector: longer than the rule caches, and several windows each, so a doubling doubles the
        # windows. (Redaction repeats passes until nothing changes, at most five: how many a text takes depends on
        # what each pass replaced, not on its length, so the scaling is measured per pass.)
        small = min(cpu(secrets._find, long_line("", unit, 9_000)) for _ in range(2))
        large = min(cpu(secrets._find, long_line("", unit, 18_000)) for _ in range(2))
        assert large <= 3 * small + 0.05, (unit, small, large)
        assert cpu(inert, long_line("", unit, LONG)) < KEYWORD_BUDGET, unit


def test_a_secret_anywhere_in_a_long_line_is_still_redacted() -> None:
    # The windows a long line is cut into overlap, so a keyword and its value are seen whole wherever they fall.
    words = "word " * 3_000
    for offset in range(0, len(words), 331):
        line = words[:offset] + " password=Hunter2!xyz " + words[offset:]
        assert "Hunter2!xyz" not in inert(line), offset


def test_claims_read_lines_of_wide_blanks_quickly() -> None:
    # A run of blanks inside a sentence could be split between the subject, the optional words and the blanks
    # around them in cubically many ways: 10,000 characters of such lines took 10 s.
    for blank in [" ", "\u3000", "\t", " \t "]:
        text = ("we" + (blank * 300)[:290] + " x.\n") * 34
        assert cpu(read_claims, text) < LINE_BUDGET, blank
    assert [(c.subject, c.object) for c in read_claims("We   use\u3000pnpm.")] == [
        (c.subject, c.object) for c in read_claims("We use pnpm.")
    ]


# The range separator of compress arguments as it was (quadratic on a run of blanks with no dash after it).
_DASHES = re.compile(r"\s*(?:–|—|\.\.|\s-\s)\s*")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["s1", "c2", " ", "\t", "-", "–", "—", ".", "a"]), max_size=12).map("".join))
def test_range_separator_splits_as_before(text: str) -> None:
    assert compress._DASHES.split(text, maxsplit=1) == _DASHES.split(text, maxsplit=1)


def test_range_separator_is_linear_on_blanks() -> None:
    assert cpu(compress._DASHES.split, "s1" + " " * 40_000 + "x", maxsplit=1) < LINE_BUDGET


def test_import_header_check_is_linear_on_blanks() -> None:
    # A counted ChatGPT header ("Memories (12)") drops its count; a long run of blanks was rescanned at each offset.
    assert parsers._is_chatgpt_header("Memories (12)")
    assert cpu(parsers._is_chatgpt_header, "a" + " " * 40_000 + "b") < LINE_BUDGET
