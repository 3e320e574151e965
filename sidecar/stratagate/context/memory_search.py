"""``/memory search <words>``: long-term memory (events this session may see, current ones and history, with their
status; graph nodes) and this session's context archive (``search_context``), grouped, in English or Chinese."""

from __future__ import annotations

from stratagate.activation.relevance import query_match
from stratagate.context.last_recall import Lang
from stratagate.context.memory_text import status_word
from stratagate.context.search import SearchArgs, search_context
from stratagate.events import store as events
from stratagate.graph import read as graph_read
from stratagate.safety.inert import inert
from stratagate.storage import lookup
from stratagate.storage.db import Database

LIMIT = 6
STATUSES = ["active", "disputed", "superseded"]
TITLE_CHARS = 100


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return inert(text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1] + "…", inline=True)


async def longterm_lines(db: Database, namespace: str, session: str, words: str, lang: Lang) -> list[str]:
    conn = db.reader
    ns = await lookup.namespace_key(conn, namespace)
    sess = await lookup.session_key(conn, ns, session)
    match = query_match(words)
    found = await events.search(conn, ns, sess, match, STATUSES, None, LIMIT) if match else []
    nodes = await graph_read.search(conn, ns, sess, match, None, LIMIT) if match and ns is not None else []
    zh = lang == "zh"
    if not found and not nodes:
        return ["长期记忆：没有匹配的内容。" if zh else "Long-term memory: nothing matches."]
    count = len(found) + len(nodes)
    lines = [f"长期记忆（{count} 条）：" if zh else f"Long-term memory ({count}):"]
    for ev, _ in found:
        said = f"{ev.mentioned_at[:10]} 提到" if zh else f"said {ev.mentioned_at[:10]}"
        lines.append(f"  {ev.public_id} · {status_word(ev.status, lang)} · “{_clip(ev.title)}” — {said}")
    for node, _ in nodes:
        lines.append(f"  {node.public_id} · {status_word(node.kind, lang)} · “{_clip(node.name)}”")
    lines.append(
        "  （用 memory_expand_event / memory_expand_graph_node 读取全文）" if zh
        else "  (memory_expand_event / memory_expand_graph_node read one in full)"
    )
    return lines


async def search_text(
    db: Database, keys: tuple[int, int] | None, namespace: str, session: str, words: str, lang: Lang
) -> str:
    longterm = await longterm_lines(db, namespace, session, words, lang)
    archived = await search_context(db, keys, SearchArgs(query=words[:2000], limit=8), lang)
    head = "本会话的历史存档：" if lang == "zh" else "This session's archive:"
    archive = [head, *("  " + line for line in archived.text.splitlines())]
    return "\n".join([*longterm, "", *archive])
