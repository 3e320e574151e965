"""Every public id the sidecar shows parses with ``ids.parse``: ids of its own rows, job subjects included."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

from stratagate import ids
from stratagate.jobs import pipeline, queue
from stratagate.storage.db import Database
from stratagate.storage.lookup import ensure_namespace

PACKAGE = Path(__file__).resolve().parents[1] / "sidecar" / "stratagate"


def made_prefixes() -> dict[str, str]:
    """prefix → where: every literal prefix given to ``ids.make`` and every ``f"xyz_{key}"`` id, in the package."""
    found: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            where = f"{path.relative_to(PACKAGE)}:{getattr(node, 'lineno', 0)}"
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "make"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "ids"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                found.setdefault(str(node.args[0].value), where)
            elif isinstance(node, ast.JoinedStr) and len(node.values) == 2:
                head, key = node.values
                if (
                    isinstance(head, ast.Constant)
                    and isinstance(head.value, str)
                    and head.value.endswith("_")
                    and head.value[:-1].isalpha()
                    and head.value.islower()
                    and isinstance(key, ast.FormattedValue)
                ):
                    found.setdefault(head.value[:-1], where)
    return found


def test_every_prefix_the_code_makes_is_known():
    made = made_prefixes()
    assert {"evt", "blk", "msg", "job"} <= made.keys()  # the scan sees the ids it should
    unknown = {prefix: where for prefix, where in made.items() if prefix not in ids.PREFIXES}
    assert not unknown, f"ids made with prefixes ids.PREFIXES does not list (ids.parse cannot read them): {unknown}"


def test_every_job_subject_prefix_is_known():
    prefixes = {stage.subject_prefix for stage in pipeline.STAGES} | {pipeline.subject_prefix("no-such-kind")}
    assert prefixes <= ids.PREFIXES.keys()


def test_every_id_jobs_list_returns_parses(tmp_path: Path):
    async def listed() -> list[dict[str, object]]:
        db = Database(tmp_path / "memory.db")
        await db.open()
        try:
            async with db.transaction() as conn:
                ns = await ensure_namespace(conn, "proj")
                for n, kind in enumerate([stage.kind for stage in pipeline.STAGES] + ["retired-kind"], start=1):
                    await queue.enqueue(conn, ns, kind, n * 7)
            return [row.public() for row in await queue.list_jobs(db, None, None, 100)]
        finally:
            await db.close()

    jobs = asyncio.run(listed())
    assert len(jobs) == len(pipeline.STAGES) + 1
    for job in jobs:
        assert ids.parse(job["id"], "job") is not None, job
        prefix, _, key = str(job["subject"]).partition("_")
        assert ids.parse(job["subject"], prefix) == int(key), job
