"""Stable import point of secret scrubbing: ``redact`` is ``stratagate.safety.secrets.redact_text``.

Every secret becomes a typed placeholder ``[secret:<kind>#<hash>]`` (see ``stratagate.safety.secrets``).
"""

from __future__ import annotations

from stratagate.safety.secrets import redact_shown, redact_text, redact_value

redact = redact_text

__all__ = ["preview", "redact", "redact_value"]


def preview(text: str, limit: int = 500) -> str:
    """Redacted, length-bounded excerpt (of a raw model response, an error) for error reports and logs."""
    cleaned = redact_shown(text)
    if len(cleaned) <= limit:
        return cleaned
    return cleaned[: limit - 1] + "…"
