"""Rows of the context engine's tables as typed records (context_nodes, context_layers), shared by the planner and
the agent tools. The SQL that reads and writes them is in context/queries.py."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

Kind = str  # 'user' | 'assistant' | 'tool' | 'runtime' | 'checkpoint' | 'other'

RUNTIME_PLUGIN = "@deepseek-ai/dsh-system-prompt"
RUNTIME_PLACEHOLDER = "[runtime context omitted]"
TAG_PREFIX = "[stratagate:"


def session_ref(seq: int) -> str:
    """A surface node's public ref (``s00120``): zero-padded so refs sort like seqs."""
    return f"s{seq:05d}"


@dataclass(frozen=True)
class Call:
    call_id: str
    name: str
    arguments: str

    def public(self) -> dict[str, str]:
        return {"call_id": self.call_id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True)
class Node:
    """One archived surface node, as the model saw it (redacted; runtime context as a placeholder)."""

    seq: int
    type: str
    kind: Kind
    turn: int | None
    step: int | None
    call_id: str | None
    tool_name: str | None
    calls: tuple[Call, ...]
    is_error: bool
    text: str
    tokens: int
    replaces: tuple[int, ...] = ()

    @property
    def ref(self) -> str:
        return session_ref(self.seq)

    @property
    def call_ids(self) -> list[str]:
        return [c.call_id for c in self.calls]

    @classmethod
    def from_row(cls, row: Any) -> Node:
        calls = tuple(Call(**c) for c in json.loads(row["calls"]))
        return cls(
            seq=int(row["seq"]), type=row["type"], kind=row["kind"], turn=row["turn"], step=row["step"],
            call_id=row["call_id"], tool_name=row["tool_name"], calls=calls, is_error=bool(row["is_error"]),
            text=row["text"], tokens=int(row["tokens"]), replaces=tuple(json.loads(row["replaces"])),
        )


@dataclass
class Layer:
    """What replaces native history (or will): a card, a block at a level, a fold/digest of a range."""

    id: int
    ref: str
    kind: str  # 'card' | 'block' | 'fold'
    tier: int
    auto: bool
    topic: str | None
    start_seq: int
    end_seq: int
    covers: list[int]
    children: list[str]
    block_id: int | None
    level: int | None
    text: str
    tokens: int
    shadowed_tokens: int
    state: str  # 'pending' | 'landed' | 'dropped' | 'superseded'
    deferrals: int
    replacement_seq: int | None
    error: str | None
    created_at: str
    landed_at: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_row(cls, row: Any) -> Layer:
        return cls(
            id=int(row["id"]), ref=row["ref"], kind=row["kind"], tier=int(row["tier"]), auto=bool(row["auto"]),
            topic=row["topic"], start_seq=int(row["start_seq"]), end_seq=int(row["end_seq"]),
            covers=list(json.loads(row["covers"])), children=list(json.loads(row["children"])),
            block_id=row["block_id"], level=row["level"], text=row["text"], tokens=int(row["tokens"]),
            shadowed_tokens=int(row["shadowed_tokens"]), state=row["state"], deferrals=int(row["deferrals"]),
            replacement_seq=row["replacement_seq"], error=row["error"], created_at=row["created_at"],
            landed_at=row["landed_at"],
        )
