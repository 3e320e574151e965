"""What a step recalled, explained for people: the ``recalled`` list and ``note`` of ``activation.render_step`` (the
chat's StrataGate Memory row) and each session's last recall (``/memory recall`` and ``/memory status``).

Built at the result's edge from the ids the render already chose: one lookup of those few rows, never a second
ranking, and none at all when the ids and the human message are the ones this session's last step explained. Why an item
came: a safety-critical or pinned event is admitted on every step; otherwise the words of the step's query it shares
(or, when it shares none with the query, the recent turns); a block is another session's recent history or this
session's earlier, shortened history. Kept in memory only: a restarted sidecar has no last recall until the next step.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from stratagate import ids
from stratagate.activation import relevance
from stratagate.context.last_recall import Lang, LastRecall, Reason, RecalledItem, Recalls
from stratagate.events import store as events
from stratagate.graph import store as graph
from stratagate.storage.sqlite import Connection
from stratagate.text.terms import terms
from stratagate.timeutil import now_iso

QUERY_CHARS = 4_000
SHOWN_WORDS = 3
TITLE_CHARS = 80
NOTE_HEAD = "StrataGate Memory recalled for this step:"
"""The model-facing note's first words (test models and the demo model skip a user message that starts with them)."""


def _clip(text: str, limit: int = TITLE_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@lru_cache(maxsize=4096)
def _word_terms(word: str) -> frozenset[str]:
    return frozenset(terms(word))


@lru_cache(maxsize=64)
def _query_words(query: str) -> tuple[str, ...]:
    """The query's distinct words, as typed, first seen first (cached: a step's items share one query)."""
    seen: dict[str, str] = {}
    for word in re.findall(r"\w+", relevance.clean(query[:QUERY_CHARS])):
        seen.setdefault(word.lower(), word)
    return tuple(seen.values())


def shared_words(query: str, about: str) -> list[str]:
    """The query's own words (as typed, first seen first) whose terms ``about`` holds too: "pnpm", not its stem."""
    held = relevance.text_terms(about)
    out: list[str] = []
    for word in _query_words(query):
        if held.intersection(_word_terms(word)):
            out.append(word[:24])
            if len(out) >= SHOWN_WORDS:
                break
    return out


STATUS_WORDS = {
    "en": {"active": "active", "disputed": "disputed", "superseded": "superseded", "forgotten": "forgotten",
           "archived": "archived"},
    "zh": {"active": "有效", "disputed": "有争议", "superseded": "已被取代", "forgotten": "已遗忘",
           "archived": "已归档", "ready": "已就绪", "pending": "生成摘要中", "person": "人物", "project": "项目",
           "organization": "组织", "tool": "工具", "place": "地点", "concept": "概念"},
}


def status_word(status: str, lang: Lang) -> str:
    """An event's status, a graph node's kind or a block's state, in the UI language."""
    return STATUS_WORDS[lang].get(status, status)


_WHY = {
    "en": {
        "safety": "safety-critical: recalled on every step",
        "pinned": "pinned: recalled on every step",
        "words": "matches “{words}”",
        "recent": "related to the recent turns",
        "history": "history: a newer event replaced it",
        "other": "recent conversation of another session",
        "own": "earlier part of this session, shortened",
    },
    "zh": {
        "safety": "安全相关：每一步都会回忆",
        "pinned": "已置顶：每一步都会回忆",
        "words": "与“{words}”相关",
        "recent": "与最近几轮对话相关",
        "history": "历史：已被更新的事件取代",
        "other": "其他会话最近的对话",
        "own": "本会话较早的部分（已缩短）",
    },
}


def why(lang: Lang, reason: Reason, words: list[str]) -> str:
    joined = "”, “".join(words) if lang == "en" else "”“".join(words)
    return _WHY[lang][reason].format(words=joined)


def _item(ref: str, kind: Any, status: str, title: str, reason: Reason, words: list[str], lang: Lang) -> RecalledItem:
    return RecalledItem(
        id=ref, kind=kind, status=status, title=_clip(title), reason=reason, words=words, why=why(lang, reason, words)
    )


async def _event(conn: Connection, ref: str, query: str, lang: Lang) -> RecalledItem | None:
    key = ids.parse(ref, "evt")
    ev = await events.get_event(conn, key) if key is not None else None
    if ev is None:
        return None
    words = shared_words(query, relevance.event_text(ev))
    reason: Reason
    if ev.status == "superseded":
        reason = "history"
    elif ev.criticality == "safety":
        reason = "safety"
    elif words:
        reason = "words"
    elif ev.pinned:
        reason = "pinned"
    else:
        reason = "recent"
    return _item(ref, "event", ev.status, ev.title, reason, words, lang)


async def _node(conn: Connection, ref: str, query: str, lang: Lang) -> RecalledItem | None:
    key = ids.parse(ref, "nod")
    node = await graph.get_node(conn, key) if key is not None else None
    if node is None:
        return None
    words = shared_words(query, "\n".join([node.name, node.category or ""]))
    return _item(ref, "node", node.kind, node.name, "words" if words else "recent", words, lang)


async def _blocks(conn: Connection, refs: list[str], session: str, lang: Lang) -> list[RecalledItem]:
    keys = {k: ref for ref in refs if (k := ids.parse(ref, "blk")) is not None}
    if not keys:
        return []
    rows = await conn.execute_fetchall(
        "SELECT b.id, b.status, b.l0_title, b.first_turn, b.last_turn, s.key AS session FROM blocks b"
        f" JOIN sessions s ON s.id = b.session_id WHERE b.id IN ({', '.join('?' * len(keys))})",
        tuple(keys),
    )
    by_id = {int(r["id"]): r for r in rows}
    out = []
    for key, ref in keys.items():
        r = by_id.get(key)
        if r is None:
            continue
        first, last = r["first_turn"], r["last_turn"]
        title = r["l0_title"] or (f"turn {first}" if first == last else f"turns {first}–{last}")
        reason: Reason = "own" if r["session"] == session else "other"
        out.append(_item(ref, "block", str(r["status"]), str(title), reason, [], lang))
    return out


async def explain(
    conn: Connection, session: str, query: str, result: dict[str, Any], lang: Lang = "en"
) -> list[RecalledItem]:
    """The render's chosen items (events, graph nodes, blocks, in the order it showed them), each with its status,
    title and why it came."""
    items: list[RecalledItem] = []
    for ref in result.get("event_ids") or []:
        if (item := await _event(conn, ref, query, lang)) is not None:
            items.append(item)
    for ref in result.get("node_ids") or []:
        if (item := await _node(conn, ref, query, lang)) is not None:
            items.append(item)
    items.extend(await _blocks(conn, list(result.get("block_ids") or []), session, lang))
    return items


def row_entries(items: list[RecalledItem], lang: Lang) -> list[dict[str, str]]:
    """The chat row's list (DSH's ``catalog`` context form: ``{name, description}``): the id, then its status, title
    and why, in the UI language."""
    return [
        {"name": i.id, "description": f"{status_word(i.status, lang)} · “{i.title}” — {i.why}"} for i in items
    ]


def note(items: list[RecalledItem]) -> str:
    """The one model-facing line of the chat row: which ids this step's memory holds (their text is in the runtime
    context). English whatever the UI language: it is for the model, and stays byte-stable across languages. It
    never spells the memory section's tag: an opening tag without its close, in a message after the real section,
    reads as an empty memory section to anything that looks for the newest one."""
    if not items:
        return ""
    return f"{NOTE_HEAD} {', '.join(i.id for i in items)} (quoted in the runtime context)."


def _asked(query: str) -> str:
    """The human message a step query starts with (a turn's tool rounds follow it after a blank line)."""
    return query.split("\n\n", 1)[0]


async def remember_step(
    recalls: Recalls, conn: Connection, namespace: str, session: str, query: str, result: dict[str, Any],
    lang: Lang = "en",
) -> list[RecalledItem]:
    """Explain the step's recall (reusing the session's last explanation when the ids, the human message and the
    language are the same), record it as the session's last recall, and return its items."""
    ids_now = [*(result.get("event_ids") or []), *(result.get("node_ids") or []), *(result.get("block_ids") or [])]
    clipped = query[:QUERY_CHARS]
    last = recalls.get(namespace, session)
    same = last is not None and last.lang == lang and _asked(last.query) == _asked(clipped)
    if last is not None and same and [i.id for i in last.items] == ids_now:
        items = last.items  # the same items for the same message: a turn's later steps explain nothing again
    else:
        items = await explain(conn, session, clipped, result, lang) if ids_now else []
    recalls.put(namespace, session, LastRecall(at=now_iso(), query=clipped, lang=lang, items=items))
    return items
