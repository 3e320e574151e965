"""RPC methods that seal a session's open tail (blocks/tail.py): ``session.close`` (DSH disposed the session) and
``session.seal_idle`` (the idle sweep, also run by the sidecar itself every minute or so). See docs/protocol.md."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from stratagate import ids
from stratagate.capture.models import Name
from stratagate.protocol import method
from stratagate.storage.lookup import scope_keys

if TYPE_CHECKING:
    from stratagate.app import App


class SessionCloseParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    namespace: Name
    session: Name


class SealIdleParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    now: datetime | None = Field(
        None, description="The time the sweep takes as now (default: the sidecar's clock); naive means UTC."
    )


class SealedResult(BaseModel):
    sealed_block_ids: list[str]


async def _tokens(app: App) -> None:
    if app.tokens_ready is not None:
        await app.tokens_ready  # sealing counts the views' tokens


@method("session.close", params=SessionCloseParams, result=SealedResult)
async def session_close(app: App, p: SessionCloseParams) -> dict[str, Any]:
    """Seal the session's open turns into a (short) block; a session never captured into is left alone."""
    _, session_id = await scope_keys(app.db.reader, p.namespace, p.session)
    if session_id is None:
        return {"sealed_block_ids": []}
    await _tokens(app)
    sealed = await app.tails.close(session_id)
    return {"sealed_block_ids": [ids.make("blk", b) for b in sealed]}


@method("session.seal_idle", params=SealIdleParams, result=SealedResult)
async def session_seal_idle(app: App, p: SealIdleParams) -> dict[str, Any]:
    """Seal every session whose newest open turn is older than ``now`` minus ``session_idle_minutes``."""
    await _tokens(app)
    sealed = await app.tails.sweep(p.now)
    return {"sealed_block_ids": [ids.make("blk", b) for b in sealed]}
