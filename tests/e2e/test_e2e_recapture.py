"""No re-capture, in the real host: a 20-turn web session whose earlier rounds the context engine replaces (cards,
folds, block views) captures exactly the tool calls the agent made, and what replaced them restores faithfully.

The scripted model makes one or two real DSH ``bash`` calls per turn over code-heavy outputs (a real standard-library
module with ``cat``, a unified diff with ``git diff --no-index``, a Python traceback, pytest logs) on a small window
with four-turn blocks, so cards, folds and block views land between and within turns; the last turn restores a card
through DSH's ``decompress`` tool. Checked:

* every captured tool record (``messages`` rows of role ``tool``) is a call the scripted model issued, by call id and
  name, and every issued call (but the plugin's own tools) is captured once: the replacement ``tool/result`` events
  the engine appended for its cards, and the checkpoints of its folds and blocks and of DSH's own summaries (the stock
  engine runs as the last resort on this window), are not turn content; each turn's user text is its prompt only;
* ``decompress`` (full) of every landed card, fold and block gives back each original tool output byte for byte,
  or says how many placeholders it holds;
* a sealed block's L4 and L3 show each bash call's exit code and first output line; a landed card shows the command.

With ``STRATAGATE_RECORD_LANDINGS=<dir>`` the test also writes the session's log there (the recorder,
scripts/record-landing-fixtures.py, turns it into tests/fixtures/dsh-landings/).
"""

from __future__ import annotations

import asyncio
import html
import json
import os
import re
import sysconfig
import time
from collections import Counter
from pathlib import Path
from typing import Any

from stratagate.context.queries_views import layers
from stratagate.context.records import Layer
from stratagate.context.restore import DecompressArgs, DecompressResult, decompress
from stratagate.safety.secrets import placeholder_clause
from stratagate.storage.db import Database
from support.context_agent import (
    ScriptedSession,
    ScriptedTurn,
    bash,
    decompress_first_card,
    last_tool_text,
    workspace,
)
from support.dsh import DshHome, originals_by_call
from support.dsh_model import is_agent_request, messages
from support.dsh_web import plan_deadline_patch, running_web
from support.model_server import ScriptedModelServer

WINDOW = 24_000
TURNS = 20
BLOCK_TURNS = 4
OWN_TOOLS = {"decompress", "compress", "search_context"}
STDLIB = Path(sysconfig.get_paths()["stdlib"])
MODULES = ["bisect.py", "colorsys.py", "fnmatch.py", "glob.py", "shlex.py", "keyword.py"]
TRACEBACK = "python3 -c \"import json; json.loads('{\\\"broken\\\": ')\""
SETTLE_SECONDS = 60


def plan(k: int) -> list[Any]:
    """Turn ``k``'s calls: code-heavy, some failing (a diff exits 1, a traceback exits 1)."""
    steps = [bash(f"cat {STDLIB / MODULES[k % len(MODULES)]}", "Show a library module")]
    if k % 4 == 1:
        diff = f"git diff --no-index --no-color src/module_{k}.py src/module_{k + 1}.py"
        steps.append(bash(diff, "Diff two modules"))
    elif k % 4 == 2:
        steps.append(bash(TRACEBACK, "Reproduce the parse error"))
    elif k % 4 == 3:
        steps.append(bash(f"cat logs/run-{k}.log", "Show the test log"))
    return steps


def scripted_session() -> ScriptedSession:
    turns = [ScriptedTurn(f"Turn {k}: review module {k} and its neighbours.", plan(k), f"DONE {k}.")
             for k in range(TURNS - 1)]
    turns.append(
        ScriptedTurn(
            f"Turn {TURNS - 1}: restore the oldest tool output you have as a card.",
            [decompress_first_card],
            lambda body: "RESTORED: " + last_tool_text(body)[:120],
        )
    )
    return ScriptedSession(turns)


def issued_calls(server: ScriptedModelServer) -> Counter[tuple[str, str]]:
    """(call id, tool) of every call the scripted model issued, as the agent echoed them back in later steps."""
    seen: dict[str, str] = {}
    for body in server.requests:
        if not is_agent_request(body):
            continue
        for m in messages(body):
            for call in m.get("tool_calls") or []:
                seen[str(call["id"])] = str((call.get("function") or {}).get("name"))
    return Counter(seen.items())


def wait_for(what: str, check: Any, timeout: float = SETTLE_SECONDS) -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.2)  # polling the database until the shim delivered every turn
    raise AssertionError(f"{what} did not happen within {timeout}s (last: {last!r})")


def captured_turns(home: DshHome, session: str) -> int:
    if not home.db_path.exists():
        return 0
    rows = home.query("SELECT count(*) AS n FROM turns t JOIN sessions s ON s.id = t.session_id WHERE s.key = ?",
                      (session,))
    return int(rows[0]["n"])


async def restore_all(db_path: Path, session: str, data_dir: Path) -> list[tuple[Layer, DecompressResult]]:
    """(layer, ``decompress`` full=true) of every landed layer, from the database DSH's sidecar wrote."""
    data_dir.mkdir(parents=True, exist_ok=True)
    db = Database(db_path)
    await db.open()
    try:
        rows = await db.reader.execute_fetchall(
            "SELECT s.id, s.namespace_id, n.name FROM sessions s JOIN namespaces n ON n.id = s.namespace_id"
            " WHERE s.key = ?",
            (session,),
        )
        (session_id, namespace_id, namespace) = rows[0]
        out = []
        for layer in await layers(db, session_id):
            if layer.state != "landed":
                continue
            # to_file: a whole block is longer than an inline restore (which says so: truncated, and the note).
            result = await decompress(
                db, namespace=namespace, session=session, keys=(namespace_id, session_id),
                args=DecompressArgs(id=layer.ref, full=True, to_file=True), data_dir=data_dir, lam=0.0,
            )
            assert result.file is not None
            text = Path(result.file).read_bytes().decode("utf-8")
            assert len(text) == result.chars, (layer.ref, len(text), result.chars)
            out.append((layer, result.model_copy(update={"text": text})))
        return out
    finally:
        await db.close()


EXIT_TRAILER = re.compile(r"\n?\[exit code: (-?\d+)\]\s*\Z")


def bash_outcome(text: str) -> tuple[int, str]:
    """(exit code, first output line) of a DSH bash result as the model read it: DSH states a non-zero code in a
    trailer, and stderr after a ``[stderr]`` line (first when stdout is empty)."""
    found = EXIT_TRAILER.search(text)
    body = text[: found.start()] if found else text
    lines = [line for line in body.splitlines() if line.strip()]
    first = lines[0] if lines else ""
    if first == "[stderr]":  # nothing on stdout: the summary says where its line comes from
        first = "stderr: " + (lines[1] if len(lines) > 1 else "")
    return (int(found.group(1)) if found else 0), " ".join(first.split())


def check_restores(restored: list[tuple[Layer, DecompressResult]], original: dict[str, str]) -> None:
    """Every landed card, fold and block restores each original tool output byte for byte, or names its
    placeholders."""
    assert {layer.kind for layer, _ in restored} == {"card", "fold", "block"}, sorted({lay.kind for lay, _ in restored})
    for layer, result in restored:
        tools = [p for p in result.parts if p.call_id and p.kind == "raw" and p.call_id in original]
        assert tools or layer.kind != "card", (layer.ref, result.parts)
        if result.placeholders:  # the note names them ("… except N secrets redacted …, shown as placeholders")
            assert placeholder_clause(result.placeholders) in result.note, (layer.ref, result.note)
        for part in tools:
            text = result.text[part.offset : part.offset + part.length]
            if not result.placeholders:
                assert text == original[part.call_id], (layer.ref, part.call_id, text[:200])


def check_views(
    home: DshHome, session: str, original: dict[str, str], restored: list[tuple[Layer, DecompressResult]]
) -> None:
    """Each sealed block's L4 and L3 show every bash call's exit code and first output line; a card its command."""
    blocks = home.query(
        "SELECT b.id, b.l4, b.l3 FROM blocks b JOIN sessions s ON s.id = b.session_id WHERE s.key = ?", (session,)
    )
    assert len(blocks) >= TURNS // BLOCK_TURNS - 1, len(blocks)
    for block in blocks:
        calls = home.query(
            "SELECT m.tool_call_id, m.tool_arguments FROM messages m JOIN turns t ON t.id = m.turn_id"
            " WHERE t.block_id = ? AND m.role = 'tool' AND m.tool_name = 'bash'",
            (block["id"],),
        )
        assert calls, f"block {block['id']} holds no bash call"
        for call in calls:
            code, first = bash_outcome(original[call["tool_call_id"]])
            shown = f"exit {code} · {first[:60]}"
            l4 = [ln for ln in block["l4"].splitlines() if ln.startswith("Tool call: bash (") and shown in ln]
            l3 = [ln for ln in block["l3"].splitlines() if ln.startswith("Tool bash → ") and shown in ln]
            assert l4 and l3, (shown, block["l4"][:800], block["l3"][:800])
            assert ("failed: " in l4[0] and "failed: " in l3[0]) is (code != 0), (l4, l3)
    commands = {cid: json.loads(args)["command"] for cid, args in (
        (r["tool_call_id"], r["tool_arguments"]) for r in home.query(
            "SELECT m.tool_call_id, m.tool_arguments FROM messages m JOIN sessions s ON s.id = m.session_id"
            " WHERE s.key = ? AND m.tool_name = 'bash'", (session,)))}
    cards = [(layer, result) for layer, result in restored if layer.kind == "card"]
    for card, result in cards:
        (call_id,) = {p.call_id for p in result.parts if p.call_id in commands}
        assert f"bash · {commands[call_id]}" in html.unescape(card.text), (card.ref, card.text[:300])


def test_a_session_with_landings_captures_only_the_agents_calls(
    web_stratagate: DshHome, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    web_stratagate.set_window(WINDOW, 4096)
    web_stratagate.extra_env["STRATAGATE_BLOCK_TURNS"] = str(BLOCK_TURNS)
    work = workspace(tmp_path / "project", logs=TURNS + 2, sources=TURNS + 2)
    agent = scripted_session()
    model_server.default = agent
    with running_web(web_stratagate, work, patches=[plan_deadline_patch(web_stratagate)]) as web:
        session = web.create_session(work)
        for turn in agent.turns:
            session.send(turn.prompt, timeout=120, requests=lambda: len(model_server.requests))
        log = session.history()
        wait_for("every turn captured", lambda: captured_turns(web_stratagate, session.id) == TURNS)
    record = os.environ.get("STRATAGATE_RECORD_LANDINGS")
    if record:
        Path(record).mkdir(parents=True, exist_ok=True)
        Path(record, "session.json").write_text(json.dumps(
            {"session": session.id, "work": str(work), "home": str(web_stratagate.path), "log": log}))
    assert not agent.errors, agent.errors
    assert [t.end_reason for t in session.turns] == ["completed"] * TURNS

    # The engine replaced earlier rounds inside turns: replacement tool/results and checkpoints are in turn events.
    replaced = [e for t in session.turns for e in t.events if isinstance(e.get("surfaceOp"), dict)]
    kinds = {e["type"] for e in replaced}
    assert kinds == {"tool/result", "user/message"}, f"cards and checkpoints should land inside turns: {kinds}"

    # Captured tool records are exactly the calls the agent made (by call id and name), each once.
    issued = issued_calls(model_server)
    expected = Counter({k: n for k, n in issued.items() if k[1] not in OWN_TOOLS})
    rows = web_stratagate.query(
        "SELECT m.tool_call_id, m.tool_name FROM messages m JOIN sessions s ON s.id = m.session_id"
        " WHERE s.key = ? AND m.role = 'tool'",
        (session.id,),
    )
    captured = Counter((str(r["tool_call_id"]), str(r["tool_name"])) for r in rows)
    extra, missing = captured - expected, expected - captured
    assert not extra and not missing, (f"{sum(extra.values())} captured records the agent did not make",
                                       sorted(extra)[:5], "missing", sorted(missing)[:5])
    assert sum(expected.values()) == sum(1 for _, name, _ in agent.calls if name not in OWN_TOOLS)
    # ... and the user text of each turn is the human's prompt only (no checkpoint, card or injected text).
    users = web_stratagate.query(
        "SELECT m.content FROM messages m JOIN sessions s ON s.id = m.session_id JOIN turns t ON t.id = m.turn_id"
        " WHERE s.key = ? AND m.role = 'user' ORDER BY t.seq, m.position",
        (session.id,),
    )
    assert [r["content"] for r in users] == [t.prompt for t in agent.turns]

    # decompress through DSH's tool (the last turn): a card gives back the original output, and says so.
    (restore_call,) = [args for _, name, args in agent.calls if name == "decompress"]
    last_bodies = [b for b in model_server.requests[slice(*session.turns[-1].request_range)] if is_agent_request(b)]
    restored_by_host = json.loads(last_tool_text(last_bodies[-1]))
    card_call = next(e["data"]["message"]["content"][0]["toolCallId"] for e in log if isinstance(
        e.get("surfaceOp"), dict) and e["type"] == "tool/result" and f'id={restore_call["id"]} ' in json.dumps(e))
    assert restored_by_host["text"] == originals_by_call(log)[card_call], restored_by_host["note"]
    assert placeholder_clause(restored_by_host["placeholders"]) in restored_by_host["note"], restored_by_host["note"]

    # Every landed card, fold and block restores the originals; blocks and cards show what each bash call did.
    restored = asyncio.run(restore_all(web_stratagate.db_path, session.id, tmp_path / "restores"))
    original = originals_by_call(log)
    check_restores(restored, original)
    check_views(web_stratagate, session.id, original, restored)
