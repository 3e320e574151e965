"""What forgotten events state, so that forgetting holds everywhere the agent looks.

``memory_forget`` only changes an event's status; the words it came from are still captured messages, block views
and model-written summaries. This module knows, for a namespace, which messages are sources of a forgotten event
(``event_sources.message_id``, and the tool message of the ``memory_remember`` call by ``call_id``) and what those
events say (narrative, summary, quotes, source quotes, as term sequences). Views shown to the agent use it to hide:

- a message is hidden when it is a source of a forgotten event or restates one (it contains one of the event's
  statements as a contiguous run of search terms, or is a near-duplicate of one: events/store.py ``near_same``);
- a message is hidden when it echoes one: it is in the same turn as one of the event's source messages and holds
  one of the event's distinctive words (``text/distinctive.py``; lexicon names excluded), like an assistant's
  "Teal noted." after "my favourite colour is teal";
- a model-written L0 title, L1 sentence or L2 line is dropped when it restates a forgotten event the same way
  (titles count here too: a summary title is short, like an event title).

Block views and raw message search both ask ``message_event``, so they hide the same messages.

Stored data never changes: restoring the event brings every view back. Erased events (stratagate/erase/) are not
listed: their text is gone and their messages already say ``[erased]``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from stratagate import ids
from stratagate.blocks.render import render_l0, render_l2, render_l3, render_l4, render_l5
from stratagate.blocks.source import SourceMessage
from stratagate.blocks.views import BlockRow, block_messages, view_text
from stratagate.events import lexicon
from stratagate.events.store import near_same
from stratagate.events.visibility import where_any_session
from stratagate.safety.inert import inert
from stratagate.storage.db import Database
from stratagate.text.distinctive import candidates, holds
from stratagate.text.terms import terms

MIN_TERMS = 3  # a statement shorter than this (in search terms) is too generic to hide anything by itself
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+")


def marker(event_id: int | None) -> str:
    if event_id is None:  # a session-scoped memory of another session: its id is not the viewer's to see
        return "[hidden: forgotten memory]"
    ref = ids.make("evt", event_id)
    return f"[hidden: forgotten memory {ref} — memory_restore {ref} shows it again]"


def _contains(haystack: list[str], needle: tuple[str, ...]) -> bool:
    n = len(needle)
    if n == 0 or n > len(haystack):
        return False
    first = needle[0]
    for i in range(len(haystack) - n + 1):
        if haystack[i] == first and tuple(haystack[i : i + n]) == needle:
            return True
    return False


def message_text(role: str, content: str, tool_name: str | None, arguments: str | None, result: str | None) -> str:
    """The words of a message as search sees them (a tool record: its name, arguments and result)."""
    if role != "tool":
        return content
    return " ".join([tool_name or "", _json_words(arguments), _json_words(result)])


def _json_words(value: str | None) -> str:
    if not value:
        return ""
    try:
        data = json.loads(value)
    except ValueError:
        return value
    out: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            for item in v.values():
                walk(item)
        elif isinstance(v, list):
            for item in v:
                walk(item)
        elif v is not None:
            out.append(str(v))

    walk(data)
    return "\n".join(out)


@dataclass
class Statement:
    event_id: int
    text: str
    seq: tuple[str, ...]


@dataclass
class Forgotten:
    """The forgotten events of one namespace as one viewer sees them."""

    sources: dict[int, int] = field(default_factory=dict)  # message id → forgotten event id
    echoes: dict[int, int] = field(default_factory=dict)  # message id → the event it echoes in a source's turn
    statements: list[Statement] = field(default_factory=list)  # narrative, summary, quotes, source quotes
    titles: list[Statement] = field(default_factory=list)
    shown: dict[int, bool] = field(default_factory=dict)  # event id → may the viewer see its id

    def __bool__(self) -> bool:
        return bool(self.sources or self.statements)

    def marker(self, event_id: int) -> str:
        return marker(event_id if self.shown.get(event_id) else None)

    def restates(self, text: str, *, with_titles: bool = False) -> int | None:
        """The forgotten event this text restates, if any."""
        if not text.strip():
            return None
        words = terms(text)
        if not words:
            return None
        pool = [*self.statements, *(self.titles if with_titles else [])]
        for st in pool:
            if _contains(words, st.seq):
                return st.event_id
        for st in pool:
            if near_same(text, st.text):
                return st.event_id
        return None

    def message_event(self, message: SourceMessage | Any) -> int | None:
        """The forgotten event a message belongs to: it is one of its sources, or it restates it."""
        mid = int(message.id if isinstance(message, SourceMessage) else message["id"])
        if mid in self.sources:
            return self.sources[mid]
        if mid in self.echoes:
            return self.echoes[mid]
        if isinstance(message, SourceMessage):
            text = message_text(
                message.role, message.content, message.tool_name, message.tool_arguments, message.tool_result
            )
        else:
            text = message_text(
                message["role"], message["content"], message["tool_name"], message["tool_arguments"],
                message["tool_result"],
            )
        return self.restates(text)


async def load(conn: Any, namespace_id: int | None, viewer_session: int | None, *, event_ids: list[int] | None = None
               ) -> Forgotten:
    """The namespace's forgotten (not erased) events, and forgotten user-tier events of other namespaces it sees
    (events/visibility.py). A session-scoped event of another session still hides its words (the user asked to
    forget them), only its id is not shown. ``conn``: an aiosqlite connection or the
    Database (anything with ``execute_fetchall`` or ``fetchall``)."""
    fetch = getattr(conn, "execute_fetchall", None) or conn.fetchall
    visible, params = where_any_session(namespace_id)
    where = f"{visible} AND e.status = 'forgotten'"
    if event_ids is not None:
        where = f"{visible} AND e.id IN ({','.join('?' * len(event_ids))})"
        params.extend(event_ids)
    rows = await fetch(
        "SELECT e.id, e.scope, e.session_id, e.title, e.summary, e.narrative, e.quotes FROM events e"
        f" WHERE {where} AND NOT EXISTS (SELECT 1 FROM erasures x WHERE x.namespace_id = e.namespace_id"
        " AND x.subject_type = 'event' AND x.subject_id = 'evt_' || e.id) ORDER BY e.id",
        params,
    )
    out = Forgotten()
    if not rows:
        return out
    keys = [int(r["id"]) for r in rows]
    for r in rows:
        eid = int(r["id"])
        out.shown[eid] = r["scope"] != "session" or (viewer_session is not None and r["session_id"] == viewer_session)
        texts = [r["narrative"], r["summary"], *json.loads(r["quotes"] or "[]")]
        _add(out.statements, eid, texts)
        _add(out.titles, eid, [r["title"]])
    marks = ",".join("?" * len(keys))
    srcs = await fetch(
        f"SELECT es.event_id, es.message_id, es.call_id, es.quote FROM event_sources es WHERE es.event_id IN ({marks})"
        " ORDER BY es.id",
        keys,
    )
    calls: dict[str, int] = {}
    for s in srcs:
        eid = int(s["event_id"])
        if s["message_id"] is not None:
            out.sources.setdefault(int(s["message_id"]), eid)
        if s["call_id"]:
            calls.setdefault(str(s["call_id"]), eid)
        _add(out.statements, eid, [s["quote"]])
    if calls:
        call_keys = list(calls)
        found = await fetch(
            f"SELECT id, tool_call_id FROM messages WHERE namespace_id = ? AND role = 'tool'"
            f" AND tool_call_id IN ({','.join('?' * len(call_keys))})",
            [namespace_id, *call_keys],
        )
        for m in found:
            out.sources.setdefault(int(m["id"]), calls[str(m["tool_call_id"])])
    await _load_echoes(fetch, out, {int(r["id"]): [r["title"], *(st.text for st in out.statements
                                                                   if st.event_id == int(r["id"]))] for r in rows})
    return out


async def _load_echoes(fetch: Any, out: Forgotten, texts: dict[int, list[str | None]]) -> None:
    """Messages in the turn of a forgotten event's source message that hold one of its distinctive words."""
    words = {
        eid: [w for w in candidates("\n".join(t for t in ts if t)) if lexicon.lookup(w) is None]
        for eid, ts in texts.items()
    }
    sources = list(out.sources)
    for chunk in (sources[i : i + 500] for i in range(0, len(sources), 500)):
        rows = await fetch(
            "SELECT m.id, m.role, m.content, m.tool_name, m.tool_arguments, m.tool_result, s.id AS source_id"
            " FROM messages s JOIN messages m ON m.turn_id = s.turn_id AND m.id != s.id"
            f" WHERE s.id IN ({','.join('?' * len(chunk))})",
            chunk,
        )
        for r in rows:
            mid, eid = int(r["id"]), out.sources[int(r["source_id"])]
            if mid in out.sources or mid in out.echoes:
                continue
            text = message_text(r["role"], r["content"], r["tool_name"], r["tool_arguments"], r["tool_result"])
            if any(holds(text, w) for w in words.get(eid, [])):
                out.echoes[mid] = eid


def _add(into: list[Statement], event_id: int, texts: Sequence[str | None]) -> None:
    have = {st.seq for st in into if st.event_id == event_id}
    for text in texts:
        if not text or text == "[erased]":
            continue
        seq = tuple(terms(text))
        if len(seq) < MIN_TERMS or seq in have:
            continue
        have.add(seq)
        into.append(Statement(event_id, text, seq))


# --- views -------------------------------------------------------------------------------------------------------

_PLACEHOLDER = "STRATAGATEHIDDENMESSAGE{}X"
_LINE = re.compile(r"^(?:User|Assistant|Tool): (STRATAGATEHIDDENMESSAGE\d+X)$", re.M)


def masked(messages: Sequence[SourceMessage], forgotten: Forgotten) -> tuple[list[SourceMessage], dict[str, str]]:
    """The messages with each hidden one replaced by a placeholder message, and placeholder → marker line."""
    out: list[SourceMessage] = []
    marks: dict[str, str] = {}
    for msg in messages:
        event_id = forgotten.message_event(msg) if forgotten else None
        if event_id is None:
            out.append(msg)
            continue
        key = _PLACEHOLDER.format(msg.id)
        marks[key] = forgotten.marker(event_id)
        out.append(
            SourceMessage(id=msg.id, turn_seq=msg.turn_seq, role="user", content=key, created_at=msg.created_at)
        )
    return out, marks


def _unmask(text: str, marks: dict[str, str]) -> str:
    text = _LINE.sub(lambda m: marks.get(m.group(1), m.group(0)), text)
    for key, line in marks.items():  # anywhere else a renderer may have put it
        text = text.replace(key, line)
    return text


def render_masked(level: int, messages: Sequence[SourceMessage], forgotten: Forgotten) -> str:
    shown, marks = masked(messages, forgotten)
    renderer = {5: render_l5, 4: render_l4, 3: render_l3}[level]
    return _unmask(renderer(shown), marks)


def public_messages(messages: Sequence[SourceMessage], forgotten: Forgotten) -> list[dict[str, Any]]:
    out = []
    for msg in messages:
        event_id = forgotten.message_event(msg) if forgotten else None
        if event_id is None:
            out.append(msg.public())
        else:
            out.append({"id": msg.ref, "turn": msg.turn_seq, "role": msg.role, "created_at": msg.created_at,
                        "hidden": forgotten.marker(event_id)})
    return out


def filter_facts(facts: list[str], forgotten: Forgotten) -> tuple[list[str], int]:
    kept = [f for f in facts if forgotten.restates(f, with_titles=True) is None]
    return kept, len(facts) - len(kept)


def filter_sentences(text: str, forgotten: Forgotten) -> tuple[str, int]:
    out_lines: list[str] = []
    dropped = 0
    for line in text.splitlines():
        parts = [p for p in _SENTENCE.split(line) if p]
        kept = [p for p in parts if forgotten.restates(p, with_titles=True) is None]
        dropped += len(parts) - len(kept)
        if kept or not parts:
            out_lines.append(" ".join(kept))
    return "\n".join(out_lines), dropped


def model_view(level: int, l2: str | None, l1: str | None, title: str | None, tags: str | None,
               fallback: str, forgotten: Forgotten) -> str:
    """L2/L1/L0 as written by the model, minus the lines, sentences or title that restate a forgotten event."""
    if level == 2:
        facts = json.loads(l2 or "[]")
        if not facts:
            return fallback
        kept, dropped = filter_facts(facts, forgotten)
        lines = render_l2(kept).splitlines() if kept else []
        if dropped:
            lines.append(f"[hidden: {dropped} key fact(s) restating a forgotten memory]")
        return "\n".join(lines)
    if level == 1:
        if not l1:
            return fallback
        text, dropped = filter_sentences(l1, forgotten)
        return text + (f"\n[hidden: {dropped} sentence(s) restating a forgotten memory]" if dropped else "")
    tag_list = json.loads(tags or "[]")
    shown_title = title or ""
    if shown_title and forgotten.restates(shown_title, with_titles=True) is not None:
        shown_title = "[hidden: the title restates a forgotten memory]"
    kept_tags = [t for t in tag_list if forgotten.restates(t, with_titles=True) is None]
    return render_l0(shown_title, kept_tags)


async def shown_view(db: Database, block: BlockRow, level: int, forgotten: Forgotten) -> str:
    """``view_text`` as the agent may see it: source messages of forgotten events (and messages restating one) are
    one ``[hidden: …]`` line each (L5/L4/L3 re-rendered from the remaining messages by blocks/render.py), and model
    lines that restate a forgotten event are dropped. Stored views never change. ``forgotten`` is loaded once per
    request (``load``) by the caller, not once per block and level."""
    if not forgotten:
        return await view_text(db, block, level)
    return await filtered_view(db, block, level, forgotten)


async def filtered_view(db: Database, block: BlockRow, level: int, forgotten: Forgotten) -> str:
    if level >= 3 or (level == 2 and not json.loads(block.l2 or "[]")) or (level == 1 and not block.l1):
        messages = await block_messages(db, block.namespace_id, block.id)
        if not any(forgotten.message_event(m) is not None for m in messages):
            return await view_text(db, block, level)
        return inert(render_masked(level if level >= 3 else 3, messages, forgotten))
    return model_view(level, block.l2, block.l1, block.l0_title, block.l0_tags, block.l3, forgotten)


async def mask_expanded(db: Database, result: dict[str, Any], block: BlockRow, viewer: int | None) -> dict[str, Any]:
    """An ``expand_block`` result with forgotten memories hidden from its view and its L5 message list."""
    forgotten = await load(db, block.namespace_id, viewer)
    if not forgotten:
        return result
    result["view"] = await filtered_view(db, block, int(result["level"]), forgotten)
    if "messages" in result:
        result["messages"] = public_messages(await block_messages(db, block.namespace_id, block.id), forgotten)
    return result
