"""The words of ``/memory status``, ``/memory detail`` and ``/memory recall``, in English or Chinese: long-term
memory first (events, blocks, graph, the last recall and why, jobs), then the context window in one plain line.
``detail`` adds the context engine's figures in plain words; its internal refs (``s00007–s00009``, ``f3``) only when
asked (``/memory detail refs``). The context line is the provider's count, the same figure DSH's own gauge shows."""

from __future__ import annotations

from stratagate.blocks.render import LEVEL_LABELS
from stratagate.context.last_recall import Lang, LastRecall
from stratagate.context.memory_counts import MemoryCounts
from stratagate.context.recalled import STATUS_WORDS, status_word, why
from stratagate.context.status import StatusResult, fmt
from stratagate.safety.inert import inert

STATUS_ITEMS = 6
QUERY_SHOWN = 80

_LEVELS_ZH = {0: "L0 标题", 1: "L1 摘要", 2: "L2 要点", 3: "L3 精简原文", 4: "L4 近原文", 5: "L5 原文"}
def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _quoted(text: str, limit: int = QUERY_SHOWN) -> str:
    text = " ".join(text.split())
    return inert(text if len(text) <= limit else text[: limit - 1] + "…", inline=True)


def _events(c: MemoryCounts, lang: Lang) -> str:
    words = STATUS_WORDS[lang]
    parts = [f"{n} {words[s]}" if lang == "en" else f"{words[s]} {n} 条" for s, n in c.events.items() if n]
    if lang == "zh":
        return f"事件：共 {c.event_total} 条" + (f"（{'，'.join(parts)}）" if parts else "") + "。"
    return f"Events: {c.event_total}" + (f" ({', '.join(parts)})" if parts else "") + "."


def _blocks(c: MemoryCounts, lang: Lang) -> str:
    total = sum(c.blocks.values())
    ready, pending = c.blocks.get("ready", 0), c.blocks.get("pending", 0)
    levels = sorted(c.levels.items())
    if lang == "zh":
        line = f"记忆块：共 {total} 个（{ready} 个已就绪，{pending} 个正在生成摘要）"
        if levels:
            line += "；按当前层级：" + "，".join(f"{_LEVELS_ZH[lv]} {n} 个" for lv, n in levels)
        return line + "。"
    line = f"Blocks: {total} ({ready} ready, {pending} being summarised)"
    if levels:
        line += "; shown at " + ", ".join(f"{LEVEL_LABELS[lv]} ×{n}" for lv, n in levels)
    return line + "."


def _graph(c: MemoryCounts, lang: Lang) -> str:
    if lang == "zh":
        return f"知识图谱：{c.nodes} 个节点，{c.facts} 条当前事实。"
    return f"Graph: {_plural(c.nodes, 'node')}, {_plural(c.facts, 'current fact')}."


def _jobs(c: MemoryCounts, lang: Lang) -> str:
    q, r, f = c.jobs.get("queued", 0), c.jobs.get("running", 0), c.jobs.get("failed", 0)
    if lang == "zh":
        return f"后台任务：{q} 个排队，{r} 个运行中，{f} 个失败。"
    return f"Background jobs: {q} queued, {r} running, {f} failed."


def _item_line(item_id: str, status: str, title: str, reason: str) -> str:
    return f"{item_id} · {status} · “{inert(title, inline=True)}” — {reason}"


def recall_lines(last: LastRecall | None, lang: Lang, limit: int | None = None) -> list[str]:
    """The last recall: when, for what, and each item with its status and why ("" lines never)."""
    if last is None:
        return [
            "最近一次回忆：本会话还没有回忆（或 StrataGate 重启后还没有新的一步）。"
            if lang == "zh"
            else "Last recall: none yet in this session (or none since StrataGate restarted)."
        ]
    at = last.at[:16].replace("T", " ")
    nothing = "（没有可检索的词）" if lang == "zh" else "(no words)"
    asked = f"“{_quoted(last.query)}”" if last.query.strip() else nothing
    if not last.items:
        return [
            f"最近一次回忆（{at} UTC，针对 {asked}）：没有相关的记忆。"
            if lang == "zh"
            else f"Last recall ({at} UTC, for {asked}): nothing relevant was recalled."
        ]
    shown = last.items if limit is None else last.items[:limit]
    head = (
        f"最近一次回忆（{at} UTC，针对 {asked}）：{len(last.items)} 条"
        if lang == "zh"
        else f"Last recall ({at} UTC, for {asked}): {_plural(len(last.items), 'item')}"
    )
    lines = [head]
    for i in shown:
        lines.append("  " + _item_line(i.id, status_word(i.status, lang), i.title, why(lang, i.reason, i.words)))
    if len(shown) < len(last.items):
        more = len(last.items) - len(shown)
        lines.append(f"  …另有 {more} 条（/memory recall）" if lang == "zh" else f"  … {more} more (/memory recall)")
    return lines


def context_line(s: StatusResult, lang: Lang) -> str:
    """The context window in one plain line; DSH's gauge shows the same provider count."""
    if not s.archive.nodes:
        return (
            "上下文窗口：StrataGate 尚未接管本会话的上下文（用量见 DSH 输入框旁的上下文指示）。"
            if lang == "zh"
            else "Context window: not managed by StrataGate yet (DSH's context gauge by the input shows its use)."
        )
    share = f"（{100 * s.used_tokens / s.window:.0f}%）" if s.window and lang == "zh" else ""
    if lang == "zh":
        window = f" / {fmt(s.window)}" if s.window else ""
        return (
            f"上下文窗口：已用 {fmt(s.used_tokens)}{window} 个 token{share}；"
            f"StrataGate 的替换让每次请求少用 {fmt(s.saved_tokens)} 个 token。"
        )
    window = f" of {fmt(s.window)}" if s.window else ""
    pct = f" ({100 * s.used_tokens / s.window:.0f} %)" if s.window else ""
    return (
        f"Context window: {fmt(s.used_tokens)}{window} tokens used{pct}; StrataGate's replacements save "
        f"{fmt(s.saved_tokens)} tokens on every request."
    )


def status_text(c: MemoryCounts, last: LastRecall | None, s: StatusResult, lang: Lang) -> str:
    head = "StrataGate 记忆（本项目）" if lang == "zh" else "StrataGate memory (this project)"
    more = (
        "更多：/memory detail（详情）· /memory recall（回忆）· /memory search <词语>（搜索）"
        if lang == "zh"
        else "More: /memory detail · /memory recall · /memory search <words>"
    )
    return "\n".join([
        head, _events(c, lang), _blocks(c, lang), _graph(c, lang), *recall_lines(last, lang, STATUS_ITEMS),
        _jobs(c, lang), context_line(s, lang), more,
    ])
