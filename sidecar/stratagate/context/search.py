"""``search_context``: BM25 over this session's context archive (original nodes, cards, fold and block texts), with
each hit's expansion path from the outermost layer that holds it down to the raw node, e.g.
``f9(T3) → f4(T2) → c7 → s00042 (raw call call_abc)``.

A session's archive is small (thousands of nodes) and grows at every plan, so it is scored in memory per query with
the one tokenizer (``stratagate.text.terms``: Latin words, CJK bigrams, the same terms every other index uses) rather
than kept in another FTS index; bm25s is not installed and would add scipy for a few thousand documents, where
tokenizing dominates and is cached per text."""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from pydantic import BaseModel, ConfigDict, Field

from stratagate.context.records import Layer, Node, session_ref
from stratagate.context.restore import Archive, load_archive
from stratagate.protocol.types import Result
from stratagate.safety.inert import inert
from stratagate.storage.db import Database
from stratagate.text.terms import terms

K1 = 1.2
B = 0.75
SNIPPET = 200


class SearchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=2000, description="Words to look for in this session's history.")
    limit: int = Field(8, ge=1, le=50, description="Most hits to return.")


class Hit(Result):
    ref: str = Field(description="What to decompress to read it (a node s00042, a card c7, a fold f9, a block).")
    kind: str
    tier: int
    path: str = Field(description="From the outermost layer that holds it down to the hit.")
    snippet: str
    score: float
    tokens: int
    call_id: str | None = None


class SearchResult(Result):
    query: str
    hits: list[Hit]
    searched: int = Field(description="Archived texts searched.")
    text: str


@dataclass(frozen=True)
class Doc:
    ref: str
    kind: str
    tier: int
    text: str
    tokens: int
    node: Node | None = None
    layer: Layer | None = None


def documents(archive: Archive) -> list[Doc]:
    """Originals (no runtime snapshots, no checkpoints: their text is a layer's or DSH's summary) and every layer."""
    docs = [
        Doc(session_ref(n.seq), "raw", 0, n.text, n.tokens, node=n)
        for n in archive.by_seq.values()
        if n.kind not in ("runtime", "checkpoint") and n.seq not in archive.landed
    ]
    docs += [Doc(la.ref, la.kind, la.tier, la.text, la.tokens, layer=la) for la in archive.by_ref.values()]
    return docs


@lru_cache(maxsize=4096)
def _stats(text: str) -> tuple[Counter[str], int]:
    """A document's term counts and length. Archived texts never change, so a session's next search reuses them."""
    found = terms(text)
    return Counter(found), len(found)


def bm25(query: list[str], texts: list[str]) -> list[float]:
    """Okapi BM25 of each text for the query's terms (each distinct term once)."""
    n = len(texts)
    if not n or not query:
        return [0.0] * n
    stats = [_stats(t) for t in texts]
    avg = sum(length for _, length in stats) / n or 1.0
    wanted = set(query)
    df = {t: sum(1 for c, _ in stats if t in c) for t in wanted}
    scores = []
    for c, length in stats:
        score = 0.0
        for t in wanted:
            f = c.get(t, 0)
            if not f:
                continue
            idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
            score += idf * f * (K1 + 1) / (f + K1 * (1 - B + B * length / avg))
        scores.append(score)
    return scores


def parents(archive: Archive) -> dict[str, Layer]:
    """For each ref (a raw node or a layer) the layer directly above it: the lowest tier that covers it."""
    up: dict[str, Layer] = {}

    def offer(child: str, parent: Layer) -> None:
        if child == parent.ref:
            return
        best = up.get(child)
        if best is None or (parent.tier, parent.id) < (best.tier, best.id):
            up[child] = parent

    # Only what is (or is inside) the context now: landed layers, and the folded children they hold. A pending
    # layer has not replaced anything yet.
    placed = {la.ref for la in archive.by_ref.values() if la.state == "landed"}
    grew = True
    while grew:
        inner = {c for ref in placed for c in archive.by_ref[ref].children if c in archive.by_ref}
        grew = not inner <= placed
        placed |= inner
    for ref in placed:
        la = archive.by_ref[ref]
        for child in la.children:
            if child in archive.by_ref:
                offer(child, la)
        for seq in la.covers:
            layer = archive.landed.get(seq)
            if layer is not None:
                offer(layer.ref, la)
            elif seq in archive.by_seq:
                offer(session_ref(seq), la)
    return up


def label(doc_ref: str, archive: Archive) -> str:
    la = archive.by_ref.get(doc_ref)
    if la is None:
        return doc_ref
    if la.kind == "fold":
        return f"{la.ref}(T{la.tier})"
    if la.kind == "block" and la.level is not None:
        return f"{la.ref}(L{la.level})"
    return la.ref


def path(doc: Doc, archive: Archive, up: dict[str, Layer]) -> str:
    chain = [doc.ref]
    seen = {doc.ref}
    while (parent := up.get(chain[-1])) is not None and parent.ref not in seen:
        chain.append(parent.ref)
        seen.add(parent.ref)
    shown = [label(ref, archive) for ref in reversed(chain)]
    if doc.node is not None:
        n = doc.node
        what = f"raw call {inert(n.call_id, inline=True)}" if n.kind == "tool" and n.call_id else f"raw {n.kind}"
        shown[-1] = f"{shown[-1]} ({what})"
    return " → ".join(shown)


def snippet(text: str, query: list[str]) -> str:
    """The first line that holds a query term (≤ 200 characters), else the first non-empty line."""
    wanted = set(query)
    lines = [line for line in text.splitlines() if line.strip()]
    pick = next((line for line in lines if wanted & set(terms(line))), lines[0] if lines else "")
    return inert(pick.strip()[:SNIPPET], inline=True)


def render(query: str, hits: list[Hit], lang: str = "en") -> str:
    if not hits:
        if lang == "zh":
            return f"本会话的上下文存档中没有找到与“{inert(query, inline=True)}”相关的内容。"
        return f"Nothing in this session's context archive matches {inert(query, inline=True)!r}."
    head = (
        f"找到 {len(hits)} 条结果（用 decompress 加上编号即可读取原文）："
        if lang == "zh"
        else f"{len(hits)} hit{'s' if len(hits) != 1 else ''} (decompress a ref to read it):"
    )
    rows = [f"{i}. {h.path} — {h.snippet}" for i, h in enumerate(hits, 1)]
    return "\n".join([head, *rows])


async def search_context(
    db: Database, keys: tuple[int, int] | None, args: SearchArgs, lang: str = "en"
) -> SearchResult:
    if keys is None:
        return SearchResult(query=args.query, hits=[], searched=0, text=render(args.query, [], lang))
    archive = await load_archive(db, keys[1])
    docs = documents(archive)
    query = terms(args.query)
    # Tokenizing a long archive takes a while: off the event loop.
    scores = await asyncio.to_thread(bm25, query, [d.text for d in docs])
    ranked = sorted((s, i) for i, s in enumerate(scores) if s > 0)
    ranked.sort(key=lambda x: (-x[0], x[1]))
    up = parents(archive)
    hits = [
        Hit(
            ref=docs[i].ref,
            kind=docs[i].kind,
            tier=docs[i].tier,
            path=path(docs[i], archive, up),
            snippet=snippet(docs[i].text, query),
            score=round(s, 4),
            tokens=docs[i].tokens,
            call_id=node.call_id if (node := docs[i].node) is not None else None,
        )
        for s, i in ranked[: args.limit]
    ]
    return SearchResult(query=args.query, hits=hits, searched=len(docs), text=render(args.query, hits, lang))
