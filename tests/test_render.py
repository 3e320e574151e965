"""Deterministic views: L5 keeps everything, L3 drops filler and repeated pastes, and L3 ≤ L4 ≤ L5 always."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from stratagate.blocks.prune import REPEATED_PASTE, is_filler
from stratagate.blocks.render import render_l3, render_l4, render_l5, seal_views, tool_outcome
from stratagate.blocks.source import SourceMessage
from stratagate.blocks.toolsummary import summarize_result
from stratagate.safety.inert import BAR, inert
from stratagate.tokens import count_tokens


def msg(i: int, role: str, content: str = "", turn: int = 1, **tool) -> SourceMessage:
    fields = {"id": i, "turn_seq": turn, "role": role, "content": content, "created_at": "2026-05-01T10:00:00.000Z"}
    if role == "tool":
        fields.update(
            tool_name=tool.get("name", "bash"),
            tool_arguments=json.dumps(tool.get("arguments", {})),
            tool_result=json.dumps(tool.get("result")),
            is_error=tool.get("is_error", False),
        )
    return SourceMessage(**fields)


def test_l5_renders_tool_calls_with_arguments_and_results():
    messages = [
        msg(1, "user", "list files"),
        msg(2, "tool", name="bash", arguments={"command": "ls -la /srv"}, result={"stdout": "a\nb"}),
        msg(3, "assistant", "Two files."),
    ]
    l5 = render_l5(messages)
    assert 'Tool call: bash {"command": "ls -la /srv"}' in l5
    assert 'Tool result: {"stdout": "a\\nb"}' in l5
    assert l5.index("User: list files") < l5.index("Tool call") < l5.index("Assistant: Two files.")


def test_l3_filler_and_repeated_paste():
    paste = "```python\ndef handler(event):\n    return {'status': 200, 'body': event['body']}\n```"
    messages = [
        msg(1, "user", f"Here is the code:\n\n{paste}"),
        msg(2, "assistant", "好的"),
        msg(3, "user", f"Again:\n\n{paste}\n\nThanks!", turn=2),
        msg(4, "assistant", "OK.\nI changed the status to 201.", turn=2),
    ]
    l3 = render_l3(messages)
    assert l3.count("def handler(event)") == 1
    assert REPEATED_PASTE in l3
    assert "好的" not in l3 and "Thanks!" not in l3 and "OK." not in l3
    assert "I changed the status to 201." in l3


def test_l3_tool_records_are_name_and_outcome():
    big = {"matches": list(range(500)), "arguments": [1]}
    messages = [msg(1, "tool", name="grep", arguments={"pattern": "x" * 300}, result=big),
                msg(2, "tool", name="bash", result="boom", is_error=True)]
    l3 = render_l3(messages)
    assert "Tool grep → matches: 500" in l3 and "x" * 300 not in l3
    assert "Tool bash → failed: boom" in l3


@given(st.one_of(st.none(), st.booleans(), st.integers(), st.text(), st.lists(st.integers()),
                 st.dictionaries(st.text(max_size=10), st.one_of(st.text(), st.integers(), st.lists(st.none())))))
def test_tool_summaries_are_short_single_lines(value):
    summary = summarize_result(value)
    assert "\n" not in summary and len(summary) <= 160


JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=200)),
    lambda inner: st.one_of(st.lists(inner, max_size=6), st.dictionaries(st.text(max_size=12), inner, max_size=6)),
    max_leaves=40,
)
SHAPED_KEYS = st.sampled_from(["kind", "exitCode", "signal", "timedOut", "aborted", "stdout", "stderr", "path",
                               "lines", "after", "before", "image", "job", "goal", "todos", "runId", "output",
                               "agentsStarted", "result", "messageId", "accepted", "error", "matches", "answers"])
# Results that look like DSH's shapes with any values in their fields: the shape readers meet wrong types too.
SHAPED = st.dictionaries(SHAPED_KEYS, JSON, max_size=8)


def has_text(value) -> bool:
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, dict):
        return any(has_text(v) for k, v in value.items() if k not in ("arguments", "params", "input", "request"))
    if isinstance(value, list):
        return any(has_text(v) for v in value)
    return False


@settings(max_examples=300, deadline=None)
@given(st.one_of(JSON, SHAPED, SHAPED.map(json.dumps)), st.booleans())
def test_a_summary_of_any_json_result_never_raises_and_is_short(value, is_error):
    summary = summarize_result(value)
    shown = tool_outcome(msg(1, "tool", result=value, is_error=is_error))
    for text in (summary, shown):
        assert text and "\n" not in text and len(text) <= 160
        assert "structured result returned" not in text
    assert shown.startswith("failed: ") or not is_error


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_an_unknown_shape_reads_as_its_first_text(value):
    """Any value that holds text shows some of its words, never only key names, sizes or a placeholder."""
    summary = summarize_result(value)
    if has_text(value) and not isinstance(value, str):
        words = {w.strip("…") for s in _strings(value) for w in s.split()} - {""}
        assert any(w in summary for w in words), summary


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() if k not in ("arguments", "params", "input", "request")
                for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def nested(depth: int) -> object:
    deep: object = "needle"
    for _ in range(depth):
        deep = {"a": [deep]}
    return deep


def test_a_deeply_nested_result_is_summarised_without_recursion():
    assert summarize_result(nested(300)) == "a: 1 · a: needle"
    # Past the walk's budget only the sizes are read: bounded work for any result, and no recursion limit.
    assert summarize_result(nested(50_000)) == "a: 1"
    assert summarize_result("[" * 100_000 + "]" * 100_000).startswith("[[[")
    listed: object = ["needle", 2]
    for _ in range(5_000):
        listed = [listed, {"text": ["x", 1]}]
    assert summarize_result(listed) == "2 items · x"  # the first item is past the budget: the next one's text
    huge = {"exitCode": None, "timedOut": True, "timeoutMs": 10**400, "stdout": {"text": "out"}}
    assert summarize_result(huge) == "failed: timed out · out"


def test_filler_detection():
    for piece in ("ok", "OK.", " 好的！", "Thanks!", "嗯嗯", "收到。", "got it"):
        assert is_filler(piece), piece
    for piece in ("ok, use pnpm", "好的，用 pnpm", "not ok", "thanks to the cache it is fast"):
        assert not is_filler(piece), piece


TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=300)
FILLERS = st.sampled_from(["ok", "好的", "Thanks!", "嗯嗯", "sure.", "收到"])
PASTE = st.sampled_from(["```js\nconst a = 1;\nexport default a;\n```", "x = 1\n" * 20, "长文本重复" * 30])


@st.composite
def messages(draw):
    out = []
    n = draw(st.integers(1, 12))
    for i in range(1, n + 1):
        role = draw(st.sampled_from(["user", "assistant", "tool"]))
        turn = 1 + i // 3
        if role == "tool":
            out.append(msg(i, "tool", turn=turn, name=draw(st.sampled_from(["bash", "read", "编辑"])),
                           arguments={"a": draw(TEXT)}, result=draw(st.one_of(TEXT, st.dictionaries(TEXT, TEXT))),
                           is_error=draw(st.booleans())))
        else:
            parts = draw(st.lists(st.one_of(TEXT, FILLERS, PASTE), min_size=1, max_size=5))
            out.append(msg(i, role, "\n\n".join(parts), turn=turn))
    return out


@settings(max_examples=150, deadline=None)
@given(messages())
def test_length_guard_and_l5_completeness(msgs):
    views = seal_views(msgs, count_tokens)
    assert views.l3_tokens <= views.l4_tokens <= views.l5_tokens
    assert (views.l5_tokens, views.l4_tokens, views.l3_tokens) == (
        count_tokens(views.l5), count_tokens(views.l4), count_tokens(views.l3))
    # L5 is stored in rendered form (safety/inert.py): every message is there as the rule renders it (bars that
    # the rule puts before role-like lines aside).
    shown = views.l5.replace(BAR, "")
    for m in msgs:
        if m.role == "tool":
            assert inert(m.arguments_text(), redacted=True).replace(BAR, "") in shown
            assert inert(m.result_text(), redacted=True).replace(BAR, "") in shown
        else:
            assert inert(m.content, redacted=True).replace(BAR, "") in shown
    # Deterministic: sealing the same messages again gives byte-identical views.
    again = seal_views(msgs, count_tokens)
    assert (again.l3, again.l4, again.l5) == (views.l3, views.l4, views.l5)
    assert render_l4(msgs) == render_l4(list(msgs))


ARG_MARK = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=12, max_size=24).map(lambda s: "ARG" + s)


@settings(max_examples=100, deadline=None)
@given(ARG_MARK, st.sampled_from(["arguments", "params", "input", "request"]), st.text(max_size=400),
       st.booleans())
def test_l4_holds_no_raw_tool_arguments(mark: str, field: str, result_text: str, is_error: bool):
    """L4 per the spec: a tool record is its name and a result summary of at most 160 characters; the arguments,
    and arguments echoed back in a result's arguments/params/input/request field, stay in L5 only."""
    results = [
        {field: {"command": mark}, "items": [1, 2, 3]},
        {field: mark, "ok": True},
        {"stdout": result_text},
        result_text,
    ]
    messages = [msg(1, "user", "run it")]
    for i, result in enumerate(results, start=2):
        messages.append(msg(i, "tool", name="bash", arguments={"command": f"deploy --token {mark}", "cwd": mark},
                            result=result, is_error=is_error))
    l4, l5 = render_l4(messages), render_l5(messages)
    assert mark in l5
    assert mark not in l4
    tool_lines = [line for line in l4.splitlines() if line.startswith("Tool call: bash (")]
    assert len(tool_lines) == len(results)
    for line in tool_lines:
        summary = line[len("Tool call: bash (") : -1]
        assert len(summary) <= 160 + len("failed: ")
