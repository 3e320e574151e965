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

# Phrasings no earlier test used (issue 12's acceptance runs unseen conversations): state, decisions, changes,
# preferences and plans with many time wordings, then the sentences that must NOT become current events.
UNSEEN = [
    Case("en topic subjects: CI runs on, moving CI to", [["Our CI runs on Jenkins right now."],
                                                          ["We're moving CI to GitHub Actions."]], [
        Want("fact", "Our CI runs on Jenkins right now.", uses="jenkins"),
        Want("change", "We're moving CI to GitHub Actions.", supersedes=[0], uses="github actions"),
    ]),
    Case("en written with, replace … please", [["Tests are written with Jest."],
                                                ["Replace Jest with Vitest please."]], [
        Want("fact", "Tests are written with Jest.", uses="jest"),
        Want("change", "Replace Jest with Vitest please.", supersedes=[0], uses="vitest"),
    ]),
    Case("en let's go with, then instead of", [["Let's go with PostgreSQL for the database."],
                                                ["Actually, we'll use SQLite instead of PostgreSQL."]], [
        Want("decision", "Let's go with PostgreSQL for the database.", uses="postgresql"),
        Want("change", "Actually, we'll use SQLite instead of PostgreSQL.", supersedes=[0], uses="sqlite"),
    ]),
    Case("en the database is, migrate the database to", [["The database is MySQL."],
                                                          ["Migrate the database to Postgres."]], [
        Want("fact", "The database is MySQL.", uses="mysql"),
        Want("change", "Migrate the database to Postgres.", supersedes=[0], uses="postgresql"),
    ]),
    Case("en we're on, switching … over to", [["We're on Yarn for now."], ["We are switching over to pnpm."]], [
        Want("fact", "We're on Yarn for now.", uses="yarn"),
        Want("change", "We are switching over to pnpm.", supersedes=[0], uses="pnpm"),
    ]),
    Case("en bundled with, swap … for", [["The frontend is bundled with Webpack."], ["Swap webpack for Vite."]], [
        Want("fact", "The frontend is bundled with Webpack.", uses="webpack"),
        Want("change", "Swap webpack for Vite.", supersedes=[0], uses="vite"),
    ]),
    Case("en we've moved off", [["Deploys go through CircleCI."], ["We've moved off CircleCI."]], [
        Want("fact", "Deploys go through CircleCI.", uses="circleci"),
        Want("change", "We've moved off CircleCI.", supersedes=[0]),
    ]),
    Case("en from now on use", [["We're using npm."], ["From now on use pnpm for installs."]], [
        Want("fact", "We're using npm.", uses="npm"),
        Want("change", "From now on use pnpm for installs.", supersedes=[0], uses="pnpm"),
    ]),
    Case("en we'll use / we have decided", [["We'll use Redis for the cache.", "We have decided to adopt Ruff."]], [
        Want("decision", "We'll use Redis for the cache.", uses="redis"),
        Want("decision", "We have decided to adopt Ruff.", uses="ruff"),
    ]),
    Case("en preferences", [["I really prefer pytest over unittest.", "I'd rather keep functions small.",
                             "I don't like long PR descriptions."]], [
        Want("preference", "I really prefer pytest over unittest.", scope="user"),
        Want("preference", "I'd rather keep functions small.", scope="user"),
        Want("preference", "I don't like long PR descriptions.", scope="user"),
    ]),
    Case("en plans with deadlines", [[
        "We plan to ship v2 by the end of March.", "I want to finish the migration by Friday.",
        "We're going to release the beta in two weeks.", "The goal is to launch by the end of next month.",
        "We need to freeze the API within two weeks.", "Let's deliver the report by EOD.",
    ]], [
        Want("plan", "We plan to ship v2 by the end of March.", window=("2027-03-01", "2027-04-01")),
        Want("plan", "I want to finish the migration by Friday.", window=("2026-05-08", "2026-05-09")),
        Want("plan", "We're going to release the beta in two weeks.", window=("2026-05-18", "2026-05-25")),
        Want("plan", "The goal is to launch by the end of next month.", window=("2026-06-01", "2026-07-01")),
        Want("plan", "We need to freeze the API within two weeks.", window=("2026-05-06", "2026-05-20")),
        Want("plan", "Let's deliver the report by EOD.", window=("2026-05-06", "2026-05-07")),
    ]),
    Case("en plans: a dated release, the end of the week, mid-month", [[
        "We will publish the docs before the release on May 20.", "Finish the review by the end of the week.",
        "We aim to migrate the tests by mid-June.",
    ]], [
        Want("plan", "We will publish the docs before the release on May 20.", window=("2026-05-20", "2026-05-21")),
        Want("plan", "Finish the review by the end of the week.", window=("2026-05-04", "2026-05-11")),
        Want("plan", "We aim to migrate the tests by mid-June.", window=("2026-06-01", "2026-07-01")),
    ]),
    Case("en not current: questions, hypotheticals, quotes, negations", [[
        "Should we switch to pnpm?", "What if we used Bun instead", "We could move to Vite at some point.",
        "Maybe switch to Vitest later.", "The docs say \"switch to pnpm for speed\".",
        "We're not moving to GitHub Actions.", "He said we should migrate to Postgres.",
        "I'm thinking about replacing Jest with Vitest.", "Move the meeting to Friday.",
        "The tests are flaky.", "Our CI is slow today.",
    ]], [
        Want("decision", "We're not moving to GitHub Actions."),
    ]),
    Case("en in favour of, X not Y, switched the bundler", [["Our bundler is Webpack.", "Tests are run with Mocha.",
                                                          "We'll be using npm."],
                                                         ["We've switched the bundler to esbuild.",
                                                          "We're dropping Mocha in favour of Vitest.",
                                                          "Use pnpm, not npm."]], [
        Want("fact", "Our bundler is Webpack.", uses="webpack"),
        Want("fact", "Tests are run with Mocha.", uses="mocha"),
        Want("decision", "We'll be using npm.", uses="npm"),
        Want("change", "We've switched the bundler to esbuild.", supersedes=[0], uses="esbuild"),
        Want("change", "We're dropping Mocha in favour of Vitest.", supersedes=[1], uses="vitest"),
        Want("change", "Use pnpm, not npm.", supersedes=[2], uses="pnpm"),
    ]),
    Case("en more that is not current", [[
        "Maybe we should try Bun?", "If we switch to pnpm, installs get faster.",
        "I don't think we should replace Jest",
        "Not sure if we should move to Deno.", "We might go with Vite.", "Someone suggested we use Yarn.",
    ]], []),
    Case("zh topic first, then 换成 (the probe)", [["我们的测试框架用 Jest。"], ["换成 Vitest 吧。"]], [
        Want("fact", "我们的测试框架用 Jest。", uses="jest"),
        Want("change", "换成 Vitest 吧。", supersedes=[0], uses="vitest"),
    ]),
    Case("zh 决定用, 改用", [["数据库决定用 PostgreSQL。"], ["数据库改用 SQLite。"]], [
        Want("decision", "数据库决定用 PostgreSQL。", uses="postgresql"),
        Want("change", "数据库改用 SQLite。", supersedes=[0], uses="sqlite"),
    ]),
    Case("zh 是, 迁移到", [["数据库是 MySQL"], ["数据库迁移到 PostgreSQL"]], [
        Want("fact", "数据库是 MySQL", uses="mysql"),
        Want("change", "数据库迁移到 PostgreSQL", supersedes=[0], uses="postgresql"),
    ]),
    Case("zh 跑在, 把…从…迁到", [["CI 跑在 Jenkins 上"], ["把 CI 从 Jenkins 迁到 GitHub Actions"]], [
        Want("fact", "CI 跑在 Jenkins 上", uses="jenkins"),
        Want("change", "把 CI 从 Jenkins 迁到 GitHub Actions", supersedes=[0], uses="github actions"),
    ]),
    Case("zh 采用, 不用…了，用…", [["前端采用 Webpack 打包。"], ["不用 Webpack 了，用 Vite"]], [
        Want("decision", "前端采用 Webpack 打包。", uses="webpack"),
        Want("change", "不用 Webpack 了，用 Vite", supersedes=[0], uses="vite"),
    ]),
    Case("zh 使用, 就用, 以后都用", [["我们使用 yarn 管理依赖。"], ["包管理就用 npm 吧"], ["以后都用 pnpm"]], [
        Want("fact", "我们使用 yarn 管理依赖。", uses="yarn"),
        Want("decision", "包管理就用 npm 吧", conflicts=[0], uses="npm"),
        Want("change", "以后都用 pnpm", supersedes=[0, 1], uses="pnpm"),  # both of the disputed pair
    ]),
    Case("zh preferences", [["我比较喜欢用 Vim。", "我习惯先写测试。", "我不喜欢太长的函数。"]], [
        Want("preference", "我比较喜欢用 Vim。", scope="user"),
        Want("preference", "我习惯先写测试。", scope="user"),
        Want("preference", "我不喜欢太长的函数。", scope="user"),
    ]),
    Case("zh plans with deadlines", [[
        "我们计划月底前发布 2.0。", "下周三之前完成迁移。", "两周内上线新版本。", "打算年底前交付。",
        "预计下个月底完成重构。", "计划三天之内修复这个问题。",
    ]], [
        Want("plan", "我们计划月底前发布 2.0。", window=("2026-05-01", "2026-06-01")),
        Want("plan", "下周三之前完成迁移。", window=("2026-05-13", "2026-05-14")),
        Want("plan", "两周内上线新版本。", window=("2026-05-06", "2026-05-20")),
        Want("plan", "打算年底前交付。", window=("2026-01-01", "2027-01-01")),
        Want("plan", "预计下个月底完成重构。", window=("2026-06-01", "2026-07-01")),
        Want("plan", "计划三天之内修复这个问题。", window=("2026-05-06", "2026-05-09")),
    ]),
    Case("zh not current: questions, hypotheticals, quotes, others", [[
        "要不要换成 Vitest？", "如果改用 pnpm 会更快", "我们在考虑迁移到 PostgreSQL", "也许以后用 Bun",
        "听说他们改用 Vite 了", "他们的测试框架用 Jest", "数据库很慢", "测试框架用什么？", "不如换成 Bun 试试",
        "我们是不是该用 Redis？",
    ]], []),
    Case("zh two topic words, 改为使用", [["后端框架用 Django。"], ["后端框架改为使用 FastAPI。"]], [
        Want("fact", "后端框架用 Django。", uses="django"),
        Want("change", "后端框架改为使用 FastAPI。", supersedes=[0], uses="fastapi"),
    ]),
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


@pytest.mark.parametrize("case", CASES + UNSEEN, ids=[c.name for c in CASES + UNSEEN])
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
