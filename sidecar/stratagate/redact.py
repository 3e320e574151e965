"""Best-effort secret scrubbing for anything that may reach logs, job rows, the host UI or injected memory."""

from __future__ import annotations

import re

_MASK = "[REDACTED]"

# Whole-token patterns: the match itself is the secret.
_TOKEN_PATTERNS: tuple[re.Pattern[str], ...] = (
    # OpenAI / DeepSeek / Anthropic style keys (sk-..., sk-proj-..., sk-ant-...). No leading word boundary:
    # a key glued to other text must still be caught.
    re.compile(r"sk-[A-Za-z0-9_\-]{16,}"),
    re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[A-Z0-9]{16}\b"),  # AWS access key ids
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),  # GitHub tokens
    re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"),  # Slack tokens
    re.compile(r"\bAIza[0-9A-Za-z_\-]{30,}"),  # Google API keys
    re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{4,}"),  # JWTs
)

# "Bearer <token>" / "Basic <token>" in headers or logged requests.
_AUTH_SCHEME = re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=\-]{6,}")

# Credentials embedded in URLs: scheme://user:password@host
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^\s/:@]+:)[^\s/@]+@")

# key=value / "key": "value" where the key name alone proves the value is secret: redact any value.
_STRONG_KEY = re.compile(
    r"""(?ix)
    (\b[\w\-]*(?:api[_\-]?key|apikey|secret|passw(?:or)?d|pwd|private[_\-]?key|access[_\-]?key)[\w\-]*
     ["']?\s*[:=]\s*["']?)
    (?!\[REDACTED\])([^\s"',;&}\]]+)
    """
)

# Weaker key words (token, key, auth, ...) are common in ordinary text ("max_tokens": 4096), so only
# redact values that look like credentials: long runs of hex/base64/url-safe characters.
_WEAK_KEY = re.compile(
    r"""(?ix)
    (\b[\w\-]*(?:token|key|auth|credential|session|signature|sig)[\w\-]*
     ["']?\s*[:=]\s*["']?)
    (?!\[REDACTED\])([A-Za-z0-9+/=_.\-]{20,})
    """
)


def redact(text: str) -> str:
    """Return ``text`` with credential-looking substrings replaced by ``[REDACTED]``."""
    if not text:
        return text
    out = text
    for pattern in _TOKEN_PATTERNS:
        out = pattern.sub(_MASK, out)
    out = _AUTH_SCHEME.sub(lambda m: f"{m.group(1)}{m.group(2)}{_MASK}", out)
    out = _URL_CREDENTIALS.sub(lambda m: f"{m.group(1)}{_MASK}@", out)
    out = _STRONG_KEY.sub(lambda m: m.group(1) + _MASK, out)
    out = _WEAK_KEY.sub(lambda m: m.group(1) + _MASK, out)
    return out


def preview(text: str, limit: int = 500) -> str:
    """Redacted, length-bounded excerpt of a raw model response for error reports."""
    cleaned = redact(text)
    if len(cleaned) <= limit:
        return cleaned
    return cleaned[: limit - 1] + "…"
