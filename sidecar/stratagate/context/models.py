"""Wire models of the context engine (shim ↔ sidecar): the surface as the shim reports it, and the operations the
shim applies. The shim forwards DSH's raw surface events; the sidecar classifies them (runtime context, checkpoint,
tool round) so no memory logic lives in JS."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from stratagate.capture.models import Name
from stratagate.protocol.types import Origin, Result

MAX_SURFACE = 50_000
"""Most surface nodes one plan call may carry (a 1M-token window of 20-token nodes)."""

Phase = Literal["turn-end", "pre-step", "overflow", "manual"]
"""When the plan is asked for: at turn end (the normal landing point), before a step (mid-turn relief, quality
mode), after a context-overflow error (land everything that helps, now), or by ``/compact`` (idle, below pressure)."""


class SurfaceEvent(BaseModel):
    """One node of the session's current surface (``session.surface.nodes`` → ``session.events[seq]``), as DSH
    logged it: ``{seq, type, data, surfaceOp?, sourceEventSeqs?}``. ``data`` is omitted (null) for a seq the
    sidecar already archived (the previous plan's ``archived_through`` tells the shim which)."""

    model_config = ConfigDict(extra="allow")

    seq: int = Field(ge=0)
    type: Annotated[str, StringConstraints(max_length=256)]
    data: dict[str, Any] | None = None
    surfaceOp: dict[str, Any] | None = None
    sourceEventSeqs: list[int] | None = Field(None, max_length=MAX_SURFACE)


class Usage(BaseModel):
    """The provider's accounting of the latest request, where DSH exposes it (else local counts are used)."""

    model_config = ConfigDict(extra="ignore")

    prompt_tokens: int | None = Field(None, ge=0)
    cached_tokens: int | None = Field(None, ge=0, description="Prompt tokens served from the prefix cache.")
    requests: int | None = Field(None, ge=0, description="Requests sent so far in this session.")


class PlanParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    namespace: Name
    session: Name
    origin: Origin | None = None
    phase: Phase = "turn-end"
    turn: int | None = Field(None, description="The open turn's number (DSH turn/start data.turn).")
    window: int = Field(gt=0, le=100_000_000, description="The model's context window in tokens.")
    max_tokens: int | None = Field(None, ge=0, description="The model's output cap (for the stock summary line).")
    overhead_tokens: int | None = Field(None, ge=0, description="System prompt + tool schemas, when known.")
    surface: list[SurfaceEvent] = Field(max_length=MAX_SURFACE)
    usage: Usage | None = None


class Op(Result):
    """One replacement the shim applies. ``card``: a ``tool/result`` replacing the single node ``start`` (= ``end``)
    whose content is ``text`` (as DSH's tool-result pruner does). ``block``/``fold``: one checkpoint ``user/message``
    replacing the surface span ``start``…``end`` (inclusive, surface order) inside a compaction bracket. Apply a
    batch back to front (by surface position, last span first) so earlier spans keep their seqs."""

    ref: str
    kind: Literal["card", "block", "fold"]
    tier: int
    auto: bool
    start: int
    end: int
    text: str
    tokens: int
    shadowed_tokens: int


class PlanResult(Result):
    ops: list[Op]
    archived_through: int = Field(description="Highest seq archived: the shim may omit data for seqs up to it.")
    reminder: str | None = Field(None, description="A reminder to fold, for the runtime context (or null).")
    decision: str = Field(description="Why this batch lands now, waits, or is empty (one line, for logs/status).")
    used_tokens: int
    window: int


class LandedOp(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ref: str = Field(min_length=2, max_length=64)
    replacement_seq: int | None = Field(None, ge=0, description="The seq of the appended replacement event.")
    error: str | None = Field(None, max_length=4000, description="Why the host refused it (then nothing landed).")


class LandedParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    namespace: Name
    session: Name
    ops: list[LandedOp] = Field(max_length=10_000)


class LandedResult(Result):
    landed: int
    failed: int
