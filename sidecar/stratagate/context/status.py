"""``memory_context_status`` / ``context.status``: what this session's context holds now (tokens per layer and per
fold tier, foldable ranges with their refs, pending layers), what the engine saved, the prefix-cache hit rate the
provider reported, the archive's size, and the last change as the composer dock shows it (``label``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from stratagate.context.landing import change_label
from stratagate.context.plan import protected_region
from stratagate.context.queries_views import archive_size, layers, session_state
from stratagate.context.queries_views import surface as load_surface
from stratagate.context.records import Layer, session_ref
from stratagate.context.settings import ContextSettings
from stratagate.context.surface import Surface, SurfaceNode
from stratagate.protocol.types import Name, Result
from stratagate.storage.db import Database

Lang = Literal["en", "zh"]
MAX_RANGES = 12


class StatusArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    detail: bool = Field(False, description="Also list the foldable ranges and pending layers one by one.")


class StatusParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    namespace: Name
    session: Name
    detail: bool = False
    lang: Lang = "en"


class Range(Result):
    start: str
    end: str
    nodes: int
    tokens: int


class Pending(Result):
    ref: str
    kind: str
    tier: int
    start: str
    end: str
    tokens: int
    shadowed_tokens: int
    deferrals: int


class LastChange(Result):
    kind: str
    tier: int | None = None
    saved: int
    label: str = Field(description="The composer dock's text, e.g. 'Fold T1 −23.3K'.")
    layers: int | None = Field(None, description="Layers in that batch.")
    at: str | None = None


class Cache(Result):
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    hit_rate: float | None = Field(None, description="cached / prompt tokens of the latest request (0–1).")


class Archived(Result):
    nodes: int
    bytes: int
    layers: int


class StatusResult(Result):
    session: str
    window: int | None
    used_tokens: int
    used_source: Literal["provider", "local"]
    layers: dict[str, int] = Field(description="Surface tokens by layer: raw, card, block, fold, summary, runtime.")
    tiers: dict[str, int] = Field(description="Surface tokens of landed folds by tier (T1–T3).")
    cards: int
    saved_tokens: int = Field(description="Tokens the landed layers save on every request (shadowed − replacement).")
    foldable_tokens: int
    foldable: list[Range]
    pending: list[Pending]
    cache: Cache
    archive: Archived
    last_change: LastChange | None
    decision: str | None = None
    text: str


def _n(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def fmt(tokens: int) -> str:
    return f"{tokens / 1000:.1f}K" if abs(tokens) >= 1000 else str(tokens)


def what(n: SurfaceNode) -> str:
    """Which layer a surface node counts under: raw, card, block, fold, summary (DSH's own) or runtime."""
    if n.layer is not None:
        return n.layer.kind
    if n.foreign_summary:
        return "summary"
    return "runtime" if n.kind == "runtime" else "raw"


def _ref(n: SurfaceNode) -> str:
    return n.layer.ref if n.layer is not None else session_ref(n.seq)


def foldable_ranges(surface: Surface, window: int | None, settings: ContextSettings) -> list[Range]:
    """Runs of whole atoms (a tool round, or one other node) a ``compress`` could take: outside the protected region,
    runtime snapshots and pending layers."""
    guarded = protected_region(surface, window or 0, settings)
    held = {s for la in surface.layers if la.state == "pending" for s in la.covers}
    out: list[Range] = []
    run: list[SurfaceNode] = []

    def close() -> None:
        if run and sum(x.tokens for x in run) > 0:
            out.append(Range(start=_ref(run[0]), end=_ref(run[-1]), nodes=len(run), tokens=sum(x.tokens for x in run)))
        run.clear()

    for a, b in surface.atoms:
        atom = surface.nodes[a : b + 1]
        if guarded.reason(a, b) is not None or any(n.kind == "runtime" or n.seq in held for n in atom):
            close()
        else:
            run.extend(atom)
    close()
    return out


def last_change(all_layers: list[Layer], state: dict[str, Any]) -> LastChange | None:
    """What context.landed recorded for the last landing, else (a landing before that record existed) the newest
    landed batch in the archive, labelled the same way."""
    recorded = state.get("last_change")
    if isinstance(recorded, dict) and isinstance(recorded.get("label"), str):
        try:
            return LastChange.model_validate(recorded)
        except ValueError:
            pass
    landed = [la for la in all_layers if la.state == "landed" and la.landed_at]
    if not landed:
        return None
    at = max(la.landed_at or "" for la in landed)
    return LastChange.model_validate({**change_label([la for la in landed if la.landed_at == at]), "at": at})


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


async def context_status(
    db: Database,
    session: str,
    keys: tuple[int, int] | None,
    settings: ContextSettings,
    *,
    detail: bool = False,
    lang: Lang = "en",
) -> StatusResult:
    state: dict[str, Any] = {}
    surface: Surface | None = None
    all_layers: list[Layer] = []
    size = Archived(nodes=0, bytes=0, layers=0)
    if keys is not None:
        state = await session_state(db, keys[1])
        surface = await load_surface(db, keys[1])
        all_layers = surface.layers if surface is not None else await layers(db, keys[1])
        a = await archive_size(db, keys[1])
        size = Archived(nodes=a.nodes, bytes=a.bytes, layers=a.layers)
    nodes = surface.nodes if surface is not None else []
    window = _int(state.get("window"))
    usage = got if isinstance(got := state.get("usage"), dict) else {}
    prompt, cached = _int(usage.get("prompt_tokens")), _int(usage.get("cached_tokens"))
    by_layer = dict.fromkeys(("raw", "card", "block", "fold", "summary", "runtime"), 0)
    tiers = {"T1": 0, "T2": 0, "T3": 0}
    for n in nodes:
        by_layer[what(n)] += n.tokens
        if n.layer is not None and n.layer.kind == "fold":
            tiers[f"T{max(1, min(3, n.layer.tier))}"] += n.tokens
    local = sum(by_layer.values()) + (_int(state.get("overhead")) or 0)
    used = prompt if prompt is not None else _int(state.get("used")) or local
    ranges = foldable_ranges(surface, window, settings) if surface is not None else []
    landed = [la for la in all_layers if la.state == "landed"]
    result = StatusResult(
        session=session,
        window=window,
        used_tokens=used,
        used_source="provider" if prompt is not None else "local",
        layers=by_layer,
        tiers=tiers,
        cards=sum(1 for n in nodes if what(n) == "card"),
        saved_tokens=sum(max(0, la.shadowed_tokens - la.tokens) for la in landed),
        foldable_tokens=sum(r.tokens for r in ranges),
        foldable=ranges if detail else ranges[-MAX_RANGES:],
        pending=[
            Pending(
                ref=la.ref,
                kind=la.kind,
                tier=la.tier,
                start=session_ref(la.start_seq),
                end=session_ref(la.end_seq),
                tokens=la.tokens,
                shadowed_tokens=la.shadowed_tokens,
                deferrals=la.deferrals,
            )
            for la in all_layers
            if la.state == "pending"
        ],
        cache=Cache(
            prompt_tokens=prompt,
            cached_tokens=cached,
            hit_rate=round(cached / prompt, 4) if prompt and cached is not None else None,
        ),
        archive=size,
        last_change=last_change(all_layers, state),
        decision=state.get("decision") if isinstance(state.get("decision"), str) else None,
        text="",
    )
    result.text = render(result, detail, lang)
    return result


def _size(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f} MB"
    if n >= 1000:
        return f"{n / 1000:.1f} KB"
    return f"{n} B"


def render(s: StatusResult, detail: bool, lang: Lang) -> str:
    return _zh(s, detail) if lang == "zh" else _en(s, detail)


def _en(s: StatusResult, detail: bool) -> str:
    if not s.archive.nodes:
        return "This session's context is not managed yet: nothing has been archived so far."
    window = f" of {fmt(s.window)}" if s.window else ""
    share = f" ({100 * s.used_tokens / s.window:.0f} %)" if s.window else ""
    source = "as the provider counted it" if s.used_source == "provider" else "counted locally"
    lines = [f"Context: {fmt(s.used_tokens)}{window} tokens used{share}, {source}."]
    if s.cache.hit_rate is not None:
        lines.append(f"Prefix cache: {100 * s.cache.hit_rate:.0f} % of the last request's prompt was a cache hit.")
    lay = s.layers
    lines.append(
        f"On the surface: raw {fmt(lay['raw'])}, {_n(s.cards, 'tool card')} {fmt(lay['card'])}, "
        f"blocks {fmt(lay['block'])}, "
        f"folds {fmt(lay['fold'])} (T1 {fmt(s.tiers['T1'])}, T2 {fmt(s.tiers['T2'])}, T3 {fmt(s.tiers['T3'])})"
        + (f", DSH summary {fmt(lay['summary'])}" if lay["summary"] else "")
        + "."
    )
    change = f" Last change: {s.last_change.label}." if s.last_change else ""
    lines.append(f"Replacements save {fmt(s.saved_tokens)} tokens on every request.{change}")
    lines.append(
        f"Foldable now: {fmt(s.foldable_tokens)} tokens in {_n(len(s.foldable), 'range')} outside the protected "
        f"region; {_n(len(s.pending), 'layer')} pending."
    )
    lines.append(f"Archive: {_n(s.archive.nodes, 'node')}, {_size(s.archive.bytes)}, {_n(s.archive.layers, 'layer')}.")
    if s.decision:
        lines.append(f"Last plan: {s.decision}")
    if detail:
        lines += [f"  foldable {r.start}–{r.end}: {_n(r.nodes, 'node')}, {fmt(r.tokens)} tokens" for r in s.foldable]
        lines += [
            f"  pending {p.ref} ({p.kind}{f' T{p.tier}' if p.kind == 'fold' else ''}) {p.start}–{p.end}: "
            f"{fmt(p.shadowed_tokens)} → {fmt(p.tokens)} tokens, waited {_n(p.deferrals, 'turn end')}"
            for p in s.pending
        ]
    return "\n".join(lines)


def _zh(s: StatusResult, detail: bool) -> str:
    if not s.archive.nodes:
        return "本会话的上下文尚未由 StrataGate 管理，目前还没有存档任何内容。"
    window = f" / {fmt(s.window)}" if s.window else ""
    share = f"（占 {100 * s.used_tokens / s.window:.0f}%）" if s.window else ""
    source = "按服务商的统计" if s.used_source == "provider" else "按本地计数"
    lines = [f"上下文：已用 {fmt(s.used_tokens)}{window} 个 token{share}，{source}。"]
    if s.cache.hit_rate is not None:
        lines.append(f"前缀缓存：上一次请求的提示词有 {100 * s.cache.hit_rate:.0f}% 命中缓存。")
    lay = s.layers
    summary = f"，DSH 摘要 {fmt(lay['summary'])}" if lay["summary"] else ""
    lines.append(
        f"当前内容：原文 {fmt(lay['raw'])}，工具卡片 {s.cards} 张共 {fmt(lay['card'])}，记忆块 {fmt(lay['block'])}，"
        f"折叠 {fmt(lay['fold'])}（T1 {fmt(s.tiers['T1'])}，T2 {fmt(s.tiers['T2'])}，"
        f"T3 {fmt(s.tiers['T3'])}）{summary}。"
    )
    change = f"最近一次变化：{s.last_change.label}。" if s.last_change else ""
    lines.append(f"已替换的内容让每次请求少用 {fmt(s.saved_tokens)} 个 token。{change}")
    lines.append(
        f"可折叠：受保护区域之外还有 {len(s.foldable)} 段、共 {fmt(s.foldable_tokens)} 个 token；"
        f"待生效的替换有 {len(s.pending)} 个。"
    )
    lines.append(f"存档：{s.archive.nodes} 个节点，{_size(s.archive.bytes)}，{s.archive.layers} 个替换层。")
    if s.decision:
        lines.append(f"最近一次规划：{s.decision}")
    if detail:
        lines += [f"  可折叠 {r.start}–{r.end}：{r.nodes} 个节点，{fmt(r.tokens)} 个 token" for r in s.foldable]
        lines += [
            f"  待生效 {p.ref}（{p.kind}{f' T{p.tier}' if p.kind == 'fold' else ''}）{p.start}–{p.end}："
            f"{fmt(p.shadowed_tokens)} → {fmt(p.tokens)} 个 token，已等待 {p.deferrals} 次回合结束"
            for p in s.pending
        ]
    return "\n".join(lines)
