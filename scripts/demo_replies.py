"""What the offline demo model says (scripts/demo_model.py serves it): replies that acknowledge the user.

No language model is involved. An agent step is answered from what its request holds, and only that: the user's
newest message (restated briefly) and the memory StrataGate recalled for the step (the ``<stratagate-memory>``
section DSH carries in the step's runtime context: events with their status and time window, graph facts, earlier
blocks). The first
reply of a session says once that this is a demo model. A title request gets the first user message cut to a
short title. Chinese messages get Chinese replies.

Standard library only: the demo runs from a checkout whose .venv holds only the sidecar.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field
from typing import Any

MEMORY_OPEN = "<stratagate-memory>"
MEMORY_CLOSE = "</stratagate-memory>"
BAR = "│"
RUNTIME_CONTEXT_HEAD = "Current runtime context."
MEMORY_ROW_HEAD = "StrataGate Memory recalled for this step:"  # the chat's memory row: names ids, not the user
NUDGE_MARK = "[StrataGate memory]"  # the shim's once-per-turn reminder: answer with the previous reply
TITLE_PROMPT_HEAD = "Create a concise title"
TITLE_FRAME = "human messages:\n"
TITLE_WORDS = 6
TITLE_CJK_CHARS = 16
RESTATE_CHARS = 160
MAX_EVENTS_SHOWN = 4

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_EVENT_HEAD = re.compile(r"^\[(evt_\d+) · ([a-z]+) · (.*)\]$")
_NODE_HEAD = re.compile(r"^\[(nod_\d+) · ([^\]]*?) · \"(.*)\"\]$")
_BLOCK_HEAD = re.compile(r"^\[(blk_\d+)\b")
_REPLACES = re.compile(r"replaces (evt_\d+) · \"(.*?)\"(?: · |$)")
_WINDOW = re.compile(r"\b(planned|happened|cancelled|when) (\d{4}-\d{2}-\d{2}(?:–\d{4}-\d{2}-\d{2})?)")
_CLAUSE_END = re.compile(r"[,，;；:：]")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s")
_FILLER_START = re.compile(
    r"^(?:(?:please|hi|hello|hey|ok|okay|so|well)[,，!！\s]+|(?:请|麻烦)[,，\s]*|你好[,，!！\s]*)", re.IGNORECASE
)


# ------------------------------------------------------------------------------------------- request reading


def content_text(content: Any) -> str:
    """The text of an OpenAI message content (a string or a list of parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(content_text(p.get("text") if isinstance(p, dict) else p) for p in content)
    return str(content)


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body.get("messages") or [] if isinstance(m, dict)]


def system_text(body: dict[str, Any]) -> str:
    return "\n".join(
        content_text(m.get("content")) for m in _messages(body) if m.get("role") in ("system", "developer")
    )


def memory_text(body: dict[str, Any]) -> str:
    """The memory StrataGate recalled for THIS step: the newest message holding a ``<stratagate-memory>`` section
    (DSH puts it in the step's runtime-context message; earlier steps' contexts stay in the history). When this
    step's runtime context holds none, recall brought nothing for it: an earlier step's memory is not this one's.
    Only a whole section counts: the chat's memory row (after the runtime context) names ids, not the memory."""
    for message in reversed(_messages(body)):
        text = content_text(message.get("content"))
        if MEMORY_OPEN in text and MEMORY_CLOSE in text[text.find(MEMORY_OPEN) :]:
            return text
        if message.get("role") == "user" and text.strip().startswith(RUNTIME_CONTEXT_HEAD):
            return ""
    return ""


def is_title_request(body: dict[str, Any]) -> bool:
    return not body.get("tools") and TITLE_PROMPT_HEAD in system_text(body)


def _user_texts(body: dict[str, Any]) -> list[str]:
    """The user's own messages, oldest first (DSH's runtime-context snapshot is not the user speaking)."""
    texts = []
    for message in _messages(body):
        if message.get("role") != "user":
            continue
        text = content_text(message.get("content")).strip()
        if text and not text.startswith((RUNTIME_CONTEXT_HEAD, MEMORY_ROW_HEAD)):
            texts.append(text)
    return texts


def _assistant_texts(body: dict[str, Any]) -> list[str]:
    return [t for m in _messages(body) if m.get("role") == "assistant" if (t := content_text(m.get("content")))]


# ------------------------------------------------------------------------------------------- recall reading


@dataclass
class RecalledEvent:
    id: str
    type: str
    status: str  # "current", "superseded", "disputed"
    title: str
    successor: str | None = None
    window: str | None = None  # "planned 2026-05-11–2026-05-17"
    replaces: str | None = None  # the event this one superseded: 'evt_1 “We use npm”'


@dataclass
class Recall:
    events: list[RecalledEvent] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)  # graph facts held today
    blocks: int = 0

    @property
    def empty(self) -> bool:
        return not (self.events or self.facts or self.blocks)


def _unquote(lines: list[str]) -> list[str]:
    """A quoted body's lines without the bar; the rendering rule's entities (``&lt;``) read back as characters."""
    return [html.unescape(ln[len(BAR) :].strip()) for ln in lines if ln.startswith(BAR) and ln[len(BAR) :].strip()]


def read_recall(text: str) -> Recall:
    """The memory section StrataGate put into the prompt (activation/render.py's layout), or an empty Recall."""
    start = text.find(MEMORY_OPEN)
    end = text.find(MEMORY_CLOSE, start + 1)
    recall = Recall()
    if start < 0 or end < 0:
        return recall
    lines = text[start + len(MEMORY_OPEN) : end].splitlines()
    index = 0
    while index < len(lines):
        line = lines[index].strip()
        body_end = index + 1
        while body_end < len(lines) and lines[body_end].startswith(BAR):
            body_end += 1
        body = _unquote(lines[index + 1 : body_end])
        if event := _EVENT_HEAD.match(line):
            labels = event.group(3)
            status = "superseded" if "SUPERSEDED" in labels else "disputed" if "DISPUTED" in labels else "current"
            successor = re.search(r"SUPERSEDED by (evt_\d+)", labels)
            window = _WINDOW.search(labels)
            replaces = _REPLACES.search(labels)
            recall.events.append(
                RecalledEvent(
                    id=event.group(1),
                    type=event.group(2),
                    status=status,
                    title=body[0] if body else "",
                    successor=successor.group(1) if successor else None,
                    window=f"{window.group(1)} {window.group(2)}" if window else None,
                    replaces=f"{replaces.group(1)} “{replaces.group(2)}”" if replaces else None,
                )
            )
        elif _NODE_HEAD.match(line):
            recall.facts.extend(body)
        elif _BLOCK_HEAD.match(line):
            recall.blocks += 1
        index = body_end
    return recall


# ------------------------------------------------------------------------------------------- replies


def is_chinese(text: str) -> bool:
    return len(_CJK.findall(text)) * 3 >= len(text.strip()) > 0 or bool(_CJK.search(text[:20]))


def _first_sentence(text: str) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    line = _FILLER_START.sub("", line).strip() or line
    sentence = _SENTENCE_END.split(line, maxsplit=1)[0]
    return sentence if len(sentence) <= RESTATE_CHARS else sentence[: RESTATE_CHARS - 1].rstrip() + "…"


def title_for(text: str) -> str:
    """A short, natural session title from the first user message: its first clause, a few words, no period."""
    sentence = _first_sentence(text).rstrip(".!?。！？…:：;；,，")
    clause = _CLAUSE_END.split(sentence, maxsplit=1)[0].strip() or sentence
    if not clause:
        return "New session"
    if is_chinese(clause):
        title = clause
        if len(title) > TITLE_CJK_CHARS:
            title = title[:TITLE_CJK_CHARS]
            title = re.sub(r"[A-Za-z0-9_-]+$", "", title).rstrip() or title  # no half Latin word at the end
    else:
        title = " ".join(clause.split()[:TITLE_WORDS])
    return title[0].upper() + title[1:]


def _event_line(ev: RecalledEvent, zh: bool) -> str:
    if zh:
        label = {"current": "当前", "superseded": "已被取代", "disputed": "有争议"}[ev.status]
        if ev.successor:
            label += f"（由 {ev.successor} 取代）"
    else:
        label = {"current": "current", "superseded": "superseded", "disputed": "disputed"}[ev.status]
        if ev.successor:
            label += f" by {ev.successor}"
    if ev.replaces:
        label += f"，取代了 {ev.replaces}" if zh else f", replaces {ev.replaces}"
    window = f", {ev.window}" if ev.window else ""
    return f"- {ev.title} ({ev.id}, {ev.type}, {label}{window})"


def _recall_lines(recall: Recall, zh: bool) -> list[str]:
    if recall.empty:
        if zh:
            return ["这一步的回忆还是空的：每封存一个块（若干轮对话），StrataGate 就按规则从中提取决定、偏好和计划。"]
        return [
            "Recall brought nothing for this step yet: once a block of turns is sealed, StrataGate extracts its "
            "decisions, preferences and plans by rule."
        ]
    lines = ["StrataGate 为这一步回忆了：" if zh else "StrataGate recalled for this step:"]
    lines.extend(_event_line(ev, zh) for ev in recall.events[:MAX_EVENTS_SHOWN])
    if recall.facts:
        joined = "；".join(recall.facts[:3]) if zh else "; ".join(recall.facts[:3])
        lines.append(f"- 知识图谱：{joined}" if zh else f"- knowledge graph: {joined}")
    if recall.blocks:
        lines.append(
            f"- 早先的对话块：{recall.blocks} 个" if zh else f"- earlier blocks of conversation: {recall.blocks}"
        )
    return lines


def agent_reply(body: dict[str, Any]) -> str:
    """The demo's answer to one agent step: what the user said, what StrataGate keeps, what recall brought."""
    users = _user_texts(body)
    newest = users[-1] if users else ""
    earlier = _assistant_texts(body)
    if NUDGE_MARK in newest and earlier:
        return earlier[-1]  # the shim's turn-end reminder: nothing new to say
    zh = is_chinese(newest)
    said = _first_sentence(newest)
    recall = read_recall(memory_text(body))
    parts: list[str] = []
    if not earlier:
        parts.append(
            "（离线演示模型：我不是真正的大模型，只复述你的话并展示记忆。"
            "设置 DEEPSEEK_API_KEY 后重新运行 npm start 即可接入 DeepSeek。）"
            if zh
            else "(Offline demo model: no real LLM here, I only restate what you say and show the memory. Set "
            "DEEPSEEK_API_KEY and run npm start again to talk to DeepSeek.)"
        )
    if said:
        parts.append(f"你说：“{said}”" if zh else f"You said: “{said}”")
    parts.append(
        "StrataGate 会在这一轮结束时保存它（原话与工具调用，零模型模式下由规则生成标题、摘要和事件）。"
        if zh
        else "StrataGate stores this turn when it ends (your words verbatim; titles, summaries and events are "
        "written by rule in zero-model mode)."
    )
    parts.append("\n".join(_recall_lines(recall, zh)))
    return "\n\n".join(parts)


def title_reply(body: dict[str, Any]) -> str:
    """The title of a session from DSH's title request (a JSON array of the human messages)."""
    text = "\n".join(content_text(m.get("content")) for m in _messages(body) if m.get("role") == "user")
    framed = text.split(TITLE_FRAME, 1)[1] if TITLE_FRAME in text else text
    try:
        first = _texts_of(json.loads(framed))
    except ValueError:
        first = framed
    return title_for(first)


def _texts_of(value: Any) -> str:
    """The first human message's text inside DSH's framed title input (message objects with content parts)."""
    if isinstance(value, list):
        return _texts_of(value[0]) if value else ""
    if isinstance(value, dict):
        for key in ("content", "text"):
            if key in value:
                inner = value[key]
                if isinstance(inner, list):
                    return " ".join(_texts_of(part) for part in inner if isinstance(part, dict | str))
                return _texts_of(inner)
        return ""
    return str(value) if value is not None else ""


def reply(body: dict[str, Any]) -> str:
    """The demo model's text for any chat-completions request."""
    return title_reply(body) if is_title_request(body) else agent_reply(body)
