"""Secret scrubbing lives in stratagate.redact (shared with memory rendering); re-exported for the model layer."""

from stratagate.redact import preview, redact

__all__ = ["preview", "redact"]
