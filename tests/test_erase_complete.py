"""Erase is complete and forget hides echoes, on sessions where the fact travelled everywhere.

Each erase path (``memory_forget erase=true``, ``memory.erase``, ``stratagate erase --yes``) runs on a real sidecar
process with a real SQLite file, on a session where the erased sentence reached: the user message, the assistant's
echo, two DSH bash tool records (``cat`` printing the sentence, ``grep -o`` printing only its key words, in DSH's
recorded result shape), a block summary written by the scripted model (its ``block.summarized`` audit row's title and
tags), and the context archive (an archived node, a landed fold, the fold's replacement node). Afterwards the sentence
and each of its distinctive words are in no byte of the database, its -wal and -shm, and the sidecar's log (stderr,
at DEBUG), and no model request made after the erase carries them. Sentences are generated per test from made-up
words and varied templates: the erase must find what it was never told.
"""

from __future__ import annotations

import asyncio
import copy
import json
import random
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import model_env, turn
from stratagate.events import lexicon
from stratagate.text.distinctive import FREQUENT_EN, candidates, holds
from stratagate.text.terms import STOPWORDS_EN
from support.model_server import ScriptedModelServer, tool_call
from support.sidecar import SidecarClient
from support.surfaces import SurfaceBuilder, apply_ops, output_text, plan_params
from test_events_explicit import run_cli
from test_events_extraction import EXTRACT, Script, draft, forced_tool, job_note, user_msg
from test_forget_erase import next_summary

NS = "proj"
COMMON = "pipeline"
"""In the sentence and in many other messages of the namespace: not distinctive, so never blanked (nor is a lexicon
name such as "Python", said once elsewhere)."""
FIXTURES = Path(__file__).parent / "fixtures" / "dsh" / "tools"
_SYLLABLES = "ka lo mir sen tru vash pel dor quin zab ret hul nog fis tam bre"
_TEMPLATES = (
    "My cousin {A} keeps the {B} {COMMON} key in {C}.",
    "The {COMMON} for {A} deploys from the {B} rack near {C} every Tuesday.",
    "Remember that {A} prefers the {B} option for Python, and the {COMMON} lives in {C}.",
    "Our landlord {A} said the {COMMON} code is {N} for the {B} door at {C}.",
    "{A}的钥匙放在{C}的{B}柜子里， {COMMON} 不用管。",
)


def made_up(rng: random.Random, parts: int) -> str:
    return "".join(rng.choice(_SYLLABLES.split()) for _ in range(parts))


def sentence(seed: int) -> tuple[str, list[str]]:
    """(a sentence, its made-up words) — different for every seed, words no dictionary holds."""
    rng = random.Random(seed)
    words = {"A": made_up(rng, 3).capitalize(), "B": made_up(rng, 3), "C": made_up(rng, 4).capitalize(),
             "N": str(rng.randint(10_000, 99_999)), "COMMON": COMMON}
    text = _TEMPLATES[seed % len(_TEMPLATES)].format(**words)
    return text, [w for k, w in words.items() if k != "COMMON" and w in text]


PARAPHRASE = "hideaway"
"""A tag the scripted model adds when the block holds the fact: a summary in other words than the sentence's."""


class Model(Script):
    """The extraction script, plus summaries whose title and tags repeat the block's user line (as a real model's
    would): the ``block.summarized`` audit row then carries the words, and a paraphrase no string match finds."""

    marker = ""

    def __call__(self, body: dict[str, Any]) -> Any:
        name = forced_tool(body)
        if name == EXTRACT:
            return super().__call__(body)
        payload = json.loads(body["messages"][-1]["content"])
        lines = [ln.removeprefix("│ ") for ln in payload["transcript"].splitlines()]
        said = next((ln[6:] for ln in lines if ln.startswith("User: ")), "empty")
        paraphrase = [PARAPHRASE] if self.marker and self.marker in payload["transcript"] else []
        return tool_call(name, {
            "title": said[:80], "tags": [*candidates(said)[:5], *paraphrase] or ["talk"],
            "summary": f"The user said: {said[:200]}", "key_facts": [said[:300]], "has_durable_facts": self.durable,
        })


def bash(command: str, stdout: str) -> Any:
    """A DSH bash result in the recorded shape (tests/fixtures/dsh), with this command's output."""
    value = copy.deepcopy(json.loads((FIXTURES / "bash-success.json").read_text())["tools_result"]["result"]["value"])
    value["stdout"]["text"] = stdout
    return value


async def build(client: SidecarClient, model: Model, said: str, words: list[str]) -> dict[str, Any]:
    """The session of the module docstring; returns the event id, the block and the card ref."""
    model.durable = False
    for i in range(1, 6):  # the common word in ten other messages (user and assistant)
        res = await client.call("turn.capture", turn(i, session="s9", user=f"The {COMMON} failed again on run {i}.",
                                                     assistant=f"I restarted the {COMMON} (run {i})."))
        await job_note(client, res["sealed_block_ids"][0], kind="block_summary")
    res = await client.call("turn.capture", turn(6, session="s9", user="Python tests are slow today.",
                                                 assistant="Profiling them."))
    await job_note(client, res["sealed_block_ids"][0], kind="block_summary")
    model.durable = True
    model.answers.append(lambda p: {"events": [draft(said, user_msg(p), title=said[:60], quotes=[said])]})
    tools = [
        {"name": "bash", "call_id": "call_cat", "arguments": {"command": "cat notes.md"},
         "result": bash("cat notes.md", f"# notes\n- buy milk\n- {said}\n- renew passport\n")},
        {"name": "bash", "call_id": "call_grep", "arguments": {"command": f"grep -o -i '{words[0]}' notes.md"},
         "result": bash("grep", "\n".join(words) + "\n")},
    ]
    res = await client.call("turn.capture", turn(
        1, session="s1", user=f"Please remember this: {said}", assistant=f"{words[0]} noted.", tools=tools))
    (block,) = res["sealed_block_ids"]
    await job_note(client, block)  # summarised, then the fact extracted

    b = SurfaceBuilder()
    b.user(f"Please remember this: {said}")
    b.assistant(1, 1, "Reading the notes.", [("call_cat", "bash", {"command": "cat notes.md"})])
    b.result(1, 1, "call_cat", f"{said}\n" + output_text(3000, 7))
    b.assistant(1, 2, f"{words[0]} noted.")
    for t in range(2, 5):
        b.user(f"Turn {t}: run the checks.")
        b.assistant(t, 1, "Running.", [(f"call_{t}", "bash", {"command": "pytest -q"})])
        b.result(t, 1, f"call_{t}", output_text(3000, t))
        b.assistant(t, 2, "Done.")
    plan = await client.call("context.plan", plan_params(b.events, window=12_000, turn=4))
    cat_seq = b.events[2]["seq"]
    layer = next(op for op in plan["ops"] if op["start"] <= cat_seq <= op["end"])  # the T1 fold or card over it
    surface, landed = apply_ops(b.events, plan["ops"], b.seq)
    await client.call("context.landed", {"namespace": NS, "session": "s1", "ops": landed})
    await client.call("context.plan", plan_params(surface, window=12_000, turn=4))  # archives the replacements
    (hit,) = (await client.tool(NS, "s1", "memory_search_events", {"query": said}))["hits"]
    return {"event": hit["id"], "block": block, "layer": layer["ref"]}


def stored(db: Path) -> bytes:
    """Every byte of the database, its -wal and its -shm."""
    return b"".join(Path(f"{db}{s}").read_bytes() for s in ("", "-wal", "-shm") if Path(f"{db}{s}").exists())


def in_bytes(data: bytes, text: str) -> bool:
    """Whether the bytes hold ``text`` in UTF-8: ASCII any case, as a whole word when it is a candidate word."""
    if not text.isascii():
        return text.encode() in data
    haystack = data.decode("latin-1").lower()
    return holds(haystack, text.lower()) if text in candidates(text) else text.lower() in haystack


def tables_holding(db: Path, word: str) -> list[str]:
    """Where a word still is (the failure message of a byte check)."""
    conn = sqlite3.connect(db)
    try:
        out = []
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            for row in conn.execute(f"SELECT * FROM \"{table}\"").fetchall():
                if word in json.dumps(row, default=repr, ensure_ascii=False).lower():
                    out.append(f"{table}: {row!r:.300}")
        return out
    finally:
        conn.close()


def distinctive(said: str) -> list[str]:
    """The sentence's distinctive words by the documented rule (the namespace holds no other copy of them)."""
    return [w for w in candidates(said) if w != COMMON and lexicon.lookup(w) is None]


def assert_reached_everywhere(db: Path, words: list[str]) -> None:
    """The test's premise: before the erase, the words are in every place the erase must clean."""
    conn = sqlite3.connect(db)
    try:
        word = words[0].lower()
        for sql in (
            "SELECT count(*) FROM context_nodes WHERE kind = 'tool' AND instr(lower(text), ?) > 0",
            "SELECT count(*) FROM context_layers WHERE instr(lower(text), ?) > 0",
            "SELECT count(*) FROM audit_log WHERE action = 'block.summarized' AND instr(lower(after), ?) > 0",
            "SELECT count(*) FROM messages WHERE role = 'tool' AND instr(lower(tool_result), ?) > 0",
            "SELECT count(*) FROM messages WHERE role = 'assistant' AND content = ? || ' noted.'",
            "SELECT count(*) FROM audit_log WHERE action = 'block.summarized' AND instr(after, ?) > 0",
        ):
            arg = words[0] if "noted" in sql else PARAPHRASE if "instr(after" in sql else word
            assert conn.execute(sql, (arg,)).fetchone()[0] >= 1, sql
    finally:
        conn.close()


def assert_gone(text: str, said: str, where: str) -> None:
    low = text.lower()
    assert said.lower() not in low, where
    for word in distinctive(said):
        assert not holds(low, word), f"{word!r} still in {where}"


async def erase(path: str, client: SidecarClient, db: Path, event: str, env: dict[str, str]) -> SidecarClient:
    """Erase through one path; returns the running sidecar (the CLI erases a closed database, then it restarts)."""
    if path == "tool":
        result = await client.tool(NS, "s1", "memory_forget", {"id": event, "erase": True})
    elif path == "rpc":
        result = await client.call("memory.erase", {"namespace": NS, "id": event})
    else:
        await client.close()
        code, out, err = await run_cli("erase", event, "--db", str(db), "--namespace", NS, "--yes")
        assert code == 0, err
        assert out.startswith(f"erased: {event}")
        return await SidecarClient.start(db, env=env, args=["--block-turns", "1"], process=True)
    assert result["erased"] is True and result["counts"]["tool_records"] >= 2, result
    assert result["counts"]["archive_nodes"] >= 2 and result["counts"]["archive_layers"] >= 1, result
    return client


def test_the_sentences_vary():
    made = [sentence(seed) for seed in (5, 10, 11, 22, 33, 44)]
    assert len({s for s, _ in made}) == len(made) and any(not s.isascii() for s, _ in made)


@pytest.mark.parametrize(("path", "seed"), [("tool", 10), ("rpc", 11), ("cli", 22), ("tool", 33), ("rpc", 44)])
async def test_erase_leaves_no_copy_and_sends_nothing_again(
    path: str, seed: int, tmp_path: Path, model_server: ScriptedModelServer
):
    said, words = sentence(seed)
    model = Model()
    model.marker = words[0]
    model_server.default = model
    db = tmp_path / "memory.db"
    env = model_env(model_server, STRATAGATE_LOG_LEVEL="DEBUG")
    client = await SidecarClient.start(db, env=env, args=["--block-turns", "1"], process=True)
    logs: list[str] = []
    resummarised: asyncio.Task[Any] | None = None
    try:
        seeded = await build(client, model, said, words)
        assert_reached_everywhere(db, words)
        sent_before = len(model_server.requests)
        resummarised = asyncio.create_task(next_summary(client, seeded["block"])) if path != "cli" else None
        client = await erase(path, client, db, seeded["event"], env)
        if resummarised is not None:
            await resummarised
        else:
            await job_note(client, seeded["block"], kind="block_summary")
        # The re-summarised block and every view: nothing of it is left.
        l5 = await client.tool(NS, "s1", "memory_expand_block", {"id": seeded["block"], "level": 5})
        assert "[erased]" in l5["view"] and "renew passport" not in l5["view"]  # the cat record is blanked whole
        for level in range(5):
            view = await client.tool(NS, "s1", "memory_expand_block", {"id": seeded["block"], "level": level})
            assert_gone(json.dumps(view, ensure_ascii=False), said, f"L{level}")
        restored = await client.tool(NS, "s1", "decompress", {"id": seeded["layer"], "full": True})
        assert "erased for good" in restored["note"] and restored["placeholders"] == 0
        assert_gone(json.dumps(restored, ensure_ascii=False), said, "decompress")
        # A word the namespace uses widely is not the memory's: the other messages keep it.
        common = await client.tool(NS, "s9", "memory_search_raw", {"query": COMMON, "limit": 20})
        assert len(common["hits"]) >= 10
        lexicon_name = await client.tool(NS, "s9", "memory_search_raw", {"query": "python tests slow"})
        assert any("Python tests are slow" in json.dumps(h) for h in lexicon_name["hits"])  # a lexicon name stays
        after = model_server.requests[sent_before:]
        assert after, "the block was summarised again"
        for i, request in enumerate(after):
            assert_gone(json.dumps(request, ensure_ascii=False), said, f"model request {i} after the erase")
    finally:
        if resummarised is not None:
            resummarised.cancel()
        logs = getattr(client, "stderr_lines", [])
        await client.close()
    assert logs, "the sidecar logged (DEBUG)"
    assert_gone("".join(logs), said, "the sidecar's log")
    data = stored(db)
    assert not in_bytes(data, said), tables_holding(db, said)
    assert not in_bytes(data, PARAPHRASE), tables_holding(db, PARAPHRASE)  # the old summary's audit row is blanked
    for word in distinctive(said):
        assert not in_bytes(data, word), tables_holding(db, word)
    conn = sqlite3.connect(db)
    try:
        for table in ("context_nodes", "context_layers"):
            rows = conn.execute(f"SELECT * FROM {table}").fetchall()
            assert rows, table  # kept: refs stay valid
            assert_gone(json.dumps(rows, ensure_ascii=False), said, table)
        assert conn.execute("SELECT count(*) FROM privileged_writes").fetchone()[0] == 0
        with pytest.raises(sqlite3.IntegrityError, match="archived context nodes are immutable"):
            conn.execute("UPDATE context_nodes SET text = 'changed'")  # only inside an erase
    finally:
        conn.close()


async def test_forget_hides_the_echo_in_raw_search_and_restore_brings_it_back(
    tmp_path: Path, model_server: ScriptedModelServer
):
    said, words = sentence(5)
    model = Model()
    model_server.default = model
    client = await SidecarClient.start(tmp_path / "memory.db", env=model_env(model_server),
                                       args=["--block-turns", "1"])
    try:
        model.answers.append(lambda p: {"events": [draft(said, user_msg(p), title=said[:60])]})
        res = await client.call("turn.capture", turn(1, user=f"Please remember this: {said}",
                                                     assistant=f"{words[0]} noted."))
        (block,) = res["sealed_block_ids"]
        await job_note(client, block)
        model.durable = False
        res = await client.call("turn.capture", turn(2, user="Now the release notes.", assistant="Drafting them."))
        await job_note(client, res["sealed_block_ids"][0], kind="block_summary")
        (hit,) = (await client.tool(NS, "s1", "memory_search_events", {"query": said}))["hits"]

        async def found() -> list[str]:
            raw = await client.tool(NS, "s1", "memory_search_raw", {"query": words[0]})
            return [h.get("content") or h.get("text") or json.dumps(h) for h in raw["hits"]]

        before = await found()
        assert any(f"{words[0]} noted." in h for h in before) and any(said in h for h in before)
        await client.tool(NS, "s1", "memory_forget", {"id": hit["id"]})
        hidden = await client.tool(NS, "s1", "memory_search_raw", {"query": words[0]})
        assert hidden["hits"] == [] and hidden["hidden"] >= 2
        l5 = await client.tool(NS, "s1", "memory_expand_block", {"id": block, "level": 5})
        assert words[0].lower() not in l5["view"].lower()  # block views hide the same messages
        assert "Drafting them." in json.dumps(await client.tool(NS, "s1", "memory_search_raw", {"query": "drafting"}))
        await client.tool(NS, "s1", "memory_restore", {"id": hit["id"]})
        assert await found() == before
    finally:
        await client.close()


@settings(deadline=None)  # a loaded CI machine; the property is about words, not speed
@given(st.text(alphabet=st.sampled_from(list("abcdefgh XYZ.,'-0123456789年月日蓝色")), max_size=80))
def test_candidates_are_whole_rare_words_of_the_text(text: str):
    for word in candidates(text):
        assert holds(text, word)
        assert word not in STOPWORDS_EN and word not in FREQUENT_EN
        if re.search(r"[年月日蓝色]", word):  # CJK: the whole run, two characters at least
            assert len(word) >= 2
        else:
            assert len(word) >= 3 and not (word.isdigit() and len(word) < 4)
        assert word == word.lower() and not re.search(r"\s", word)


def test_candidates_leave_common_words_and_keep_names():
    assert candidates("Note for later: my cousin Bartholomew's code is 4471 and he is 42.") == [
        "cousin", "bartholomew", "4471"]
    assert "蓝绿色" in candidates("我最喜欢 蓝绿色")
