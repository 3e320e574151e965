"""Seed a Memory page database THROUGH JSON-RPC (a real `stratagate serve`, as the shim drives it) and print a JSON
manifest of the ids the browser tests look for.

    python tests/browser/seed.py --db /tmp/x/memory.db

What it writes, in namespace ``NS`` (and one turn in ``OTHER``):
- session s1, zero-model rules (no model route): "We use npm for packages." (2026-04-01) then "Let's switch to pnpm,
  npm is too slow." (2026-05-04): the rules admit a fact and a change that supersedes it, and the graph's project
  uses npm until the change and pnpm from it (an as-of date in between shows npm);
- "We use Jest for tests." then "We don't use Jest.": a disputed pair;
- an import (Markdown, project scope);
- a retrieval batch in session s2 assessed with memory_assess and a memory_record_use receipt citing the pnpm event;
- session s3 with a direct model route to a scripted server (flaky_model.py) whose summaries answer HTTP 500 and
  job_max_attempts 1: its block's summary job FAILS (the rules write its fallback views; extraction finds nothing).
  A start re-queues such a job (the upgrade), so whoever opens this database with a model route that fails once
  more sees it failed again.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))
sys.path.insert(0, str(TESTS / "browser"))

from flaky_model import FlakyModel  # noqa: E402

from support.model_server import ScriptedModelServer  # noqa: E402
from support.sidecar import SidecarClient  # noqa: E402

NS = "project:shop:0123456789abcdef"
OTHER = "project:docs:fedcba9876543210"
NPM = "We use npm for packages."
PNPM = "Let's switch to pnpm, npm is too slow."
JEST = "We use Jest for tests."
NO_JEST = "We don't use Jest."
IMPORT_TEXT = "# Team notes\n\n- Deploys go out on Fridays.\n- The staging server runs Postgres 16.\n"
FAILING_TURN = "Please draft the release checklist for the next version."
# No maintenance pass (its consolidation and re-queues would make what is seeded depend on how long seeding takes).
QUIET = {"STRATAGATE_DENSE": "off", "STRATAGATE_MAINTENANCE_INTERVAL_HOURS": "0"}
ZERO_MODEL = {"STRATAGATE_MODEL_ROUTE": "none", **QUIET}


def turn(seq: int, session: str, user: str, assistant: str, day: str, namespace: str = NS) -> dict[str, Any]:
    return {
        "namespace": namespace,
        "session": session,
        "receipt": f"dsh:{session}:turn:{seq}",
        "user": user,
        "assistant": assistant,
        "started_at": f"{day}T09:00:00Z",
        "ended_at": f"{day}T09:00:30Z",
        "end_reason": "stop",
    }


async def converse(client: SidecarClient, turns: list[dict[str, Any]], failed: bool = False) -> None:
    """One turn (= one block) at a time, its jobs settled before the next: a later block sees the earlier events."""
    for params in turns:
        await client.call("turn.capture", params)
        await client.settled(failed=failed)


async def events_by_quote(client: SidecarClient) -> dict[str, dict[str, Any]]:
    hits = (await client.tool(NS, "s1", "memory_search_events", {"include_inactive": True, "limit": 20}))["hits"]
    out = {}
    for hit in hits:
        full = await client.tool(NS, "s1", "memory_expand_event", {"id": hit["id"]})
        out[full["quotes"][0]] = full
    return out


async def seed_rules(db: Path) -> dict[str, Any]:
    client = await SidecarClient.start(db, env=ZERO_MODEL, args=["--block-turns", "1"])
    try:
        await converse(client, [
            turn(1, "s1", NPM, "Noted: the repo uses npm.", "2026-04-01"),
            turn(2, "s1", PNPM, "Okay, I'll switch to pnpm and update the lockfile.", "2026-05-04"),
            turn(3, "s1", JEST, "Good, Jest it is.", "2026-05-05"),
            turn(4, "s1", NO_JEST, "Understood.", "2026-05-06"),
            turn(1, "d1", "The docs site is built with Hugo.", "Noted.", "2026-05-02", namespace=OTHER),
        ])
        found = await events_by_quote(client)
        npm, pnpm, jest, no_jest = (found[q] for q in (NPM, PNPM, JEST, NO_JEST))
        assert (npm["status"], npm["successor_id"], pnpm["status"]) == ("superseded", pnpm["id"], "active"), found
        assert (jest["status"], no_jest["status"]) == ("disputed", "disputed"), found

        report = await client.call("import.run", {
            "namespace": NS, "text": IMPORT_TEXT, "format": "markdown", "source_name": "team-notes.md",
            "scope": "project",
        })
        await client.settled()

        # The evidence a later answer relied on: a retrieval batch, its assessment, the use receipt.
        batch = await client.tool(NS, "s2", "memory_search_events", {"query": "package manager pnpm"})
        assert pnpm["id"] in batch["evidence_refs"], batch
        assessment = await client.tool(NS, "s2", "memory_assess", {
            "batch_id": batch["batch_id"], "verdict": "sufficient", "evidence_refs": [pnpm["id"]],
            "fit": "It names the package manager in use.", "missing": "", "next_strategy": "answer",
        })
        receipt = await client.tool(NS, "s2", "memory_record_use", {
            "batch_id": batch["batch_id"], "evidence_refs": [pnpm["id"]],
        })
        await client.settled()
        return {
            "events": {"npm": npm["id"], "pnpm": pnpm["id"], "jest": jest["id"], "no_jest": no_jest["id"]},
            "sources": {key: ev["sources"] for key, ev in (("npm", npm), ("pnpm", pnpm))},
            "import": report.get("import_id") or report.get("id"),
            "batch": batch["batch_id"],
            "assessment": assessment.get("verdict"),
            "receipt": receipt,
        }
    finally:
        await client.close()


async def seed_failed_job(db: Path) -> dict[str, Any]:
    with ScriptedModelServer() as server:
        server.default = FlakyModel(None)  # every summary fails; extraction finds nothing
        env = {
            "STRATAGATE_MODEL_BASE_URL": server.base_url,
            "STRATAGATE_MODEL": "scripted-model",
            "STRATAGATE_MODEL_TIMEOUT": "10",
            "STRATAGATE_JOB_MAX_ATTEMPTS": "1",
            **QUIET,
        }
        client = await SidecarClient.start(db, env=env, args=["--block-turns", "1"])
        try:
            await converse(client, [turn(1, "s3", FAILING_TURN, "Sure, here is a draft.", "2026-05-07")], failed=True)
            failed = (await client.call("jobs.list", {"namespace": NS, "status": "failed"}))["jobs"]
        finally:
            await client.close()
    assert len(failed) == 1 and failed[0]["kind"] == "block_summary", failed
    return {"failed_job": failed[0]["id"], "failed_block": failed[0]["subject"]}


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True)
    args = parser.parse_args()
    args.db.parent.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {"db": str(args.db), "namespace": NS, "other_namespace": OTHER}
    manifest |= await seed_rules(args.db)
    manifest |= await seed_failed_job(args.db)
    manifest["quotes"] = {"npm": NPM, "pnpm": PNPM, "jest": JEST, "no_jest": NO_JEST}
    # Between the npm fact (no start: true since before memory knew) and the change (said on 2026-05-04).
    manifest["as_of_before"] = "2026-04-15"
    print(json.dumps(manifest, ensure_ascii=False), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
