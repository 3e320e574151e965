"""RPC methods of the DSH adapter (stratagate/dsh/): the shim forwards DSH's raw payloads, the sidecar decides.

``turn.capture_raw`` folds a turn's raw events and captures it, ``activation.render_step`` picks the step's recall
query and renders, ``namespace.for_session`` resolves a session's namespace with its fallback, ``system.status``
assembles the status page, ``host.check`` judges the DSH version the shim read. See docs/protocol.md.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stratagate.activation.render import ActivationParams, render_activation
from stratagate.capture.models import CaptureParams, Name
from stratagate.capture.store import capture_turn
from stratagate.context.last_recall import Lang, RecalledItem
from stratagate.context.recalled import note, remember_step, row_entries
from stratagate.context.reminders import step_reminder
from stratagate.dsh.events import RawEvent
from stratagate.dsh.fold import fit_capture, fold_turn
from stratagate.dsh.host import HostCheck, HostParams, check
from stratagate.dsh.query import step_query
from stratagate.dsh.session import SessionNamespace, SessionNamespaceParams, session_namespace
from stratagate.dsh.status import Status, StatusParams, assemble_status
from stratagate.errors import explain_validation, invalid_params
from stratagate.protocol import method
from stratagate.protocol.results import ActivationResult
from stratagate.protocol.types import SUBAGENT, Origin, Result
from stratagate.tokens import count_tokens

if TYPE_CHECKING:
    from stratagate.app import App

MAX_EVENTS = 100_000

log = logging.getLogger("stratagate.host")


class RawCaptureParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    namespace: Name
    session: Name
    events: list[RawEvent] = Field(max_length=MAX_EVENTS, description="One turn's session/event payloads, in order.")
    canonical: dict[str, Any] = Field(
        default_factory=dict, description="tools/result canonical values by tool call id (preferred over the text)."
    )
    origin: Origin | None = Field(None, description="The session header's origin ('subagent' for a subagent child).")
    capture_subagents: bool = False


class RawCaptureResult(BaseModel):
    captured: bool
    receipt: str | None = None
    turn_id: str | None = None
    duplicate: bool = False
    sealed_block_ids: list[str] = Field(default_factory=list)
    skipped: str | None = None


class StepParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    namespace: Name
    session: Name
    events: list[RawEvent] = Field(
        default_factory=list, max_length=MAX_EVENTS, description="The session log from the current turn's start."
    )
    earlier: list[RawEvent] = Field(
        default_factory=list, max_length=64, description="user/message events before it (the human-text fallback)."
    )
    claimed: list[dict[str, Any]] = Field(
        default_factory=list, max_length=64, description="Messages DSH claimed from the inbox for this step."
    )
    origin: Origin | None = Field(None, description="The session header's origin; a subagent gets no recall.")
    lang: Lang = Field("en", description="The UI language the recalled items' reasons are worded in.")


class RowEntry(Result):
    name: str
    description: str


class StepResult(ActivationResult):
    recalled: list[RecalledItem] = Field(
        default_factory=list, description="What the step recalled (events, graph nodes, blocks), each with why."
    )
    note: str = Field("", description="The chat row's one model-facing line naming the recalled ids ('' for none).")
    entries: list[RowEntry] = Field(
        default_factory=list, description="The chat row's list ({name, description}), in the UI language."
    )


@method("turn.capture_raw", params=RawCaptureParams, result=RawCaptureResult)
async def capture_raw(app: App, p: RawCaptureParams) -> dict[str, Any]:
    if p.origin == SUBAGENT and not p.capture_subagents:
        return RawCaptureResult(captured=False, skipped="subagent session (captureSubagents is off)").model_dump()
    folded = fold_turn(p.events, p.session, p.canonical)
    if folded is None:
        return RawCaptureResult(captured=False, skipped="the turn holds nothing to store").model_dump()
    try:
        params = CaptureParams.model_validate({"namespace": p.namespace, **fit_capture(folded)})
    except ValidationError as exc:
        raise invalid_params(f"invalid turn: {explain_validation(exc)}") from exc
    if app.tokens_ready is not None:
        await app.tokens_ready
    # As turn.capture: its commit wakes the runner and queues embeddings (storage/db.py on_commit).
    result = await capture_turn(app.db, app.settings, params, count_tokens)
    return RawCaptureResult(captured=True, receipt=params.receipt, **result.model_dump()).model_dump()


@method("activation.render_step", params=StepParams, result=StepResult)
async def render_step(app: App, p: StepParams) -> dict[str, Any]:
    if p.origin == SUBAGENT:
        # Recall is for the main agent: a subagent works on a task its parent framed (and already recalled for).
        nothing = ActivationResult(text="", tokens=0, longterm_tokens=0, block_ids=[], event_ids=[], node_ids=[])
        return nothing.model_dump()
    query = step_query([*p.earlier, *p.events], p.claimed)

    async def tokenizer_ready() -> None:
        if app.tokens_ready is not None:
            await app.tokens_ready

    params = ActivationParams(namespace=p.namespace, session=p.session, query=query or None)
    # Once the context engine manages the session (it planned for it), its blocks replace native history in place:
    # recall stops repeating them, and the engine's current reminder to fold (if any) rides with the recall text.
    managed, reminder = await step_reminder(app.db.reader, p.namespace, p.session)
    result = await render_activation(
        app.db, app.settings, params, count_tokens, tokenizer_ready, own_blocks=not managed
    )
    if reminder:
        if app.tokens_ready is not None:
            await app.tokens_ready
        text = f"{result['text']}\n\n{reminder}" if result["text"] else reminder
        result = {**result, "text": text, "tokens": count_tokens(text)}
    # What the chat's memory row lists: explained here, at the result's edge, from the ids the render chose.
    items = await remember_step(app.recalls, app.db.reader, p.namespace, p.session, query or "", result, p.lang)
    recalled = [i.model_dump() for i in items]
    return {**result, "recalled": recalled, "note": note(items), "entries": row_entries(items, p.lang)}


@method("namespace.for_session", params=SessionNamespaceParams, result=SessionNamespace)
async def namespace_for_session(app: App, p: SessionNamespaceParams) -> dict[str, Any]:
    # A namespace mode set on the Memory page (or STRATAGATE_NAMESPACE_MODE) wins over the shim's plugin config.
    mode = app.settings.namespace_mode
    result: SessionNamespace = session_namespace(p.model_copy(update={"mode": mode}) if mode else p)
    await app.join_team(result.namespace)
    return result.model_dump()


@method("host.check", params=HostParams, result=HostCheck)
async def host_check(app: App, p: HostParams) -> HostCheck:
    # The shim sends the versions it read after each start and logs the verdict; the page and system.info show it.
    app.host = check(p.dsh, p.cordis)
    if app.host.message:
        log.warning("host: %s", app.host.message)
    return app.host


@method("system.status", params=StatusParams, result=Status)
async def system_status(app: App, p: StatusParams) -> dict[str, Any]:
    status: Status = assemble_status(p.host, await app.info())
    return status.model_dump()
