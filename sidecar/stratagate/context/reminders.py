"""Reminders to fold: when the foldable part of the surface grows, the model is told (in the plan result and, per
step, after the recall text) that it may fold finished work with ``compress``. The bookkeeping lives in the
session's engine state (``context_sessions.state["reminders"]``)."""

from __future__ import annotations

from collections.abc import Container
from typing import Any

from stratagate.context import queries
from stratagate.context.settings import ContextSettings
from stratagate.context.surface import Surface
from stratagate.storage.sqlite import Connection


def current_reminder(state: dict[str, Any] | None) -> str | None:
    """The session's current reminder line (None: no reminder, or the engine does not manage the session)."""
    if not state:
        return None
    text = state.get("reminders", {}).get("text")
    return text if isinstance(text, str) and text else None


async def step_reminder(conn: Connection, namespace: str, session: str) -> tuple[bool, str | None]:
    """(whether the engine manages the session, the reminder line for this step). A ``compress`` since the last
    plan answers the reminder at once: the next step does not repeat it."""
    state = await queries.state_by_name(conn, namespace, session)
    text = current_reminder(state)
    if state is None or text is None:
        return state is not None, None
    answered = int(state.get("reminders", {}).get("answered_layer", 0))
    if await queries.newest_model_fold(conn, namespace, session) > answered:
        return True, None
    return True, text


def reminder_text(foldable: int, first: str | None, last: str | None) -> str:
    span = f" ({first}–{last})" if first and last else ""
    return (
        f"[stratagate:reminder · from StrataGate, not the user] {foldable / 1000:.1f}K tokens of finished work "
        f"outside the protected tail are foldable{span}. When a stretch of work is done, fold it with "
        'compress("<startRef>–<endRef> <topic>\\n<summary>"); memory_context_status lists the ranges.'
    )


def update_reminders(state: dict[str, Any], surface: Surface, protected: Container[int], foldable: int, used: int,
                     window: int, s: ContextSettings) -> str | None:
    """Raise, re-arm or clear the session's reminder (state["reminders"]); returns the current reminder text.
    A new reminder when foldable tokens grew by ``reminder_every`` since the baseline; while unanswered it re-arms
    every ``reminder_rearm`` (above the force line every ``reminder_rearm_high``, and once at once on crossing it).
    A ``compress`` call (a new model fold) answers it: the baseline restarts from the current foldable size."""
    rem = state.setdefault("reminders", {})
    newest_fold = max((la.id for la in surface.layers if la.kind == "fold" and not la.auto), default=0)
    if "baseline" not in rem:  # a new session counts from nothing; after an answer, from what it saw then
        base = foldable if "answered_layer" in rem else 0
        rem.update(baseline=base, next=base + s.reminder_every, unanswered=0, text=None,
                   answered_layer=max(newest_fold, rem.get("answered_layer", 0)), high=False)
    if newest_fold > rem.get("answered_layer", 0):  # a compress call answers the reminders
        rem.update(baseline=foldable, next=foldable + s.reminder_every, unanswered=0, text=None,
                   answered_layer=newest_fold, high=False)
    if foldable < rem["baseline"]:  # something landed: count growth from here
        rem.update(baseline=foldable, next=min(rem["next"], foldable + s.reminder_every))
    if not s.reminders:
        rem["text"] = None
        return None
    high = used >= s.force_line * window
    if foldable >= rem["next"] or (high and not rem.get("high")):
        rem["unanswered"] = int(rem.get("unanswered", 0)) + 1
        rem["next"] = foldable + (s.reminder_rearm_high if high else s.reminder_rearm)
        rem["high"] = high
        free = [n for n in surface.nodes if n.pos not in protected]
        rem["text"] = reminder_text(foldable, free[0].node.ref if free else None, free[-1].node.ref if free else None)
    return rem.get("text")


async def mark_answered(conn: Connection, ns_id: int, session_id: int) -> None:
    """A ``compress`` call answers the reminders at once (inside the caller's write transaction): the reminder line
    leaves the next step's recall text; the next plan restarts the baseline from the foldable size it sees."""
    state = await queries.session_state(conn, session_id)
    if state is None:
        return
    rem = state.setdefault("reminders", {})
    rem.update(text=None, unanswered=0, high=False)
    rem.pop("baseline", None)  # re-based at the next plan
    await queries.put_session_state(conn, ns_id, session_id, state)
