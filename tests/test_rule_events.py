"""Rule-based event extraction (events/rule_extraction.py), as a table: EN/ZH conversations, block by block →
the events the rules propose (type, scope, verbatim quote), what they supersede or dispute, and plans with their
window resolved from the message time. Earlier blocks' events are the "related events" of later blocks, as the
handler's lookup would give them; admission itself is exercised over JSON-RPC in tests/test_zero_model_scenario.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratagate.blocks.source import SourceMessage
from stratagate.events.extraction import EventExtractor
from stratagate.events.models import EventRow
from stratagate.events.rule_extraction import propose
from stratagate.events.temporal import build_temporal
from stratagate.timeutil import parse_time

SAID = "2026-05-06T10:00:00+08:00"  # a Wednesday


@dataclass
class Want:
    type: str
    quote: str
    scope: str = "project"
    supersedes: list[int] = field(default_factory=list)  # indexes of earlier wanted events
    conflicts: list[int] = field(default_factory=list)
    window: tuple[str, str] | None = None  # planned [start, end) dates, resolved from SAID
    uses: str | None = None  # the tool its claims say is used (None: not checked)


@dataclass
class Case:
    name: str
    blocks: list[list[str]]  # each block: its user messages
    want: list[Want]


CASES = [
    Case("en npm → pnpm → plan", [["We use npm for this repo."], ["Let's switch to pnpm."],
                                   ["We need to finish the prototype next week."]], [
        Want("fact", "We use npm for this repo.", uses="npm"),
        Want("change", "Let's switch to pnpm.", supersedes=[0], uses="pnpm"),
        Want("plan", "We need to finish the prototype next week.", window=("2026-05-11", "2026-05-18")),
    ]),
    Case("en change within one block", [["We use npm.", "Actually, replace npm with pnpm."]], [
        Want("fact", "We use npm.", uses="npm"),
        Want("change", "Actually, replace npm with pnpm.", supersedes=[0], uses="pnpm"),
    ]),
    Case("en no longer", [["The project uses Jest."], ["We no longer use Jest."]], [
        Want("fact", "The project uses Jest.", uses="jest"),
        Want("change", "We no longer use Jest.", supersedes=[0]),
    ]),
    Case("en contradiction not phrased as a change", [["We use Jest for tests."], ["We don't use Jest."]], [
        Want("fact", "We use Jest for tests.", uses="jest"),
        Want("fact", "We don't use Jest.", conflicts=[0]),
    ]),
    Case("en same slot, another value, no change word", [["We use npm."], ["We use yarn."]], [
        Want("fact", "We use npm.", uses="npm"),
        Want("fact", "We use yarn.", conflicts=[0], uses="yarn"),
    ]),
    Case("en preferences: first person is the user", [["I prefer tabs over spaces. We prefer small PRs."]], [
        Want("preference", "I prefer tabs over spaces.", scope="user"),
        Want("preference", "We prefer small PRs."),
    ]),
    Case("en decision and a dated plan", [["We decided to use PostgreSQL.\nShip the beta by 2026-05-20."]], [
        Want("decision", "We decided to use PostgreSQL."),
        Want("plan", "Ship the beta by 2026-05-20.", window=("2026-05-20", "2026-05-21")),
    ]),
    Case("en instead of, moving off", [["We use webpack and Jenkins."], ["Let's go with Vite instead of webpack."],
                                        ["We're moving off Jenkins to GitHub Actions."]], [
        Want("fact", "We use webpack and Jenkins.", uses="webpack"),
        Want("change", "Let's go with Vite instead of webpack.", supersedes=[0], uses="vite"),
        Want("change", "We're moving off Jenkins to GitHub Actions.", uses="github actions"),
    ]),
    Case("en decided, going forward", [["We decided to use Yarn."], ["Going forward we'll use pnpm."]], [
        Want("decision", "We decided to use Yarn.", uses="yarn"),
        Want("change", "Going forward we'll use pnpm.", supersedes=[0], uses="pnpm"),
    ]),
    Case("en questions and chatter are not events", [["Should we switch to pnpm?", "Thanks, looks good!"]], []),
    Case("en an assistant's words are evidence only", [["Hello."]], []),
    Case("zh npm → pnpm → plan", [["我们用 npm。"], ["改用 pnpm。"], ["下周完成原型。"]], [
        Want("fact", "我们用 npm。", uses="npm"),
        Want("change", "改用 pnpm。", supersedes=[0], uses="pnpm"),
        Want("plan", "下周完成原型。", window=("2026-05-11", "2026-05-18")),
    ]),
    Case("zh all in one message", [["我们用 npm。以后改用 pnpm，下周五完成原型。"]], [
        Want("fact", "我们用 npm。", uses="npm"),
        Want("change", "以后改用 pnpm，下周五完成原型。", supersedes=[0], uses="pnpm"),
    ]),
    Case("zh replace and stop", [["项目使用 Jest"], ["用 Vitest 替换 Jest"], ["我们不再用 Vitest 了"]], [
        Want("fact", "项目使用 Jest", uses="jest"),
        Want("change", "用 Vitest 替换 Jest", supersedes=[0], uses="vitest"),
        Want("change", "我们不再用 Vitest 了", supersedes=[1]),
    ]),
    Case("zh contradiction", [["我们用 Redis 做缓存。"], ["我们不用 Redis。"]], [
        Want("fact", "我们用 Redis 做缓存。"),
        Want("fact", "我们不用 Redis。", conflicts=[0]),
    ]),
    Case("zh preference, decision, dated plan", [
        ["我喜欢用 Tab 缩进。我们决定用 PostgreSQL。", "计划 5月20日 发布测试版"],
    ], [
        Want("preference", "我喜欢用 Tab 缩进。", scope="user"),
        Want("decision", "我们决定用 PostgreSQL。"),
        Want("plan", "计划 5月20日 发布测试版", window=("2026-05-20", "2026-05-21")),
    ]),
    Case("zh topic first, then 不用…改成", [["包管理器就用 npm"], ["不用 npm 了，改成 pnpm"], ["以后统一用 yarn"]], [
        Want("decision", "包管理器就用 npm", uses="npm"),
        Want("change", "不用 npm 了，改成 pnpm", supersedes=[0], uses="pnpm"),
        Want("change", "以后统一用 yarn", supersedes=[1], uses="yarn"),
    ]),
    Case("zh questions are not events", [["要不要改用 pnpm？", "好的，谢谢"]], []),
]


def _message(i: int, text: str, role: str = "user") -> SourceMessage:
    return SourceMessage(id=i, turn_seq=i, role=role, content=text, created_at=SAID)  # type: ignore[arg-type]


def _row(event_id: int, draft, status: str = "active") -> EventRow:
    return EventRow(
        id=event_id, namespace_id=1, session_id=1, origin="extraction", title=draft.title, summary=draft.summary,
        narrative=draft.summary, quotes=draft.quotes, type=draft.type, scope=draft.scope, mentioned_at=SAID,
        fingerprint=str(event_id), claims=[c.model_dump(exclude_none=True) for c in draft.claims], status=status,
        created_at=SAID, updated_at=SAID,
    )


def run_conversation(case: Case) -> list[tuple[object, list[int], list[int]]]:
    """Each block proposed with the earlier blocks' current events as related; returns (draft, supersedes,
    conflicts) per event, targets as global event indexes. Supersession/dispute are applied as admission would."""
    events: list[EventRow] = []
    got: list[tuple[object, list[int], list[int]]] = []
    msg_id = 0
    for block in case.blocks:
        messages = []
        for text in block:
            msg_id += 1
            messages.append(_message(msg_id, text))
        messages.append(_message(msg_id + 1000, "Sure, I'll switch to pnpm and finish it next week.", "assistant"))
        related = [ev for ev in events if ev.status in ("active", "disputed")]
        proposal = propose(messages, related)
        base = len(events)
        by_ref = {m.ref: m for m in messages}
        for i, draft in enumerate(proposal.output.events):
            assert EventExtractor._check(draft, by_ref, {ev.id for ev in related}) is None
            sup = [int(ref[4:]) - 1 for ref in draft.supersedes]
            sup += [base + j for j in proposal.supersedes_drafts.get(i, [])]
            con = [int(ref[4:]) - 1 for ref in draft.conflicts_with]
            con += [base + j for j in proposal.conflicts_drafts.get(i, [])]
            events.append(_row(len(events) + 1, draft))
            got.append((draft, sup, con))
            for t in sup:
                events[t] = events[t].model_copy(update={"status": "superseded"})
            for t in con:
                events[t] = events[t].model_copy(update={"status": "disputed"})
    return got


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_conversation_table(case: Case):
    got = run_conversation(case)
    assert [(d.type, d.scope, d.quotes) for d, _, _ in got] == [(w.type, w.scope, [w.quote]) for w in case.want]
    for (draft, sup, con), want in zip(got, case.want, strict=True):
        assert (sorted(sup), sorted(con)) == (want.supersedes, want.conflicts), draft.quotes
        if want.uses is not None:
            assert [c.object for c in draft.claims if not c.ended] == [want.uses]
        if want.window is not None:
            assert draft.type == "plan" and draft.time_status == "planned"
            assert draft.time_original and draft.time_original in draft.quotes[0]
            t = build_temporal(draft.time_original, parse_time(SAID), draft.time_status)
            assert t.status == "planned" and t.happened_start and t.happened_end
            assert (t.happened_start.date().isoformat(), t.happened_end.date().isoformat()) == want.window


def test_a_change_names_the_package_manager_slot_and_what_ended():
    draft = propose([_message(1, "We moved from npm to pnpm.")], []).output.events[0]
    claims = [(c.object, c.slot, c.ended) for c in draft.claims]
    assert claims == [("npm", "package manager", True), ("pnpm", "package manager", False)]
    zh = propose([_message(1, "我们把 npm 换成 pnpm")], []).output.events[0]
    assert [(c.object, c.ended) for c in zh.claims] == [("npm", True), ("pnpm", False)]


def test_a_superseded_related_event_is_not_also_disputed():
    first = propose([_message(1, "We use npm.")], []).output.events[0]
    related = [_row(1, first)]
    out = propose([_message(2, "Switch to pnpm."), _message(3, "We use pnpm now.")], related)
    assert [d.supersedes for d in out.output.events] == [["evt_1"], []]
    assert [d.conflicts_with for d in out.output.events] == [[], []] and out.conflicts_drafts == {}


_TEXT = st.text(
    alphabet=st.sampled_from(list("abcdefghij npm pnpm I we use switch to prefer 我们用改用下周完成。！？.,;\n-*`'\"")),
    max_size=300,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(_TEXT, st.text(max_size=200)), min_size=1, max_size=5))
def test_arbitrary_text_never_crashes_and_every_draft_quotes_its_message(texts: list[str]):
    messages = [_message(i + 1, t) for i, t in enumerate(texts)]
    by_ref = {m.ref: m for m in messages}
    out = propose(messages, [])
    for draft in out.output.events:
        assert draft.quotes and len(draft.source_message_ids) == 1
        assert all(q in by_ref[draft.source_message_ids[0]].content for q in draft.quotes)
        assert EventExtractor._check(draft, by_ref, set()) is None
        if draft.time_original:
            build_temporal(draft.time_original, datetime.fromisoformat(SAID), draft.time_status)
