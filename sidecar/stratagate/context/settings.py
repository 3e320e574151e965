"""The context engine's settings: presets (cost, quality), the plugin config's ``context`` object under the stored
settings page, read at every plan so a change applies without a restart.

Sources, lowest first: the preset's defaults ← the plugin config (env ``STRATAGATE_CONTEXT_CONFIG``, JSON, camelCase
or snake_case keys; checked at start-up) ← what ``context.settings.set`` stored (table ``context_settings``).
A stored or configured ``mode`` picks the preset; an explicit value of any threshold overrides it (then the mode
reads ``custom`` unless every value equals a preset's).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from stratagate.context import queries
from stratagate.errors import DomainError, explain_validation
from stratagate.settings_table import ContextMode
from stratagate.storage.db import Database
from stratagate.storage.sqlite import Connection

Mode = ContextMode
"""The presets, declared with the page's ``context_mode`` row in settings_table.py (tests check the default too)."""

STOCK_SUMMARY_LINE = 0.8
"""DSH compaction-basic's thresholdRatio: its stock summary fires at 0.8·W. Every line of ours stays 5 points below."""
MARGIN = 0.05


class ContextSettings(BaseModel):
    """Every knob of the engine (fractions are of the model's context window W)."""

    model_config = ConfigDict(extra="forbid")

    mode: Mode = "cost"
    enabled: bool = Field(True, description="Off: context.plan archives but never returns ops.")
    auto_fold: bool = Field(True, description="Automatic extractive digests when reminders go unanswered.")
    reminders: bool = True

    cost_aware: bool = Field(True, description="Land only when saved tokens outweigh the one-time cache miss.")
    mid_turn_cards: bool = Field(False, description="Card finished rounds before a step (quality preset).")
    pressure_line: float = Field(0.6, gt=0, le=1, description="Above it, mid-turn cards even in cost mode.")
    force_line: float = Field(0.75, gt=0, le=1, description="Above it a batch lands regardless of cost.")

    protected_rounds: int = Field(3, ge=1, le=100)
    protected_share: float = Field(0.10, gt=0, le=1, description="Cap of the protected tail rounds (share of W).")
    card_min_tokens: int = Field(200, ge=0, le=1_000_000, description="Smaller tool results stay raw.")

    price_miss: float = Field(1.0, ge=0)
    price_hit: float = Field(0.1, ge=0)
    min_batch_tokens: int = Field(5000, ge=0)
    min_batch_share: float = Field(0.01, ge=0, le=1)
    upgrade_factor: float = Field(1.5, ge=1, le=10, description="Min batch × this when the batch only re-folds.")
    max_deferrals: int = Field(2, ge=0, le=100, description="A deferred model fold lands at turn end number +1.")
    requests_min: int = Field(4, ge=1)
    requests_max: int = Field(200, ge=1)

    reminder_every: int = Field(50_000, ge=1000, description="Foldable growth (tokens) that raises a reminder.")
    reminder_rearm: int = Field(25_000, ge=500, description="Re-arm step while a reminder stays unanswered.")
    reminder_rearm_high: int = Field(12_500, ge=500, description="Re-arm step above the force line.")

    digest_line: float = Field(0.5, gt=0, le=1, description="Digest above it after `digest_reminders` reminders.")
    digest_reminders: int = Field(2, ge=0, le=100)
    digest_force_line: float = Field(0.6, gt=0, le=1, description="Digest above it whatever the reminders.")
    digest_cooldown: int = Field(50_000, ge=0, description="Foldable growth needed before the next digest.")
    digest_target: float = Field(0.30, gt=0, le=1, description="Fold until foldable ≈ this share of (W − overhead).")
    digest_share: float = Field(0.12, gt=0, le=1, description="A digest's size as a share of the folded text.")
    digest_min_chars: int = Field(1200, ge=100)
    old_rounds_budget: int = Field(8000, ge=0, description="Digest rounds older than old_rounds_age turns at turn "
                                   "end once they pass max(this, old_rounds_share·W) tokens (0: off).")
    old_rounds_share: float = Field(0.06, ge=0, le=1)
    old_rounds_age: int = Field(2, ge=1, le=1000, description="Turns a round stays as it is (raw or a card).")

    @model_validator(mode="after")
    def _below_stock_summary(self) -> ContextSettings:
        # Our lines must act before DSH's stock summary does (small windows included).
        ceiling = STOCK_SUMMARY_LINE - MARGIN
        for name in ("pressure_line", "force_line", "digest_line", "digest_force_line"):
            if getattr(self, name) > ceiling:
                setattr(self, name, ceiling)
        return self


PRESETS: dict[str, dict[str, Any]] = {
    "cost": {},
    "quality": {
        "cost_aware": False,
        "mid_turn_cards": True,
        "digest_line": 0.25,
        "digest_force_line": 0.35,
        "digest_target": 0.15,
    },
}
SWITCHES = ("mode", "enabled", "auto_fold", "reminders")
KNOBS = [name for name in ContextSettings.model_fields if name not in SWITCHES]
"""The thresholds a preset fixes (the switches are on/off choices under any mode)."""


_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def normalise(raw: dict[str, Any]) -> dict[str, Any]:
    """camelCase or snake_case keys → snake_case (``autoFold`` → ``auto_fold``)."""
    return {_CAMEL.sub("_", str(k)).lower() if not str(k).islower() else str(k): v for k, v in raw.items()}


def check_partial(raw: dict[str, Any], where: str) -> dict[str, Any]:
    """A partial settings object, keys normalised and values checked (a DomainError names the bad field)."""
    values = normalise(raw)
    try:
        ContextSettings.model_validate(values)
    except ValidationError as exc:
        raise DomainError(f"{where}: {explain_validation(exc)}") from exc
    return values


def parse_config(text: str | None) -> dict[str, Any]:
    """The plugin config's ``context`` object (env STRATAGATE_CONTEXT_CONFIG); a ValueError names what is wrong."""
    if not text:
        return {}
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"STRATAGATE_CONTEXT_CONFIG is not valid JSON: {exc.msg} at position {exc.pos}") from None
    if not isinstance(raw, dict):
        raise ValueError("STRATAGATE_CONTEXT_CONFIG must be a JSON object (the plugin config's `context`)")
    try:
        return check_partial(raw, "STRATAGATE_CONTEXT_CONFIG")
    except DomainError as exc:
        raise ValueError(str(exc)) from None


def effective(config: dict[str, Any], stored: dict[str, Any]) -> ContextSettings:
    """Preset defaults ← plugin config ← stored settings. The mode named last picks the preset under the rest."""
    layered = {**config, **stored}
    mode = layered.get("mode", "cost")
    values = {**PRESETS.get(mode, {}), **{k: v for k, v in layered.items() if k != "mode"}}
    settings = ContextSettings.model_validate({**values, "mode": mode})
    if mode == "custom":
        return settings
    # An explicit value that differs from the preset makes it a custom set.
    preset = ContextSettings.model_validate({**PRESETS.get(mode, {}), "mode": mode})
    if any(getattr(settings, k) != getattr(preset, k) for k in KNOBS):
        return settings.model_copy(update={"mode": "custom"})
    return settings


async def load_stored(db: Database) -> dict[str, Any]:
    return await queries.stored_settings(db.reader)


async def update_stored(db: Database, changes: dict[str, Any]) -> dict[str, Any]:
    """Merge ``changes`` (null resets a key) into the stored settings; a DomainError names a bad field. Choosing
    a preset (``mode`` cost or quality) resets the stored thresholds to it; ``custom`` keeps them."""
    async with db.transaction() as conn:
        return await update_stored_in(conn, changes)


async def update_stored_in(conn: Connection, changes: dict[str, Any]) -> dict[str, Any]:
    """``update_stored`` inside the caller's transaction (the Memory page's settings write it with their audit)."""
    values = normalise(changes)
    stored = await queries.stored_settings(conn)
    if values.get("mode") in PRESETS:  # picking a preset drops stored thresholds (not the on/off switches)
        stored = {k: v for k, v in stored.items() if k not in KNOBS}
    merged = {**stored, **{k: v for k, v in values.items() if v is not None}}
    for key in [k for k, v in values.items() if v is None]:
        merged.pop(key, None)
    check_partial(merged, "settings")
    await queries.put_settings(conn, merged)
    return merged
