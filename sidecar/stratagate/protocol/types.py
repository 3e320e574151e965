"""Field types shared by many protocol models."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, StringConstraints

from stratagate.errors import has_surrogate
from stratagate.redact import redact


def valid_text(value: str) -> str:
    """Refuse lone UTF-16 surrogates (JSON can spell them, UTF-8 and SQLite cannot store them)."""
    if has_surrogate(value):
        raise ValueError("text holds a lone UTF-16 surrogate (not valid Unicode)")
    return value


# Namespaces, sessions, receipts and source names are stored and shown too: a secret in one is redacted at the
# boundary, the same way on every call (the placeholder is a keyed hash), so lookups by name still match.
Name = Annotated[
    str, StringConstraints(min_length=1, max_length=512, pattern=r"^[^\x00-\x1f\x7f]+$"),
    AfterValidator(valid_text),
    AfterValidator(redact),
]


SUBAGENT = "subagent"

Origin = Annotated[str, StringConstraints(max_length=64)]
"""DSH's session header ``origin`` as the shim forwards it; ``'subagent'`` marks a subagent child session. Memory
decides what that means (no recall injected, no turn-end nudge, capture only with ``capture_subagents``)."""


class Empty(BaseModel):
    """Params of a method that takes none."""

    model_config = ConfigDict(extra="forbid")


class Result(BaseModel):
    """Base of every result model: a key the model does not declare is a bug (the reply would drift from the
    documented shape), so it is refused rather than passed on. Each model's validator is built when it is first
    used (``defer_build``): a sidecar answers few kinds of request, and building all of them costs start-up time."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
