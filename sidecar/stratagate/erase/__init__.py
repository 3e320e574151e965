"""Erase: remove a memory's text and every stored copy of it, for good (``memory_forget erase=true``,
``memory.erase``, ``stratagate erase``).

Forgetting hides; erasing rewrites. This is the one operation allowed to change captured messages (the other being
``stratagate redact``): it runs in one transaction that opens the privileged-write window of migration 6
(``privileged_writes``), so the immutability triggers let exactly this rewrite through, and closes it before commit.
A failure anywhere rolls everything back.

Erasing an event ``evt_N``:

- the event: title, summary and narrative become ``[erased]``; tags, quotes, participants and claims ``[]``; the
  time wording is dropped. It stays ``forgotten`` (an ``erasures`` row marks it erased: it can never be restored)
  and keeps its fingerprint, a hash, as the tombstone that refuses a restatement;
- its ``event_sources`` quotes, its ``event_fts`` row and its vectors;
- the messages it came from (its source messages, the tool message of the ``memory_remember`` call, and every
  message of the namespace that restates it, as events/forgotten.py decides): content, tool arguments and tool
  results become ``[erased]``, their ``message_fts`` rows and vectors are deleted. Messages are *blanked, not
  deleted*: captured messages are otherwise never changed nor deleted, and keeping the row keeps turn positions,
  block boundaries, provenance rows and evidence references valid, and shows in L5 where something was erased;
- its *distinctive words* (erase/words.py: the words of the event's texts, quotes and what its source messages
  said that are no stopword, frequent word, short number or lexicon name, held by no other event and by at most a
  few other messages of the namespace, so a widely used word never blanks everything that says it): every tool
  record holding one is blanked like the messages above (an agent's ``cat`` or ``grep`` that printed the fact); a
  user or assistant message holding one has each such word replaced by ``[erased]`` (the rest of it stays);
- the blocks holding any of those messages, or whose stored views hold the text or a word: L5/L4/L3 re-rendered
  from the remaining messages, L0–L2 cleared, the block set back to ``pending`` and its ``block_summary`` job
  re-queued so the model summarises what is left; the title, tags and summaries in the block's audit rows
  (``block.summarized`` …) become ``[erased]`` (a summary may say the fact in words no string match finds);
- the context archive (erase/archive.py): archived nodes and cards, folds, digests and block layers that hold the
  text or a word, or were built from a blanked node or a re-summarised block, keep their rows with their text
  replaced by an ``[erased: …]`` line (``decompress`` says so);
- an import's source text: the item's wording is cut out of ``imports.source_text`` and the SHA-256 recomputed;
- graph facts it alone supported (already archived by the forget) lose their value, and nodes that only it named
  (not the project, the user or a lexicon name) are renamed ``[erased nod_N]`` with their aliases removed;
- the duplicates maintenance merged into it (open merges, stratagate/maintenance/): each is erased the same way;
- every other copy of the text, and each distinctive word, in audit rows, retrieval batches, evidence
  assessments, use receipts, import reports, projection results, job errors and the context engine's session state
  is replaced by ``[erased]``.

It leaves a content-free audit entry (``event.erased``), an ``erasures`` row and the tombstone. Erasing a message
``msg_N`` runs the same cascade for that one message (its distinctive words from its content), without an event.

Deleted bytes must not linger in the file: the transaction runs with ``PRAGMA secure_delete = ON`` (freed cells and
pages are zeroed), the full-text indexes are merged (``optimize``: old segments holding the terms are freed), and
after the commit ``VACUUM`` rewrites the file (copies left in free space by earlier ordinary updates go too) and
``wal_checkpoint(TRUNCATE)`` empties the write-ahead log. Erase therefore costs a rewrite of the whole database.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from stratagate import ids
from stratagate.blocks.render import seal_views
from stratagate.blocks.source import ROW_COLUMNS, from_row
from stratagate.erase.archive import blank_archive
from stratagate.erase.scrubber import ERASED, ERASED_JSON, Scrubber, is_erased
from stratagate.erase.words import (
    blank_block_audits,
    distinctive_words,
    holding_blocks,
    holding_messages,
    scrub_message_words,
)
from stratagate.errors import Invalid, NotFound
from stratagate.events import forgotten as forgotten_mod
from stratagate.events import lexicon, store, team, visibility
from stratagate.events.models import EventRow
from stratagate.jobs.queue import BLOCK_SUMMARY, enqueue
from stratagate.maintenance.store import open_duplicates_of
from stratagate.storage import lookup
from stratagate.storage.db import Actor, Database, audit
from stratagate.storage.sqlite import Connection
from stratagate.text.terms import quote as fts_quote
from stratagate.timeutil import now_iso

# (table, key column, text columns) rewritten wherever an erased string occurs.
_SCRUBBED: list[tuple[str, str, tuple[str, ...]]] = [
    ("audit_log", "id", ("before", "after")),
    ("retrieval_batches", "id", ("query", "arguments")),
    ("evidence_assessments", "id", ("fit", "missing", "reason")),
    ("use_receipts", "id", ("result",)),
    ("imports", "id", ("report",)),
    ("graph_projection", "event_id", ("result",)),
    ("graph_batches", "id", ("reason",)),
    ("jobs", "id", ("last_error",)),
    ("context_sessions", "session_id", ("state",)),
]


async def erase_subject(
    db: Database,
    namespace: str,
    subject: str,
    actor: Actor,
    *,
    max_attempts: int,
    viewer_session: str | None = None,
    count: Any = None,
) -> dict[str, Any]:
    """Erase ``evt_N`` or ``msg_N`` of ``namespace``. With ``viewer_session`` (the agent's tool call) only an event
    that session may see can be erased. Returns what was removed (counts, no content)."""
    if count is None:
        from stratagate.tokens import count_tokens as count
    event_key = ids.parse(subject.strip(), "evt")
    message_key = ids.parse(subject.strip(), "msg") if event_key is None else None
    if event_key is None and message_key is None:
        raise Invalid(f"erase takes an event id ('evt_12') or a message id ('msg_40'), got {subject!r}")
    ref = ids.make("evt", event_key) if event_key is not None else ids.make("msg", message_key or 0)
    try:
        async with db.transaction() as conn:
            await conn.execute("PRAGMA secure_delete = ON")  # freed cells and pages are zeroed, not just unlinked
            ns_key = await lookup.namespace_key(conn, namespace)
            if ns_key is None:
                raise NotFound(f"unknown namespace {namespace!r}")
            ns = ns_key
            if await is_erased(conn, ns, ref):
                raise Invalid(f"{ref} is already erased")
            await conn.execute("INSERT INTO privileged_writes(operation, started_at) VALUES ('erase', ?)", (now_iso(),))
            if event_key is not None:
                result = await _erase_event(conn, ns, event_key, actor, viewer_session, max_attempts, count)
            else:
                result = await _erase_message(conn, ns, message_key or 0, actor, max_attempts, count)
            for table in ("message_fts", "event_fts", "graph_fts"):  # merge segments: old ones held the terms
                await conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
            await conn.execute("DELETE FROM privileged_writes")  # the window closes before the commit
        await db.compact_securely()
    finally:
        async with db.exclusive() as conn:
            await conn.execute("PRAGMA secure_delete = OFF")
    return result


async def _erase_event(
    conn: Connection, ns: int, key: int, actor: Actor, viewer: str | None, max_attempts: int, count: Any
) -> dict[str, Any]:
    ev = await store.get_event(conn, key)
    session_id = None
    if viewer is not None:
        session_id = await lookup.session_key(conn, ns, viewer)
    # Erase works in the event's own namespace (memory_forget passes a user-tier event's home namespace).
    if ev is None or ev.namespace_id != ns or (
        viewer is not None and not ev.visible_to(await visibility.viewer(conn, ns, session_id))
    ):
        raise NotFound(f"unknown event {ids.make('evt', key)}")
    if ev.status != "forgotten":  # forget first: tombstone, graph facts follow (archived), audited
        ev = await store.forget(conn, ev, actor, "erased")
    await team.erased_here(conn, ev, actor)  # a team memory's text goes from the team server too
    scrub = Scrubber()
    for text in [ev.title, ev.summary, ev.narrative, *ev.quotes, ev.time_original]:
        scrub.add(text)
    source_rows = list(await conn.execute_fetchall(
        "SELECT id, message_id, call_id, quote, import_id FROM event_sources WHERE event_id = ?", (ev.id,)
    ))
    for s in source_rows:
        scrub.add(s["quote"])
    forgotten = await forgotten_mod.load(conn, ns, None, event_ids=[ev.id])
    message_ids = {mid for mid in forgotten.sources}
    message_ids |= await _restating_messages(conn, ns, forgotten)
    counts: dict[str, Any] = {"sources": len(source_rows)}
    # Graph first: node names are read before they change.
    counts |= await _erase_graph(conn, ev, scrub)
    counts["imports"] = await _erase_imports(conn, ev, source_rows, scrub)
    await conn.execute(
        "UPDATE events SET title = ?, summary = ?, narrative = ?, tags = '[]', quotes = '[]', participants = '[]',"
        " claims = '[]', time_original = NULL, updated_at = ? WHERE id = ?",
        (ERASED, ERASED, ERASED, now_iso(), ev.id),
    )
    await conn.execute("UPDATE event_sources SET quote = ? WHERE event_id = ?", (ERASED, ev.id))
    await conn.execute("DELETE FROM event_fts WHERE rowid = ?", (ev.id,))
    await conn.execute("DELETE FROM embeddings WHERE kind = 'event' AND item_id = ?", (ev.id,))
    # Duplicates maintenance merged into it hold the same words: they are copies of this memory, erased with it.
    duplicates = [
        d for d in await open_duplicates_of(conn, ev.id) if not await is_erased(conn, ns, ids.make("evt", d))
    ]
    said = [await _said(conn, ns, mid) for mid in sorted(forgotten.sources)]
    words = await distinctive_words(
        conn, ns, [*scrub.texts, *said], message_ids, {ev.id, *duplicates}
    )
    counts |= await _erase_everywhere(conn, ns, message_ids, words, scrub, max_attempts, count)
    for duplicate in duplicates:
        await _erase_event(conn, ns, duplicate, actor, None, max_attempts, count)
    if duplicates:
        counts["merged_duplicates"] = [ids.make("evt", d) for d in duplicates]
    return await _record(conn, ns, "event", ev.public_id, ev.fingerprint, actor, counts)


async def _erase_message(
    conn: Connection, ns: int, key: int, actor: Actor, max_attempts: int, count: Any
) -> dict[str, Any]:
    row = await (
        await conn.execute(
            "SELECT id, role, content, tool_name, tool_arguments, tool_result FROM messages"
            " WHERE id = ? AND namespace_id = ?",
            (key, ns),
        )
    ).fetchone()
    if row is None:
        raise NotFound(f"unknown message {ids.make('msg', key)}")
    text = forgotten_mod.message_text(
        row["role"], row["content"], row["tool_name"], row["tool_arguments"], row["tool_result"]
    )
    scrub = Scrubber()
    scrub.add(row["content"])
    words = await distinctive_words(conn, ns, [row["content"]], {key}, set())
    counts = await _erase_everywhere(conn, ns, {key}, words, scrub, max_attempts, count)
    return await _record(conn, ns, "message", ids.make("msg", key), store.fingerprint(text), actor, counts)


async def _record(
    conn: Connection, ns: int, kind: str, ref: str, fp: str, actor: Actor, counts: dict[str, Any]
) -> dict[str, Any]:
    stamp = now_iso()
    await conn.execute(
        "INSERT INTO erasures(namespace_id, subject_type, subject_id, fingerprint, actor, counts, erased_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (ns, kind, ref, fp, actor, json.dumps(counts, sort_keys=True), stamp),
    )
    await audit(conn, ns, actor, f"{kind}.erased", kind, ref, None, {"erased_at": stamp, "counts": counts})
    return {"id": ref, "erased": True, "erased_at": stamp, "counts": counts,
            "note": "erased for good: the text is gone from every stored copy; this cannot be undone"}


async def _restating_messages(conn: Connection, ns: int, forgotten: forgotten_mod.Forgotten) -> set[int]:
    """Messages of the namespace that restate the event (all of a statement's terms via FTS, then checked)."""
    found: set[int] = set()
    for st in forgotten.statements:
        match = " ".join(fts_quote(t) for t in dict.fromkeys(st.seq))
        rows = await conn.execute_fetchall(
            "SELECT m.id, m.role, m.content, m.tool_name, m.tool_arguments, m.tool_result FROM message_fts"
            " JOIN messages m ON m.id = message_fts.rowid WHERE message_fts MATCH ? AND m.namespace_id = ?",
            (match, ns),
        )
        for r in rows:
            if int(r["id"]) not in found and forgotten.message_event(r) is not None:
                found.add(int(r["id"]))
    return found


async def _said(conn: Connection, ns: int, message_id: int) -> str:
    """What a source message said in words (a user or assistant message; a tool record's words are not the fact's)."""
    row = await (await conn.execute(
        "SELECT role, content FROM messages WHERE id = ? AND namespace_id = ?", (message_id, ns)
    )).fetchone()
    return str(row["content"]) if row is not None and row["role"] != "tool" else ""


async def _erase_everywhere(
    conn: Connection, ns: int, message_ids: set[int], words: list[str], scrub: Scrubber, max_attempts: int,
    count: Any,
) -> dict[str, Any]:
    """Blank the messages and the tool records holding a distinctive word, take the words out of other messages,
    rebuild every block that held any of it (its summary audit rows blanked), then the context archive and every
    other stored copy."""
    for word in words:
        scrub.add_word(word)
    tools, others = await holding_messages(conn, ns, words)
    erased = sorted(message_ids | tools)
    blocks = await _erase_messages(conn, ns, erased, scrub)
    blocks |= await scrub_message_words(conn, ns, others - set(erased), scrub)
    blocks |= await holding_blocks(conn, ns, scrub)
    for block_id in sorted(blocks):
        await _rebuild_block(conn, ns, block_id, max_attempts, count)
    counts: dict[str, Any] = {
        "messages": len(erased), "blocks": len(blocks), "words": len(words),
        "tool_records": len(tools), "audit_blanked": await blank_block_audits(conn, blocks),
    }
    counts |= await blank_archive(conn, ns, scrub, blocks)
    counts["rewritten"] = await _scrub_everywhere(conn, scrub)
    return counts


async def _erase_messages(conn: Connection, ns: int, message_ids: list[int], scrub: Scrubber) -> set[int]:
    """Blank the messages (content and tool payloads), drop their search rows and vectors; returns the blocks that
    hold them. Erase is the one exception to 'captured messages are immutable'."""
    blocks: set[int] = set()
    for mid in message_ids:
        row = await (
            await conn.execute(
                "SELECT m.role, m.content, t.block_id FROM messages m JOIN turns t ON t.id = m.turn_id"
                " WHERE m.id = ? AND m.namespace_id = ?",
                (mid, ns),
            )
        ).fetchone()
        if row is None:
            continue
        if row["role"] != "tool":
            scrub.add(row["content"])
        if row["block_id"] is not None:
            blocks.add(int(row["block_id"]))
        if row["role"] == "tool":
            await conn.execute(
                "UPDATE messages SET content = '', tool_arguments = ?, tool_result = ? WHERE id = ?",
                (ERASED_JSON, ERASED_JSON, mid),
            )
        else:
            await conn.execute("UPDATE messages SET content = ? WHERE id = ?", (ERASED, mid))
        await conn.execute("DELETE FROM message_fts WHERE rowid = ?", (mid,))
        await conn.execute("DELETE FROM embeddings WHERE kind = 'message' AND item_id = ?", (mid,))
        # Other events quoting this message keep their own text; the quote was a copy of the message.
        await conn.execute("UPDATE event_sources SET quote = ? WHERE message_id = ?", (ERASED, mid))
    return blocks


async def _rebuild_block(conn: Connection, ns: int, block_id: int, max_attempts: int, count: Any) -> None:
    rows = await conn.execute_fetchall(
        f"SELECT {ROW_COLUMNS} FROM messages m JOIN turns t ON t.id = m.turn_id"
        " WHERE t.block_id = ? ORDER BY t.seq, m.position",
        (block_id,),
    )
    views = seal_views([from_row(r) for r in rows], count)
    await conn.execute(
        "UPDATE blocks SET status = 'pending', ready_at = NULL, l5_tokens = ?, l4 = ?, l4_tokens = ?, l3 = ?,"
        " l3_tokens = ?, l2 = NULL, l2_tokens = NULL, l1 = NULL, l1_tokens = NULL, l0_title = NULL, l0_tags = NULL,"
        " l0_tokens = NULL, summary_model = NULL, has_durable_facts = NULL WHERE id = ?",
        (views.l5_tokens, views.l4, views.l4_tokens, views.l3, views.l3_tokens, block_id),
    )
    # The summary job of this block is usually done: queue it again (enqueue keeps an existing row as it is).
    await conn.execute(
        "UPDATE jobs SET status = 'queued', attempts = 0, next_run_at = 0, last_error = NULL, updated_at = ?"
        " WHERE kind = ? AND subject_id = ?",
        (now_iso(), BLOCK_SUMMARY, block_id),
    )
    await enqueue(conn, ns, BLOCK_SUMMARY, block_id, max_attempts)


async def _erase_graph(conn: Connection, ev: EventRow, scrub: Scrubber) -> dict[str, int]:
    from stratagate.graph import store as graph

    facts = 0
    touched: set[int] = set()
    for fact in await graph.facts_of_event(conn, ev.id):
        links = await graph.fact_events(conn, fact.id)
        others = [e for role, e in links if role == "supports" and e.id != ev.id]
        if others or fact.status != "archived":
            continue  # still held up by another event: not this event's text alone
        facts += 1
        if fact.value is not None:
            scrub.add_word(fact.value)
            await conn.execute("UPDATE graph_facts SET value = ? WHERE id = ?", (ERASED, fact.id))
        touched.add(fact.node_id)
        if fact.object_id is not None:
            touched.add(fact.object_id)
    nodes = 0
    for node_id in sorted(touched):
        node = await graph.get_node(conn, node_id)
        if node is None or node.kind == "project" or node.name == "user" or lexicon.lookup(node.name) is not None:
            continue
        if any(f.status != "archived" for f in await graph.facts_of_node(conn, node_id)):
            continue
        for alias in [node.name, *await graph.aliases(conn, node_id)]:
            scrub.add_word(alias)
        name = f"[erased {node.public_id}]"
        await conn.execute("DELETE FROM graph_aliases WHERE node_id = ?", (node_id,))
        await conn.execute(
            "UPDATE graph_nodes SET name = ?, key = ?, category = NULL, updated_at = ? WHERE id = ?",
            (name, store.normalise(name), now_iso(), node_id),
        )
        await conn.execute("DELETE FROM embeddings WHERE kind = 'node' AND item_id = ?", (node_id,))
        nodes += 1
    for node_id in sorted(touched):
        await graph.reindex_node(conn, node_id)
    return {"facts": facts, "nodes": nodes}


async def _erase_imports(
    conn: Connection, ev: EventRow, source_rows: list[Any], scrub: Scrubber
) -> int:
    import_ids = {ev.import_id} | {s["import_id"] for s in source_rows}
    done = 0
    for import_id in sorted(i for i in import_ids if i is not None):
        row = await (await conn.execute("SELECT source_text FROM imports WHERE id = ?", (import_id,))).fetchone()
        if row is None:
            continue
        before = str(row[0])
        after = _cut(before, scrub)
        if after != before:
            sha = hashlib.sha256(after.encode("utf-8")).hexdigest()
            await conn.execute(
                "UPDATE imports SET source_text = ?, source_sha256 = ? WHERE id = ?", (after, sha, import_id)
            )
            done += 1
    return done


def _cut(text: str, scrub: Scrubber) -> str:
    for needle in scrub.needles():
        text = re.sub(re.escape(needle), ERASED, text, flags=re.IGNORECASE)
    return text


async def _scrub_everywhere(conn: Connection, scrub: Scrubber) -> int:
    needles = scrub.needles()
    if not needles:
        return 0
    rewritten = 0
    for table, key, columns in _SCRUBBED:
        for column in columns:
            hits: set[Any] = set()
            for needle in needles:
                rows = await conn.execute_fetchall(
                    f"SELECT {key} FROM {table} WHERE {column} IS NOT NULL AND instr(lower({column}), lower(?)) > 0",
                    (needle,),
                )
                hits.update(r[0] for r in rows)
            for rowkey in sorted(hits):
                (row,) = await conn.execute_fetchall(f"SELECT {column} FROM {table} WHERE {key} = ?", (rowkey,))
                value = str(row[0])
                new = scrub.stored(value)
                if new == value:
                    new = _cut(value, scrub)
                if new != value:
                    await conn.execute(f"UPDATE {table} SET {column} = ? WHERE {key} = ?", (new, rowkey))
                    rewritten += 1
    return rewritten
