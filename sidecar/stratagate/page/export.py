"""``page.export``: one namespace as a JSON document (everything, in a documented shape) or as Markdown (to read).

JSON holds the sessions with their turns and messages, the blocks with every view, the events with their sources,
the graph (nodes, edges, facts with their windows and events), the imports (source text verbatim) and the audit log
of the namespace. Secrets are redacted in the tree before it is serialised (so a placeholder never breaks the JSON),
erased text is absent (erasure already replaced it by ``[erased]`` in every stored copy), and a forgotten event
stays in the JSON, marked ``status: "forgotten"``, with its source messages marked ``forgotten: "evt_N"``: the JSON is
the user's backup and restore brings it back. The Markdown is for reading and sharing, so it names a forgotten
event by its status only, never its words."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from stratagate import __version__, ids
from stratagate.app import App
from stratagate.blocks.views import session_blocks, view_text
from stratagate.events import forgotten
from stratagate.page import read_queries as q
from stratagate.protocol import method
from stratagate.protocol.types import Name, Result
from stratagate.safety.secrets import PLACEHOLDER_RE, redact_value
from stratagate.storage import lookup
from stratagate.timeutil import now_iso

EXPORT_FORMAT = "stratagate.namespace-export"
EXPORT_VERSION = 1


class ExportParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    namespace: Name
    format: Literal["json", "markdown"] = "json"


class ExportResult(Result):
    filename: str
    content_type: str
    content: str


def _json(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


async def document(app: App, namespace: str, *, for_reading: bool = False) -> dict[str, Any]:
    """The namespace as one JSON-ready tree (not yet redacted). ``for_reading`` (the Markdown): block views and
    titles as the agent sees them, with forgotten memories hidden (events/forgotten.py ``shown_view``)."""
    db = app.db
    ns = await lookup.namespace_id(db, namespace)
    rows = await q.export_rows(db, ns)
    sessions = {int(r["id"]): r["key"] for r in rows["sessions"]}
    hidden = await forgotten.load(db, ns, None)
    messages: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for m in rows["messages"]:
        item: dict[str, Any] = {
            "id": ids.make("msg", m["id"]), "position": m["position"], "role": m["role"], "content": m["content"],
            "at": m["created_at"],
        }
        if m["role"] == "tool":
            item.update(tool_name=m["tool_name"], call_id=m["tool_call_id"], arguments=_json(m["tool_arguments"]),
                        result=_json(m["tool_result"]), is_error=bool(m["is_error"]))
        event_id = hidden.message_event(m) if hidden else None
        if event_id is not None:
            item["forgotten"] = ids.make("evt", event_id)
        messages[int(m["turn_id"])].append(item)
    turns: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for t in rows["turns"]:
        turns[int(t["session_id"])].append({
            "seq": t["seq"], "receipt": t["receipt"], "started_at": t["started_at"], "ended_at": t["ended_at"],
            "end_reason": t["end_reason"], "captured_at": t["captured_at"],
            "block": ids.make("blk", t["block_id"]) if t["block_id"] is not None else None,
            "messages": messages.get(int(t["id"]), []),
        })
    sources: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for s in rows["event_sources"]:
        sources[int(s["event_id"])].append({
            "message": ids.make("msg", s["message_id"]) if s["message_id"] is not None else None,
            "call_id": s["call_id"], "quote": s["quote"],
            "import": ids.make("imp", s["import_id"]) if s["import_id"] is not None else None,
            "source_ref": s["source_ref"], "at": s["created_at"],
        })
    return {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "stratagate": __version__,
        "exported_at": now_iso(),
        "namespace": {"name": namespace, "user_tier": bool(await lookup.namespace_user_tier(db.reader, ns))},
        "sessions": [
            {"name": r["key"], "created_at": r["created_at"], "turns": turns.get(int(r["id"]), [])}
            for r in rows["sessions"]
        ],
        "blocks": await _blocks(app, ns, rows, sessions, hidden if for_reading else None),
        "events": [_event(e, sources.get(int(e["id"]), [])) for e in rows["events"]],
        "graph": _graph(rows),
        "imports": [
            {"id": ids.make("imp", r["id"]), "format": r["format"], "source_name": r["source_name"],
             "source_text": r["source_text"], "source_sha256": r["source_sha256"], "item_count": r["item_count"],
             "report": _json(r["report"]), "status": r["status"], "created_at": r["created_at"],
             "removed_at": r["removed_at"]}
            for r in rows["imports"]
        ],
        "audit": [
            {"id": r["id"], "at": r["at"], "actor": r["actor"], "action": r["action"],
             "subject_type": r["subject_type"], "subject_id": r["subject_id"], "before": _json(r["before"]),
             "after": _json(r["after"])}
            for r in rows["audit"]
        ],
    }


async def _blocks(
    app: App, ns: int, rows: dict[str, Any], sessions: dict[int, str], hidden: forgotten.Forgotten | None
) -> list[dict[str, Any]]:
    source = {int(r["id"]): r["summary_source"] for r in rows["blocks"]}
    out = []
    for session_id in sessions:
        for b in await session_blocks(app.db, ns, session_id, app.settings.block_decay_lambda):
            title = b.l0_title
            if hidden and title and hidden.restates(title, with_titles=True) is not None:
                title = "[hidden: the title restates a forgotten memory]"
            out.append({
                "id": b.ref, "session": b.session, "seq": b.seq, "status": b.status, "first_turn": b.first_turn,
                "last_turn": b.last_turn, "sealed_at": b.sealed_at, "ready_at": b.ready_at,
                "summary_source": source.get(b.id), "level": b.level,
                "title": title, "tags": _json(b.l0_tags) or [],
                "views": {str(lv): await (forgotten.shown_view(app.db, b, lv, hidden) if hidden is not None
                                          else view_text(app.db, b, lv)) for lv in b.available_levels()},
                "tokens": {str(lv): b.tokens_at(lv) for lv in b.available_levels()},
            })
    return out


def _event(e: Any, sources: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": ids.make("evt", e["id"]), "type": e["type"], "title": e["title"], "summary": e["summary"],
        "narrative": e["narrative"], "status": e["status"], "prior_status": e["prior_status"],
        "successor": ids.make("evt", e["successor_id"]) if e["successor_id"] is not None else None,
        "pinned": bool(e["pinned"]), "scope": e["scope"], "session": e["session"], "origin": e["origin"],
        "block": ids.make("blk", e["block_id"]) if e["block_id"] is not None else None,
        "import": ids.make("imp", e["import_id"]) if e["import_id"] is not None else None,
        "criticality": e["criticality"], "confidence": e["confidence"], "tags": _json(e["tags"]),
        "quotes": _json(e["quotes"]), "participants": _json(e["participants"]), "claims": _json(e["claims"]),
        "mentioned_at": e["mentioned_at"], "happened_start": e["happened_start"], "happened_end": e["happened_end"],
        "time_original": e["time_original"], "time_precision": e["time_precision"], "time_basis": e["time_basis"],
        "time_status": e["time_status"], "created_at": e["created_at"], "updated_at": e["updated_at"],
        "sources": sources,
    }


def _graph(rows: dict[str, Any]) -> dict[str, Any]:
    names = {int(n["id"]): n["name"] for n in rows["nodes"]}
    edges = {int(e["id"]): e for e in rows["edges"]}
    links: dict[int, dict[str, list[str]]] = defaultdict(lambda: {"supports": [], "ends": []})
    for fe in rows["fact_events"]:
        links[int(fe["fact_id"])][fe["role"]].append(ids.make("evt", fe["event_id"]))
    facts = []
    for f in rows["facts"]:
        edge = edges.get(int(f["edge_id"])) if f["edge_id"] is not None else None
        facts.append({
            "id": ids.make("fct", f["id"]), "node": ids.make("nod", f["node_id"]),
            "subject": names.get(int(f["node_id"])), "predicate": f["attribute"],
            "object": names.get(int(edge["dst_id"])) if edge is not None else f["value"],
            "kind": "edge" if edge is not None else "attribute", "slot": f["slot"], "scope": f["scope"],
            "session": f["session"], "status": f["status"], "valid_from": f["valid_from"], "valid_to": f["valid_to"],
            "superseded_by": ids.make("fct", f["superseded_by"]) if f["superseded_by"] is not None else None,
            "recorded_at": f["recorded_at"], "events": links[int(f["id"])],
        })
    return {
        "nodes": [{"id": ids.make("nod", n["id"]), "name": n["name"], "key": n["key"], "kind": n["kind"],
                   "category": n["category"], "created_at": n["created_at"]} for n in rows["nodes"]],
        "edges": [{"id": e["id"], "source": ids.make("nod", e["src_id"]), "predicate": e["predicate"],
                   "target": ids.make("nod", e["dst_id"]), "created_at": e["created_at"]} for e in rows["edges"]],
        "facts": facts,
    }


# --- Markdown ----------------------------------------------------------------------------------------------------

TYPE_HEADINGS = {"decision": "Decisions", "preference": "Preferences", "plan": "Plans", "change": "Changes",
                 "fact": "Facts", "event": "Events"}
_MARKS = {"active": "current", "superseded": "superseded", "disputed": "disputed", "forgotten": "forgotten",
          "archived": "archived"}


def _line(text: Any) -> str:
    """One Markdown line of stored text: breaks folded, the characters that would start markup escaped."""
    flat = " ".join(str(text or "").split())
    # A secret's placeholder stays as it is: escaped, it would no longer read as one, and the reply's redaction pass
    # (page/dispatch.py) would take it for a new secret and mangle it ("[secret:token#…]]").
    escaped = [re.sub(r"([\\`*_\[\]<>#|~])", r"\\\1", part) for part in PLACEHOLDER_RE.split(flat)]
    marks = [*PLACEHOLDER_RE.findall(flat), ""]
    return "".join(part + mark for part, mark in zip(escaped, marks, strict=True))


def _window(start: str | None, end: str | None) -> str:
    return f"{start or 'unknown start'} → {end or 'now'}"


def markdown(doc: dict[str, Any]) -> str:
    ns = doc["namespace"]["name"]
    out = [f"# StrataGate memory: {_line(ns)}", "",
           f"Exported {doc['exported_at']} by StrataGate {doc['stratagate']}. "
           f"{len(doc['sessions'])} session(s), {len(doc['events'])} event(s), {len(doc['graph']['facts'])} graph "
           f"fact(s), {len(doc['imports'])} import(s).", ""]
    out += ["## Sessions", ""]
    by_session: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for b in doc["blocks"]:
        by_session[b["session"]].append(b)
    if not doc["sessions"]:
        out.append("No sessions.")
    for s in doc["sessions"]:
        blocks = by_session.get(s["name"], [])
        out.append(f"### {_line(s['name'])}")
        out.append(f"Started {s['created_at']}, {len(s['turns'])} turn(s), {len(blocks)} block(s).")
        out.append("")
        for b in blocks:
            summary = b["views"].get("1") if b["status"] == "ready" else None
            head = f"- `{b['id']}` turns {b['first_turn']}–{b['last_turn']} ({b['status']})"
            if b["title"] and b["status"] == "ready":
                head += f": **{_line(b['title'])}**"
            out.append(head + (f" — {_line(re.sub(r'^[-*] ', '', summary.strip()))}" if summary else ""))
        out.append("")
    out += ["## Events", ""]
    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in doc["events"]:
        by_type[e["type"]].append(e)
    if not doc["events"]:
        out += ["No events.", ""]
    for kind, heading in TYPE_HEADINGS.items():
        if not by_type.get(kind):
            continue
        out += [f"### {heading}", ""]
        for e in by_type[kind]:
            out.append(_event_line(e))
        out.append("")
    out += ["## Graph facts", ""]
    if not doc["graph"]["facts"]:
        out += ["No graph facts.", ""]
    for f in doc["graph"]["facts"]:
        mark = "current" if f["status"] == "active" else f["status"]
        out.append(f"- {_line(f['subject'])} — {_line(f['predicate'])} — {_line(f['object'])} "
                   f"[{_window(f['valid_from'], f['valid_to'])}] _({mark})_ `{f['id']}`")
    out.append("")
    out += ["## Imports", ""]
    if not doc["imports"]:
        out += ["No imports.", ""]
    for i in doc["imports"]:
        out.append(f"- `{i['id']}` {_line(i['source_name'])} ({i['format']}, {i['item_count']} item(s), "
                   f"{i['status']}, {i['created_at']})")
    out.append("")
    return "\n".join(out)


def _event_line(e: dict[str, Any]) -> str:
    mark = _MARKS.get(e["status"], e["status"])
    if e["status"] == "forgotten":  # a forgotten memory's words are not shared
        return f"- _(forgotten)_ `{e['id']}`"
    title = _line(e["title"])
    if e["status"] in ("superseded", "archived"):
        title = f"~~{title}~~"
    line = f"- **{title}** — {_line(e['summary'])} _({mark}"
    if e["successor"]:
        line += f", replaced by `{e['successor']}`"
    line += f")_ `{e['id']}`, mentioned {e['mentioned_at']}"
    if e["happened_start"]:
        line += f", happened {_window(e['happened_start'], e['happened_end'])}"
    if e["pinned"]:
        line += ", pinned"
    return line


def _filename(namespace: str, ext: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", namespace).strip("-.")[:80] or "namespace"
    return f"stratagate-{safe}-{now_iso()[:10]}.{ext}"


@method("page.export", params=ExportParams, result=ExportResult, http="GET /export")
async def export(app: App, p: ExportParams) -> ExportResult:
    """The namespace as JSON (everything) or Markdown (readable), secrets redacted."""
    doc = redact_value(await document(app, p.namespace, for_reading=p.format == "markdown"))
    if p.format == "json":
        return ExportResult(filename=_filename(p.namespace, "json"), content_type="application/json",
                            content=json.dumps(doc, ensure_ascii=False, indent=2))
    return ExportResult(filename=_filename(p.namespace, "md"), content_type="text/markdown; charset=utf-8",
                        content=markdown(doc))
