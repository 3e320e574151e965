"""The erased text's distinctive words, and the messages and blocks that still hold them.

An agent that ran ``cat notes.md`` or ``grep teal notes.md`` captured the erased sentence, or its key words, in a
tool record that restates nothing as a whole; an assistant that answered "Teal noted." echoed it. Erase finds them
by the erased text's *distinctive words*: the candidates of ``text/distinctive.py`` (no stopword, no frequent word,
no short number, at least three characters) that are also

- not a lexicon name (events/lexicon.py: "Python", "PostgreSQL" name tools, not this memory),
- held by no other event of the namespace that is not erased with it (that word is another memory's too), and
- held by at most ``MAX_ELSEWHERE`` messages of the namespace besides the ones erased anyway (counted in the
  message index, stems included): a word the namespace uses widely is not this memory's, and must not blank
  everything that says it.

Every tool record holding one (whole word, any case) is blanked like the erased messages; a user or assistant
message holding one keeps its other words, each distinctive word replaced by ``[erased]``. Blocks whose views hold
an erased string or word are re-rendered and re-summarised; their summary audit rows are blanked
(``blank_block_audits``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from stratagate import ids
from stratagate.erase.scrubber import ERASED, Scrubber
from stratagate.events import lexicon
from stratagate.events.forgotten import message_text
from stratagate.storage.sqlite import Connection
from stratagate.text.distinctive import candidates, holds
from stratagate.text.messages import search_text
from stratagate.text.terms import fts_document, terms
from stratagate.text.terms import quote as fts_quote

MAX_ELSEWHERE = 8
"""A word held by more messages than this, besides the erased ones, is common in the namespace: not distinctive."""

_SUMMARY_KEYS = frozenset({"title", "tags", "summary", "l0_title", "l0_tags", "l1", "l2"})
"""Audit detail keys of a block's summary that carry model-written text about the block."""


def _match(word: str) -> str | None:
    found = list(dict.fromkeys(terms(word)))
    return " ".join(fts_quote(t) for t in found) if found else None


async def distinctive_words(
    conn: Connection, ns: int, texts: Iterable[str | None], erased_messages: set[int], erased_events: set[int]
) -> list[str]:
    """The distinctive words of ``texts`` (see the module docstring), lower-cased."""
    out: list[str] = []
    for word in candidates("\n".join(t for t in texts if t and t != ERASED)):
        match = _match(word)
        if match is None or lexicon.lookup(word) is not None:
            continue
        events = await conn.execute_fetchall(
            "SELECT e.id FROM event_fts JOIN events e ON e.id = event_fts.rowid"
            " WHERE event_fts MATCH ? AND e.namespace_id = ?",
            (match, ns),
        )
        if any(int(r[0]) not in erased_events for r in events):
            continue
        rows = await conn.execute_fetchall(
            "SELECT m.id FROM message_fts JOIN messages m ON m.id = message_fts.rowid"
            " WHERE message_fts MATCH ? AND m.namespace_id = ? LIMIT ?",
            (match, ns, MAX_ELSEWHERE + len(erased_messages) + 1),
        )
        if sum(1 for r in rows if int(r[0]) not in erased_messages) <= MAX_ELSEWHERE:
            out.append(word)
    return out


async def holding_messages(conn: Connection, ns: int, words: list[str]) -> tuple[set[int], set[int]]:
    """(tool records, other messages) of the namespace that hold one of ``words`` as a whole word."""
    tools: set[int] = set()
    others: set[int] = set()
    for word in words:
        match = _match(word)
        if match is None:
            continue
        rows = await conn.execute_fetchall(
            "SELECT m.id, m.role, m.content, m.tool_name, m.tool_arguments, m.tool_result FROM message_fts"
            " JOIN messages m ON m.id = message_fts.rowid WHERE message_fts MATCH ? AND m.namespace_id = ?",
            (match, ns),
        )
        for r in rows:
            text = message_text(r["role"], r["content"], r["tool_name"], r["tool_arguments"], r["tool_result"])
            if holds(text, word):
                (tools if r["role"] == "tool" else others).add(int(r["id"]))
    return tools, others - tools


async def scrub_message_words(conn: Connection, ns: int, message_ids: Iterable[int], scrub: Scrubber) -> set[int]:
    """Replace the erased words in user and assistant messages (the rest of each message stays), re-index them.
    Returns the blocks that hold them."""
    blocks: set[int] = set()
    for mid in sorted(message_ids):
        row = await (await conn.execute(
            "SELECT m.role, m.content, m.tool_name, m.tool_arguments, m.tool_result, t.block_id FROM messages m"
            " JOIN turns t ON t.id = m.turn_id WHERE m.id = ? AND m.namespace_id = ?",
            (mid, ns),
        )).fetchone()
        if row is None:
            continue
        content = scrub.text(str(row["content"]))
        if content == row["content"]:
            continue
        await conn.execute("UPDATE messages SET content = ? WHERE id = ?", (content, mid))
        await conn.execute("DELETE FROM message_fts WHERE rowid = ?", (mid,))
        document = fts_document(search_text({**dict(row), "content": content}))
        await conn.execute("INSERT INTO message_fts(rowid, terms) VALUES (?, ?)", (mid, document))
        await conn.execute("DELETE FROM embeddings WHERE kind = 'message' AND item_id = ?", (mid,))
        if row["block_id"] is not None:
            blocks.add(int(row["block_id"]))
    return blocks


_VIEW_COLUMNS = ("l0_title", "l0_tags", "l1", "l2", "l3", "l4")


async def holding_blocks(conn: Connection, ns: int, scrub: Scrubber) -> set[int]:
    """Blocks of the namespace whose stored views (L0–L4) hold an erased string or word."""
    found: set[int] = set()
    views = " || ".join(f"coalesce({c}, '')" for c in _VIEW_COLUMNS)
    for needle in scrub.needles():
        rows = await conn.execute_fetchall(
            f"SELECT id, {', '.join(_VIEW_COLUMNS)} FROM blocks WHERE namespace_id = ?"
            f" AND instr(lower({views}), lower(?)) > 0",
            (ns, needle),
        )
        for r in rows:
            if any(scrub.holds(r[c]) for c in _VIEW_COLUMNS):
                found.add(int(r["id"]))
    return found


async def blank_block_audits(conn: Connection, block_ids: Iterable[int]) -> int:
    """Blank the summary text (title, tags, summaries) in the audit rows of the re-summarised blocks: a model summary
    may say the erased fact in other words, which no string match finds."""
    blanked = 0
    for block_id in sorted(block_ids):
        rows = await conn.execute_fetchall(
            "SELECT id, before, after FROM audit_log WHERE subject_type = 'block' AND subject_id = ?",
            (ids.make("blk", block_id),),
        )
        for r in rows:
            changed = {c: _blank_summary(r[c]) for c in ("before", "after")}
            if any(changed[c] != r[c] for c in changed):
                await conn.execute(
                    "UPDATE audit_log SET before = ?, after = ? WHERE id = ?",
                    (changed["before"], changed["after"], r["id"]),
                )
                blanked += 1
    return blanked


def _blank_summary(raw: str | None) -> str | None:
    if not raw:
        return raw
    try:
        data: Any = json.loads(raw)
    except ValueError:
        return raw
    if not isinstance(data, dict) or not _SUMMARY_KEYS & data.keys():
        return raw
    blanked = dict(data)
    for key in _SUMMARY_KEYS & data.keys():
        value = data[key]
        blanked[key] = [ERASED] * min(len(value), 1) if isinstance(value, list) else ERASED if value else value
    return raw if blanked == data else json.dumps(blanked, ensure_ascii=False, sort_keys=True)
