"""Timestamps: stored as UTC ISO-8601 with millisecond precision and a ``Z`` suffix, so they sort as text."""

from __future__ import annotations

from datetime import UTC, datetime


def to_iso(value: datetime) -> str:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def now_iso() -> str:
    return to_iso(datetime.now(UTC))
