"""The context engine's figures in plain words for ``/memory detail``: what the surface holds by layer, the cache hit
rate, what could be folded and what waits to land, the archive, the last plan. Ranges are counted in messages and
tokens; their refs (``s00007–s00009``) and layer ids appear only when asked (``/memory detail refs``), because they
mean something only to ``decompress``."""

from __future__ import annotations

import re

from stratagate.context.last_recall import Lang
from stratagate.context.status import Pending, Range, StatusResult, fmt

_REF = re.compile(r"\s*\(?\b(?:s\d{5}(?:[–-]s\d{5})?|[fcb]\d+)\b\)?")
_KIND_ZH = {"fold": "折叠", "card": "工具卡片", "block": "记忆块视图", "digest": "摘要"}


def _size(n: int) -> str:
    return f"{n / 1_000_000:.1f} MB" if n >= 1_000_000 else f"{n / 1000:.1f} KB" if n >= 1000 else f"{n} B"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _span(start: str, end: str) -> str:
    return start if start == end else f"{start}–{end}"


def _range(r: Range, refs: bool, lang: Lang) -> str:
    where = f" ({_span(r.start, r.end)})" if refs else ""
    if lang == "zh":
        return f"    {r.nodes} 条消息，{fmt(r.tokens)} 个 token{where}"
    return f"    {_plural(r.nodes, 'message')}, {fmt(r.tokens)} tokens{where}"


def _pending(p: Pending, refs: bool, lang: Lang) -> str:
    tier = f" T{p.tier}" if p.kind == "fold" else ""
    where = f" ({p.ref}: {_span(p.start, p.end)})" if refs else ""
    if lang == "zh":
        return (
            f"    一个{_KIND_ZH.get(p.kind, p.kind)}{tier}：{fmt(p.shadowed_tokens)} → {fmt(p.tokens)} 个 token，"
            f"已等待 {p.deferrals} 次回合结束{where}"
        )
    return (
        f"    a {p.kind}{tier}: {fmt(p.shadowed_tokens)} → {fmt(p.tokens)} tokens, waited "
        f"{_plural(p.deferrals, 'turn end')}{where}"
    )


def plain(text: str) -> str:
    """An engine sentence without its internal refs."""
    return _REF.sub("", text).strip()


def engine_lines(s: StatusResult, refs: bool, lang: Lang) -> list[str]:
    if not s.archive.nodes:
        return []
    lay, t = s.layers, s.tiers
    zh = lang == "zh"
    lines = ["上下文引擎：" if zh else "Context engine:"]
    if zh:
        lines.append(
            f"  当前内容：原文 {fmt(lay['raw'])}，工具卡片 {s.cards} 张共 {fmt(lay['card'])}，"
            f"记忆块 {fmt(lay['block'])}，"
            f"折叠 {fmt(lay['fold'])}（T1 {fmt(t['T1'])}，T2 {fmt(t['T2'])}，T3 {fmt(t['T3'])}）"
            + (f"，DSH 摘要 {fmt(lay['summary'])}" if lay["summary"] else "") + "。"
        )
    else:
        lines.append(
            f"  On the surface: original messages {fmt(lay['raw'])}, {_plural(s.cards, 'tool card')} "
            f"{fmt(lay['card'])}, block views {fmt(lay['block'])}, folds {fmt(lay['fold'])} (T1 {fmt(t['T1'])}, "
            f"T2 {fmt(t['T2'])}, T3 {fmt(t['T3'])})"
            + (f", DSH summary {fmt(lay['summary'])}" if lay["summary"] else "")
            + " tokens."
        )
    if s.cache.hit_rate is not None:
        rate = f"{100 * s.cache.hit_rate:.0f}"
        lines.append(
            f"  前缀缓存：上一次请求的提示词有 {rate}% 命中缓存。" if zh
            else f"  Prefix cache: {rate} % of the last request's prompt was a cache hit."
        )
    if s.last_change is not None:
        label = s.last_change.label if refs else plain(s.last_change.label)
        lines.append(f"  最近一次变化：{label}。" if zh else f"  Last change: {label}.")
    lines.append(
        f"  可折叠：受保护区域之外有 {len(s.foldable)} 段，共 {fmt(s.foldable_tokens)} 个 token；"
        f"待生效的替换 {len(s.pending)} 个。"
        if zh
        else f"  Foldable now: {fmt(s.foldable_tokens)} tokens in {_plural(len(s.foldable), 'range')} outside the "
        f"protected region; {_plural(len(s.pending), 'replacement')} waiting to land."
    )
    lines += [_range(r, refs, lang) for r in s.foldable]
    lines += [_pending(p, refs, lang) for p in s.pending]
    a = s.archive
    lines.append(
        f"  存档：{a.nodes} 条原始消息，{_size(a.bytes)}，{a.layers} 个替换层（都可还原）。" if zh
        else f"  Archive: {_plural(a.nodes, 'original message')}, {_size(a.bytes)}, {_plural(a.layers, 'layer')} "
        "(all restorable)."
    )
    if s.decision:
        decision = s.decision if refs else plain(s.decision)
        lines.append(f"  最近一次规划：{decision}" if zh else f"  Last plan: {decision}")
    if not refs:
        lines.append("  （/memory detail refs 会显示可用 decompress 还原的编号）" if zh
                     else "  (/memory detail refs shows the refs decompress takes)")
    return lines
