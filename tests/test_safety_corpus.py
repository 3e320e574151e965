"""The injection and secret corpora in every storage path, checked against every output.

Each payload of tests/fixtures/injection_corpus.json and each secret of tests/fixtures/secrets_corpus.json goes into
a user message, an assistant message, tool arguments, a tool result, a remembered text, an import, a graph node name
and a session name. Then activation.render, every retrieval tool and every model request the sidecar made (captured
by the scripted model server) must show it inert: one wrapper, headings that are whole lines, no markup, special
token, invisible or bidi character, and no line that poses as a role turn. No secret may appear in any of those, in
the database files or in the DEBUG log.

The secrets, with the credentials stated in prose of tests/test_secrets.py, also go through DSH's recorded tool
result shapes (tests/fixtures/dsh/tools), the context engine (cards landed into the context archive, restored by
decompress and searched) and the Memory page's read routes; none may be in any of those, in the context archive's
tables, or in the database, its -wal and -shm files read while the sidecar runs.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from conftest import model_env, turn
from stratagate.safety.secrets import placeholder_count
from support.inert_checks import check_inert, check_tree
from support.model_server import ScriptedModelServer
from support.sidecar import RpcFailure, SidecarClient
from support.surfaces import SurfaceBuilder, apply_ops, plan_params
from test_secrets import PROSE_CREDENTIALS

NS = "project:corpus:0123456789abcdef"
FIXTURES = Path(__file__).parent / "fixtures"
# JSON-RPC carries UTF-8 text: a lone surrogate cannot be sent at all (the peer refuses it), so it is left out here.
PAYLOADS = [
    p for p in json.loads((FIXTURES / "injection_corpus.json").read_text())["payloads"]
    if not re.search("[\ud800-\udfff]", p)
]
SECRETS = json.loads((FIXTURES / "secrets_corpus.json").read_text())["secrets"]
# Long and specific enough that finding one in an output or a file means it was kept.
LONG_SECRETS = sorted({e["secret"] for e in SECRETS if len(e["secret"]) >= 7 and not e["secret"].isdigit()}
                      | {secret for _, secret, _ in PROSE_CREDENTIALS if len(secret) >= 7})
# DSH's recorded results whose text fields carry a payload in the sink test (a bash call, a file read, a search, an
# edit, a background job's output, a write).
DSH_SCENARIOS = ("bash-success", "read", "grep", "edit", "job_output", "write")
_TEXT_KEYS = frozenset({"text", "line", "before", "after", "content", "command", "file_path", "pattern", "label"})
_HEADING = re.compile(r"\[(?:blk|evt|nod)_\d+(?: · [^\[\]\n]+)*\]")
_TITLES = (
    "Long-term memory relevant to this step (events):",
    "Knowledge graph, current state (facts held today; disputed ones marked):",
    "Recent blocks from other sessions (newest first):",
    "Earlier blocks of this session (oldest first):",
)


def session_name(i: int, payload: str) -> str:
    """A session key holding the payload (keys may not contain control characters: those are dropped)."""
    return f"s{i} " + re.sub(r"[\x00-\x1f\x7f]", " ", payload)[:200]


def node_name(payload: str) -> str:
    return payload.strip()[:120] or "empty"


async def load(client: SidecarClient, payloads: list[str], extras: list[dict[str, Any]] | None = None) -> list[str]:
    """Every payload in every storage path; returns the sealed blocks once all are summarised."""
    sealed: list[str] = []
    for i, payload in enumerate(payloads):
        extra = (extras or [{}] * len(payloads))[i]
        res = await client.call("turn.capture", turn(
            i, namespace=NS, session=session_name(i, payload), user=f"topic{i} question: {payload}",
            assistant=f"topic{i} answer: {payload}",
            tools=[{"name": "bash", "call_id": f"c{i}",
                    "arguments": {"cmd": f"echo topic{i} {payload}", **extra.get("arguments", {})},
                    "result": {"stdout": f"topic{i} {payload}", "exit_code": 0, **extra.get("result", {})}}],
        ))
        sealed.extend(res["sealed_block_ids"])
        await client.tool(NS, session_name(i, payload), "memory_remember", {
            "text": f"topic{i} remembered: {payload}",
            "claims": [{"subject": node_name(payload), "subject_kind": "tool", "predicate": "version",
                        "value": f"topic{i} {payload[:200]}"}],
        })
    items = [{"memory": f"topic{i} imported: {p}"} for i, p in enumerate(payloads)]
    await client.call("import.run", {"namespace": NS, "text": json.dumps(items), "format": "mem0"})
    for block in sealed:  # every block summarised, so L0–L2 written from the payloads exist too
        await client.wait_notification(
            "jobs.changed", lambda p, b=block: p["kind"] == "block_summary" and p["subject"] == b
            and p["status"] == "done", timeout=60)
    return sealed


async def outputs(client: SidecarClient, payloads: list[str], sealed: list[str]) -> list[tuple[str, Any]]:
    """What the agent and the model are shown: activation for a viewer and for the payload's own session, and every
    retrieval tool. Each item is (what, value)."""
    out: list[tuple[str, Any]] = []
    for i, payload in enumerate(payloads):
        query = f"topic{i} {payload}"
        own = session_name(i, payload)
        for session in (f"viewer {i}", own):
            out.append(("activation", await client.call(
                "activation.render", {"namespace": NS, "session": session, "query": query})))
        raw = await client.tool(NS, own, "memory_search_raw", {"query": f"topic{i}"})
        assert raw["hits"], f"topic{i} not found: {raw}"
        out.append(("memory_search_raw", raw))
        events = await client.tool(NS, own, "memory_search_events", {"query": f"topic{i}"})
        assert events["hits"], f"no event for topic{i}"
        out.append(("memory_search_events", events))
        for hit in events["hits"][:2]:
            out.append(("memory_expand_event", await client.tool(NS, own, "memory_expand_event", {"id": hit["id"]})))
        graph = await client.tool(NS, own, "memory_search_graph", {"query": node_name(payload)})
        out.append(("memory_search_graph", graph))
        for node in graph.get("hits", [])[:2]:
            out.append(("memory_expand_graph_node",
                        await client.tool(NS, own, "memory_expand_graph_node", {"node": node["id"]})))
        out.append(("memory_get_blocks", await client.tool(NS, own, "memory_get_blocks", {})))
    for block in sealed:
        for level in range(6):
            out.append(("memory_expand_block",
                        await client.tool(NS, "viewer", "memory_expand_block", {"id": block, "level": level})))
    return out


@pytest.fixture
async def loaded(tmp_path: Path, model_server: ScriptedModelServer) -> AsyncIterator[tuple[SidecarClient, list[str]]]:
    client = await SidecarClient.start(tmp_path / "memory.db", env=model_env(model_server), args=["--block-turns", "1"])
    try:
        yield client, await load(client, PAYLOADS)
    finally:
        await client.close()


def check_activation(text: str) -> None:
    lines = text.split("\n")
    assert lines[0] == "<stratagate-memory>" and lines[-1] == "</stratagate-memory>"
    assert text.count("<stratagate-memory>") == 1 and text.count("</stratagate-memory>") == 1
    header = lines[1]
    for line in lines[2:-1]:
        assert line == "" or line in _TITLES or line.startswith("│") or _HEADING.fullmatch(line), repr(line)
    body = "\n".join(lines[1:-1])
    check_inert(body)
    assert header.startswith("Background evidence recalled")


async def test_every_payload_is_inert_in_every_output(loaded: tuple[SidecarClient, list[str]],
                                                      model_server: ScriptedModelServer):
    client, sealed = loaded
    assert len(PAYLOADS) >= 40
    strings = 0
    shown: dict[str, set[str]] = {"events": set(), "nodes": set(), "blocks": set()}
    for what, value in await outputs(client, PAYLOADS, sealed):
        if what == "activation":
            if value["text"]:
                check_activation(value["text"])
            for key, ids_key in (("events", "event_ids"), ("nodes", "node_ids"), ("blocks", "block_ids")):
                shown[key].update(value[ids_key])
        else:
            strings += check_tree(value)
    # Recall really did show the payloads: events, nodes and other sessions' blocks made it into activation.
    assert shown["events"] and shown["nodes"] and shown["blocks"]
    assert strings > 1000

    # Tool errors reach the model too: one that echoes its bad input shows it inert.
    for payload in PAYLOADS[:12]:
        with pytest.raises(RpcFailure) as err:
            await client.tool(NS, "viewer", "memory_expand_event", {"id": payload[:60]})
        check_inert(err.value.message)

    requests = model_server.requests
    assert len(requests) >= len(sealed)
    for body in requests:
        check_tree(json.loads(body["messages"][-1]["content"]))


def dsh_record(i: int, payload: str) -> dict[str, Any]:
    """A tool record in the shape the real DSH gives it (its recorded arguments and structured result), each text
    field of which also carries the payload."""
    doc = json.loads((FIXTURES / "dsh" / "tools" / f"{DSH_SCENARIOS[i % len(DSH_SCENARIOS)]}.json").read_text())

    def carry(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: carry(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [carry(v, key) for v in value]
        return f"{value}\ntopic{i} {payload}" if isinstance(value, str) and key in _TEXT_KEYS else value

    hook = doc["tools_result"]
    return {"name": hook["exec"]["name"], "call_id": f"dsh{i}", "arguments": carry(hook["exec"]["arguments"]),
            "result": carry(hook["result"]["value"])}


async def land_cards(client: SidecarClient, payloads: list[str]) -> list[tuple[str, Any]]:
    """A session whose tool outputs hold the payloads, planned by the context engine until cards land in the context
    archive (applied as the shim does, then context.landed); returns what decompress and search_context show."""
    b = SurfaceBuilder()
    per_turn = 4
    turns = -(-len(payloads) // per_turn)
    for t in range(1, turns + 1):
        b.user(f"Turn {t}: {payloads[(t - 1) % len(payloads)]}")
        for r, payload in enumerate(payloads[(t - 1) * per_turn:t * per_turn]):
            call_id = f"call_{t}_{r}"
            b.assistant(t, r + 1, f"Step {r + 1}.", [(call_id, "bash", {"command": f"cat notes-{t}-{r}.txt"})])
            filler = "\n".join(f"line {k}: ordinary output of the check number {k}" for k in range(120))
            b.result(t, r + 1, call_id, f"{filler}\nnote {t}-{r}: {payload}\nexit code: 0")
        if t < turns:
            b.assistant(t, per_turn + 1, f"Turn {t} done.")
    await client.call("context.settings.set", {"settings": {"old_rounds_budget": 0}})
    plan = await client.call("context.plan", plan_params(b.events, window=24_000, turn=turns, namespace=NS,
                                                         session="context"))
    assert {op["kind"] for op in plan["ops"]} >= {"card"}, plan["decision"]
    _, landed = apply_ops(b.events, plan["ops"], b.seq)
    await client.call("context.landed", {"namespace": NS, "session": "context", "ops": landed})
    shown: list[tuple[str, Any]] = [("context.plan", plan)]
    for op in plan["ops"]:  # each landed card, fold or block, one tier down and back to the originals
        for full in (False, True):
            restored = await client.tool(NS, "context", "decompress", {"id": op["ref"], "full": full})
            shown.append(("decompress", restored))
    for payload in payloads[:8]:
        shown.append(("search_context", await client.tool(NS, "context", "search_context", {"query": payload[:40]})))
    return shown


async def page_reads(client: SidecarClient, sessions: list[str], sealed: list[str]) -> list[tuple[str, Any]]:
    """What the Memory page's read routes answer (the same methods its HTTP routes bind)."""
    shown: list[tuple[str, Any]] = [("page.overview", await client.call("page.overview", {}))]
    for method in ("page.sessions.list", "page.events.list", "page.audit", "page.evidence", "page.imports.list"):
        shown.append((method, await client.call(method, {"namespace": NS})))
    shown.append(("page.export", await client.call("page.export", {"namespace": NS, "format": "markdown"})))
    for session in sessions:
        shown.append(("page.blocks.list", await client.call("page.blocks.list", {"namespace": NS, "session": session})))
    messages: set[str] = set()
    for block in sealed:
        for level in range(6):
            view = await client.call("page.blocks.view", {"namespace": NS, "id": block, "level": level})
            messages.update(re.findall(r"msg_\d+", json.dumps(view)))
            shown.append(("page.blocks.view", view))
    assert messages, "the block views name their messages"
    for message in sorted(messages):
        shown.append(("page.messages.get", await client.call("page.messages.get", {"namespace": NS, "id": message})))
    return shown


def _memory_files(folder: Path) -> list[Path]:
    """Every file of the database: memory.db, its -wal and -shm, and the files of its derived search index."""
    return sorted(p for p in folder.glob("memory.db*/**/*") if p.is_file()) + sorted(
        p for p in folder.glob("memory.db*") if p.is_file()
    )


def _forms(secret: str) -> set[str]:
    """A secret as it would sit in a file: itself, JSON-escaped, and each line of a multi-line one (PEM bodies)."""
    forms = {secret, json.dumps(secret)[1:-1]}
    forms.update(line for line in secret.splitlines() if len(line) >= 12 and not line.startswith("-----"))
    return forms


async def test_no_secret_is_stored_shown_sent_or_logged(tmp_path: Path, model_server: ScriptedModelServer):
    db = tmp_path / "memory.db"
    env = model_env(model_server, STRATAGATE_LOG_LEVEL="DEBUG")
    client = await SidecarClient.start(db, env=env, args=["--block-turns", "1"])
    payloads = [e["prose"] for e in SECRETS] + [text for text, _, _ in PROSE_CREDENTIALS]
    extras = [{"arguments": {"env": {"SERVICE_CREDENTIAL": e["secret"]}, "value": e["secret"] if e["bare"] else ""},
               "result": {"config": e["json"]}} for e in SECRETS] + [{} for _ in PROSE_CREDENTIALS]
    running: list[tuple[str, bytes]] = []
    try:
        sealed = await load(client, payloads, extras)
        # The same secrets in DSH's own result shapes: a turn of them, sealed and summarised like the others.
        res = await client.call("turn.capture", turn(
            len(payloads), namespace=NS, session="dsh shapes", user="dsh shapes: " + " ".join(payloads[:3]),
            assistant="done", tools=[dsh_record(i, p) for i, p in enumerate(payloads)]))
        for block in res["sealed_block_ids"]:
            await client.wait_notification(
                "jobs.changed", lambda p, b=block: p["kind"] == "block_summary" and p["subject"] == b
                and p["status"] == "done", timeout=60)
        sealed += res["sealed_block_ids"]
        shown = await outputs(client, payloads, sealed)
        # A search by the secret itself finds nothing that shows it.
        for e in SECRETS[:10]:
            found = await client.tool(NS, "probe", "memory_search_raw", {"query": e["secret"]})
            shown.append(("memory_search_raw", found))
        shown += await land_cards(client, payloads)
        sessions = [session_name(i, p) for i, p in enumerate(payloads)] + ["dsh shapes", "context"]
        shown += await page_reads(client, sessions, sealed)
        await client.settled()
        # The files as they are while the sidecar runs: its -wal and -shm hold the latest writes, and the derived
        # search index (memory.db-search/) the same terms as the FTS tables.
        running = [(f"{p.name} (running)", p.read_bytes()) for p in _memory_files(tmp_path)]
    finally:
        await client.close()
    assert {name for name, _ in running} >= {"memory.db (running)", "memory.db-wal (running)"}
    with sqlite3.connect(db) as conn:
        archive = [(f"{table} row", json.dumps(row, ensure_ascii=False, default=str))
                   for table in ("context_nodes", "context_layers", "context_sessions")
                   for row in conn.execute(f"SELECT * FROM {table}")]
    assert any(name == "context_layers row" for name, _ in archive), "cards landed in the context archive"
    texts = [(what, json.dumps(value, ensure_ascii=False)) for what, value in shown] + archive
    texts += [(f"model request {i}", json.dumps(b, ensure_ascii=False)) for i, b in enumerate(model_server.requests)]
    texts.append(("DEBUG log", "".join(client.stderr_lines)))
    assert "DEBUG" in texts[-1][1]
    files = _memory_files(tmp_path)
    assert files
    blobs = [(p.name, p.read_bytes()) for p in files] + running
    leaks = []
    for secret in LONG_SECRETS:
        for form in _forms(secret):
            leaks += [f"{what}: {form[:24]}…" for what, text in texts if form in text]
            leaks += [f"{name}: {form[:24]}…" for name, blob in blobs if form.encode() in blob]
    assert leaks == [], "\n".join(leaks)
    # The placeholders are there instead, typed by kind, in every kind of sink; a restore says how many it holds.
    for sink in ("decompress", "search_context", "page.messages.get", "page.blocks.view", "memory_expand_block",
                 "activation", "context_layers row", "context_nodes row"):
        assert any(what == sink and "[secret:" in text for what, text in texts), f"no placeholder in {sink}"
    assert any("[secret:" in json.dumps(body) for body in model_server.requests), "the model saw placeholders"
    for what, value in shown:
        if what == "decompress" and not value["truncated"]:
            assert value["placeholders"] == placeholder_count(value["text"])
            assert ("redacted" in value["note"]) == (value["placeholders"] > 0), value["note"]
