"""Erase in the context engine's archive (``context_nodes``, ``context_layers``, context/archive.py).

The archive holds what the model saw, and what replaced it: a node that held the erased text, and every card, fold,
digest or block layer built from such a node, could repeat it in other words. Rows are kept (refs, turn positions and
``replaces`` links stay valid) and their text becomes ``ERASED_ARCHIVE``, as erased messages become ``[erased]``:

- a node whose text or tool call arguments hold an erased string or distinctive word (erase/words.py);
- a layer whose text or topic holds one, that belongs to a re-summarised block, that covers a blanked node or that
  has a blanked child; then the node that replaced it in the surface (its ``replacement_seq``), which holds the
  same text; repeated until nothing more changes.

``decompress`` of a blanked node or layer says the text was erased (context/restore.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from stratagate.erase.scrubber import ERASED, ERASED_ARCHIVE, Scrubber
from stratagate.storage.sqlite import Connection


async def _holding_nodes(conn: Connection, ns: int, scrub: Scrubber) -> set[tuple[int, int]]:
    found: set[tuple[int, int]] = set()
    for needle in scrub.needles():
        rows = await conn.execute_fetchall(
            "SELECT session_id, seq, text, calls FROM context_nodes WHERE namespace_id = ? AND text != ?"
            " AND (instr(lower(text), lower(?)) > 0 OR instr(lower(calls), lower(?)) > 0)",
            (ns, ERASED_ARCHIVE, needle, needle),
        )
        found.update((int(r["session_id"]), int(r["seq"])) for r in rows if scrub.holds(r["text"] + r["calls"]))
    return found


async def _blank_node(conn: Connection, session_id: int, seq: int) -> None:
    row = await (await conn.execute(
        "SELECT calls FROM context_nodes WHERE session_id = ? AND seq = ?", (session_id, seq)
    )).fetchone()
    if row is None:
        return
    calls = [{**c, "arguments": ERASED} for c in json.loads(row["calls"] or "[]")]
    await conn.execute(
        "UPDATE context_nodes SET text = ?, calls = ? WHERE session_id = ? AND seq = ?",
        (ERASED_ARCHIVE, json.dumps(calls, ensure_ascii=False), session_id, seq),
    )


async def blank_archive(conn: Connection, ns: int, scrub: Scrubber, block_ids: Iterable[int]) -> dict[str, int]:
    """Blank the namespace's archived nodes and layers that hold or were built from the erased text."""
    blocks = set(block_ids)
    nodes = await _holding_nodes(conn, ns, scrub)
    for session_id, seq in nodes:
        await _blank_node(conn, session_id, seq)
    rows = await conn.execute_fetchall(
        "SELECT id, session_id, ref, topic, text, covers, children, block_id, replacement_seq FROM context_layers"
        " WHERE namespace_id = ? AND text != ?",
        (ns, ERASED_ARCHIVE),
    )
    pending = {int(r["id"]): r for r in rows}
    blanked: set[tuple[int, str]] = set()
    changed = True
    while changed:  # a fold over a blanked card, the node that replaced a blanked layer …
        changed = False
        for layer_id, r in list(pending.items()):
            session_id = int(r["session_id"])
            covers = {(session_id, int(s)) for s in json.loads(r["covers"] or "[]")}
            children = {(session_id, str(c)) for c in json.loads(r["children"] or "[]")}
            if not (
                scrub.holds(r["text"]) or scrub.holds(r["topic"]) or r["block_id"] in blocks
                or covers & nodes or children & blanked
            ):
                continue
            del pending[layer_id]
            changed = True
            blanked.add((session_id, str(r["ref"])))
            await conn.execute(
                "UPDATE context_layers SET text = ?, topic = CASE WHEN topic IS NULL THEN NULL ELSE ? END"
                " WHERE id = ?",
                (ERASED_ARCHIVE, ERASED, layer_id),
            )
            if r["replacement_seq"] is not None and (session_id, int(r["replacement_seq"])) not in nodes:
                nodes.add((session_id, int(r["replacement_seq"])))
                await _blank_node(conn, session_id, int(r["replacement_seq"]))
    return {"archive_nodes": len(nodes), "archive_layers": len(blanked)}
