"""Timestamps: stored as UTC ISO-8601 with millisecond precision and a ``Z`` suffix, so they sort as text."""

from __future__ import annotations

from datetime import UTC, datetime


def to_iso(value: datetime) -> str:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_time(value: str) -> datetime:
    """An ISO-8601 date or date-time ('Z' accepted; naive means UTC) as an aware UTC datetime; ValueError if not."""
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise ValueError(f"not a date or date-time: {value!r} (use '2026-05-01' or '2026-05-01T12:00:00Z')") from exc
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def now_iso() -> str:
    return to_iso(datetime.now(UTC))
