"""Public ids are typed strings (``blk_12``) so a ref names its kind; storage keys are integers."""

from __future__ import annotations

import re

PREFIXES = {
    "blk": "block",
    "msg": "message",
    "turn": "turn",
    "job": "job",
    "evt": "event",
    "imp": "import",
    "nod": "graph node",
    "fct": "graph fact",
    "rb": "retrieval batch",
    "asm": "evidence assessment",
    "rcp": "use receipt",
    # Job subjects (jobs/pipeline.py ``Stage.subject_prefix``): what jobs.list shows as a job's subject.
    "batch": "graph projection batch",
    "ns": "namespace",
    "db": "database",
    "obj": "subject of a job kind this sidecar does not declare",
}
_ID = re.compile(r"^(" + "|".join(PREFIXES) + r")_([1-9][0-9]{0,17})$")


def make(prefix: str, key: int) -> str:
    return f"{prefix}_{key}"


def parse(value: object, prefix: str) -> int | None:
    """The integer key of ``value`` if it is an id of that kind, else None."""
    if isinstance(value, str):
        m = _ID.match(value.strip())
        if m and m.group(1) == prefix:
            return int(m.group(2))
    return None
