"""The memory as a Cordis service inside the real DeepSeek Harness: a second plugin that injects
``crossSessionMemory`` (dsh-memory-connect's service name; StrataGate provides it, and ``stratagateMemory``)
stores a memory, finds it with ``searchMemories``, ``getStats`` counts it, and the main agent recalls it.

``memory-client-plugin.mjs`` (loaded with ``--patch``) calls the service as turn 1 of a headless session closes
and queues turn 2, whose first model request must carry the stored memory in StrataGate's runtime context.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stratagate.namespaces import ResolveParams, resolve
from support.dsh import DshHome
from support.dsh_model import content_text, is_agent_request, is_injected, is_runtime_context, messages
from support.model_server import ScriptedModelServer

E2E_DIR = Path(__file__).resolve().parent
CLIENT_PLUGIN = E2E_DIR / "memory-client-plugin.mjs"
PATIENT_RECALL = "- id: stratagate\n  config:\n    activationTimeoutMs: 60000\n"  # as test_e2e_step_zero_recall.py

MEMORY = {"type": "decision", "content": "Decision: the billing service deploys only on Tuesdays.", "tags": ["deploy"]}
QUERY = "billing service deploys"
FOLLOWUP = "On which weekday does the billing service deploy?"


def newest_prompt(body: dict[str, Any]) -> str:
    for m in reversed(messages(body)):
        if m.get("role") == "user" and not is_injected(m):
            return content_text(m.get("content"))
    return ""


def runtime_context(body: dict[str, Any]) -> str:
    snapshots = [content_text(m.get("content")) for m in messages(body) if is_runtime_context(m)]
    return snapshots[-1] if snapshots else ""


def test_a_second_plugin_stores_finds_and_counts_a_memory_and_the_agent_recalls_it(
    stratagate: DshHome, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    work = tmp_path / "billing"
    out = stratagate.logs / "memory-client.jsonl"
    config = {"memory": MEMORY, "query": QUERY, "followup": FOLLOWUP, "out": str(out)}
    patch = stratagate.logs / "memory-client.patch.yml"
    patch.write_text(
        "- insert:\n"
        "    - id: e2e-memory-client\n"
        f"      name: {json.dumps(str(CLIENT_PLUGIN))}\n"
        f"      config: {json.dumps(config)}\n" + PATIENT_RECALL
    )

    run = stratagate.headless("Hello.", work, patches=[patch], requests=lambda: len(model_server.requests))

    assert run.returncode == 0, run.describe()
    assert out.exists(), f"the client plugin never ran (was crossSessionMemory injected?)\n{run.describe()}"
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert "thrown" not in record, record.get("thrown")
    stored = record["stored"]
    namespace = resolve(ResolveParams(mode="project", cwd=str(work)))["namespace"]
    assert stored["content"] == MEMORY["content"] and stored["type"] == "decision" and stored["status"] == "active"
    assert stored["sessionId"] == record["sessionId"] and stored["provenance"]["namespace"] == namespace
    assert [m["id"] for m in record["found"]] == [stored["id"]], record["found"]
    assert record["stats"]["namespace"] == namespace
    assert record["stats"]["totalMemories"] >= 1 and record["stats"]["byType"].get("decision") == 1, record["stats"]
    assert {"sessionId": record["sessionId"], "count": 1} in record["stats"]["topSessions"]
    assert [m["id"] for m in record["recalled"]] == [stored["id"]]
    assert record["got"]["id"] == stored["id"] and record["got"]["tags"] == ["deploy"]
    assert "type: Input should be 'decision'" in (record["refused"] or ""), record["refused"]

    first, last = run.request_range
    turn2 = [b for b in model_server.requests[first:last] if is_agent_request(b) and newest_prompt(b) == FOLLOWUP]
    assert turn2, f"no agent request for the follow-up turn\n{run.describe()}"
    context = runtime_context(turn2[0])
    assert f"[{stored['id']} ·" in context and "Tuesdays" in context, (
        f"turn 2's first request does not recall {stored['id']}:\n{context}"
    )
