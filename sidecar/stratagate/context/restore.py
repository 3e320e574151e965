"""``decompress``: restore a replaced piece of this session's history from the archive, one tier at a time (a fold
gives its parts, a T1 fold its cards and raw nodes, a card the original tool output byte for byte, a block its next
level down) or straight to the originals (``full``). Nothing earlier in the context changes: the restored text is the
tool's result. Long restores go to a private file instead (``to_file``)."""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from stratagate.blocks.views import get_block
from stratagate.context.queries_views import layers, nodes
from stratagate.context.records import Layer, Node, session_ref
from stratagate.erase.scrubber import ERASED_ARCHIVE
from stratagate.errors import NOT_FOUND, DomainError
from stratagate.events.forgotten import load, shown_view
from stratagate.protocol.types import Result
from stratagate.safety.inert import inert
from stratagate.safety.secrets import placeholder_clause, placeholder_count
from stratagate.storage.db import Database

INLINE_CAP = 24_000
"""Most characters a restore returns inline; beyond that only ``to_file`` gives the whole text."""

_SESSION_REF = re.compile(r"^s(\d{1,12})$")


class UnknownRef(DomainError):
    code = NOT_FOUND


class DecompressArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(
        min_length=1,
        max_length=256,
        description="What to restore: a card 'c7', a fold 'f9', a block layer 'blk_3', a session node 's00042' or a "
        "tool call id (the ref a replacement's tag line names).",
    )
    full: bool = Field(False, description="Go straight to the original nodes instead of one tier down.")
    to_file: bool = Field(
        False,
        description=f"Write the restored text to a private file and return its path (for more than {INLINE_CAP:,} "
        "characters).",
    )


class Part(Result):
    """One restored piece; its text is ``text[offset:offset + length]`` of the result (when inline)."""

    ref: str
    kind: str = Field(description="raw, card, fold, block or view (a block at a level).")
    tier: int
    level: int | None = None
    seq: int | None = None
    call_id: str | None = None
    tool: str | None = None
    tokens: int
    offset: int
    length: int


class DecompressResult(Result):
    id: str
    kind: str
    tier: int
    level: int | None = None
    full: bool
    text: str = Field(description="The restored text (verbatim from the archive; empty when written to a file).")
    placeholders: int = Field(
        0, description="Secret placeholders in the whole restored text: 0 means it is the original byte for byte."
    )
    parts: list[Part]
    chars: int = Field(description="Length of the whole restored text.")
    truncated: bool
    file: str | None = None
    note: str


@dataclass(frozen=True)
class Piece:
    ref: str
    kind: str
    tier: int
    text: str
    tokens: int
    level: int | None = None
    seq: int | None = None
    call_id: str | None = None
    tool: str | None = None


def landed_by_replacement(all_layers: list[Layer]) -> dict[int, Layer]:
    """Layers that landed by the seq of their replacement node (how a node maps back to its layer), including those
    a later fold took in since (``superseded`` after landing: they are still its parts)."""
    return {
        la.replacement_seq: la
        for la in all_layers
        if la.replacement_seq is not None and la.state in ("landed", "superseded")
    }


@dataclass
class Archive:
    """One session's archive, loaded once per call."""

    by_seq: dict[int, Node]
    layers: list[Layer]

    def __post_init__(self) -> None:
        live = [la for la in self.layers if la.state != "dropped"]
        self.by_ref = {la.ref: la for la in live}
        self.landed = landed_by_replacement(self.layers)
        self.by_call: dict[str, Node] = {}
        for n in self.by_seq.values():  # a card's replacement repeats its call id: the original comes first
            if n.kind == "tool" and n.call_id and n.seq not in self.landed:
                self.by_call.setdefault(n.call_id, n)


async def load_archive(db: Database, session_id: int) -> Archive:
    return Archive({n.seq: n for n in await nodes(db, session_id)}, await layers(db, session_id))


def raw_piece(node: Node) -> Piece:
    return Piece(
        ref=session_ref(node.seq),
        kind="raw",
        tier=0,
        text=node.text,
        tokens=node.tokens,
        seq=node.seq,
        call_id=node.call_id,
        tool=node.tool_name,
    )


def layer_piece(layer: Layer) -> Piece:
    return Piece(
        ref=layer.ref,
        kind=layer.kind,
        tier=layer.tier,
        text=layer.text,
        tokens=layer.tokens,
        level=layer.level,
        seq=layer.replacement_seq,
    )


def originals(archive: Archive, layer: Layer, seen: frozenset[str] = frozenset()) -> list[Piece]:
    """The original nodes under ``layer``, in order: landed replacements inside it are opened recursively."""
    out: list[Piece] = []
    covers = layer.covers or ([layer.start_seq] if layer.start_seq == layer.end_seq else [])
    for seq in covers:
        inner = archive.landed.get(seq)
        if inner is not None and inner.ref not in seen and inner.ref != layer.ref:
            out.extend(originals(archive, inner, seen | {layer.ref}))
        elif seq in archive.by_seq:
            out.append(raw_piece(archive.by_seq[seq]))
    return out


def one_tier_down(archive: Archive, layer: Layer) -> list[Piece]:
    """A fold's direct parts: each landed layer it covers as that layer's text, a folded (superseded) child fold once,
    every other node raw."""
    children = [archive.by_ref[c] for c in layer.children if c in archive.by_ref]
    folded = {seq: child for child in children if child.state == "superseded" for seq in child.covers}
    out: list[Piece] = []
    shown: set[str] = set()
    for seq in layer.covers:
        inner = archive.landed.get(seq)
        child = inner if inner is not None and inner.ref != layer.ref else folded.get(seq)
        if child is not None:
            if child.ref not in shown:
                shown.add(child.ref)
                out.append(layer_piece(child))
        elif seq in archive.by_seq:
            out.append(raw_piece(archive.by_seq[seq]))
    return out


def resolve(archive: Archive, ref: str) -> Layer | Node:
    """The layer or archived node ``ref`` names in this session, else UnknownRef (other sessions' refs included)."""
    key = ref.strip()
    if key in archive.by_ref:
        return archive.by_ref[key]
    m = _SESSION_REF.match(key)
    if m and int(m.group(1)) in archive.by_seq:
        return archive.by_seq[int(m.group(1))]
    if key in archive.by_call:
        return archive.by_call[key]
    raise UnknownRef(
        f"unknown ref {ref!r}: no card, fold, block layer, session node or tool call of this session has it "
        "(refs are c7, f9, blk_3, s00042 or a tool call id; memory_context_status lists them)"
    )


def join(pieces: list[Piece]) -> tuple[str, list[Part]]:
    """One piece: its text exactly. Several: each behind a header line naming it."""
    if len(pieces) == 1:
        p = pieces[0]
        return p.text, [_part(p, 0, len(p.text))]
    chunks: list[str] = []
    parts: list[Part] = []
    at = 0
    for p in pieces:
        head = _header(p) + "\n"
        chunks.append(head)
        at += len(head)
        parts.append(_part(p, at, len(p.text)))
        chunks.append(p.text + "\n\n")
        at += len(p.text) + 2
    return "".join(chunks), parts


def _header(p: Piece) -> str:
    what = p.kind if p.kind != "fold" else f"fold T{p.tier}"
    if p.kind == "view" and p.level is not None:
        what = f"block view L{p.level}"
    fields = [f"[stratagate:part {p.ref}", what]
    if p.tool:
        fields.append(inert(p.tool, inline=True))
    if p.call_id:
        fields.append("call " + inert(p.call_id, inline=True))
    fields.append(f"{p.tokens} tokens]")
    return " · ".join(fields)


def _part(p: Piece, offset: int, length: int) -> Part:
    return Part(
        ref=p.ref,
        kind=p.kind,
        tier=p.tier,
        level=p.level,
        seq=p.seq,
        call_id=p.call_id,
        tool=p.tool,
        tokens=p.tokens,
        offset=offset,
        length=length,
    )


async def pieces_of(
    db: Database, archive: Archive, target: Layer | Node, namespace_id: int, session_id: int, full: bool, lam: float
) -> list[Piece]:
    if isinstance(target, Node):
        return [raw_piece(target)]
    if full or target.kind == "card":
        return originals(archive, target)
    if target.kind == "fold":
        return one_tier_down(archive, target)
    # A block layer: its next level down, the originals once that is L5.
    level = (target.level if target.level is not None else 4) + 1
    if level >= 5 or target.block_id is None:
        return originals(archive, target)
    block = await get_block(db, namespace_id, target.block_id, lam)
    view = await shown_view(db, block, level, await load(db, namespace_id, session_id))
    return [Piece(ref=target.ref, kind="view", tier=0, text=view, tokens=block.tokens_at(level), level=level)]


def restore_path(data_dir: Path, namespace: str, session: str, ref: str, full: bool) -> Path:
    """``<data dir>/restore/<hash of namespace+session>/<ref>.txt``: the session key is not spelled out on disk."""
    key = hashlib.sha256(f"{namespace}\0{session}".encode()).hexdigest()[:16]
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", ref)[:64] + (".full" if full else "") + ".txt"
    return data_dir / "restore" / key / name


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` as a 0600 file in 0700 folders (created or tightened)."""
    for folder in (path.parent.parent, path.parent):
        folder.mkdir(mode=0o700, exist_ok=True)
        os.chmod(folder, 0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            fd = -1
            f.write(text)
    finally:
        if fd != -1:
            os.close(fd)


async def decompress(
    db: Database,
    *,
    namespace: str,
    session: str,
    keys: tuple[int, int] | None,
    args: DecompressArgs,
    data_dir: Path,
    lam: float,
) -> DecompressResult:
    if keys is None:
        raise UnknownRef(f"unknown ref {args.id!r}: this session has no context archive yet")
    namespace_id, session_id = keys
    archive = await load_archive(db, session_id)
    target = resolve(archive, args.id)
    pieces = await pieces_of(db, archive, target, namespace_id, session_id, args.full, lam)
    text, parts = join(pieces)
    if isinstance(target, Node):
        ref, kind, tier, level = session_ref(target.seq), "raw", 0, None
    else:
        ref, kind, tier, level = target.ref, target.kind, target.tier, target.level
    secrets = placeholder_count(text)
    result = {"id": ref, "kind": kind, "tier": tier, "level": level, "full": args.full, "parts": parts,
              "placeholders": secrets}
    what = f"{len(parts)} part{'s' if len(parts) != 1 else ''}"
    # Said in every note: whether the text is the original byte for byte or holds placeholders where secrets were.
    honest = f" The text is {placeholder_clause(secrets)}." if secrets else ""
    erased = sum(1 for p in pieces if p.text == ERASED_ARCHIVE)
    if erased:  # an erase blanked it (stratagate/erase/archive.py): nothing of the original is left to restore
        honest += f" {erased} of the {what} {'was' if erased == 1 else 'were'} erased for good and cannot be restored."
    if args.to_file:
        path = restore_path(data_dir, namespace, session, ref, args.full)
        write_private(path, text)
        note = f"{ref}: {what}, {len(text):,} characters written to {path} (private file).{honest}"
        return DecompressResult(**result, text="", chars=len(text), truncated=False, file=str(path), note=note)
    if len(text) > INLINE_CAP:
        note = (
            f"{ref}: {what}; the first {INLINE_CAP:,} of {len(text):,} characters are shown. "
            f'decompress("{ref}", to_file=true) writes the whole text to a file.{honest}'
        )
        return DecompressResult(**result, text=text[:INLINE_CAP], chars=len(text), truncated=True, note=note)
    if erased and kind in ("card", "raw"):
        note = f"{ref}: erased for good; the original cannot be restored."
    elif kind == "card" or (kind == "raw"):
        note = f"{ref}: the original output, {placeholder_clause(secrets)}."
    elif args.full:
        note = f"{ref}: the {what} it replaced, as originally seen.{honest}"
    else:
        note = f"{ref}: {what}, one tier down; decompress a part's ref to go further, or full=true for the originals."
        note += honest
    return DecompressResult(**result, text=text, chars=len(text), truncated=False, note=note)
