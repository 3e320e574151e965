"""The namespace fence of the long-term read routes: no id of another namespace in a reply.

A namespace's rows may point into another one by design: a user-tier event superseded or disputed by a user-tier
memory of another project, a receipt that relied on such a memory, their audit rows. The page shows one namespace
and nothing of another, so every id of a reply that names a row of another namespace is replaced by a marker (one
ownership query per id kind) before the reply leaves."""

from __future__ import annotations

import re
from typing import Any

from stratagate import ids
from stratagate.page import longterm_queries as q
from stratagate.storage.sqlite import Connection

FOREIGN = "[another namespace]"
_REF = re.compile(r"\b(" + "|".join(q.ID_KINDS) + r")_([1-9][0-9]{0,17})\b")


def _strings(value: Any, out: set[str]) -> None:
    if isinstance(value, str):
        out.add(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            _strings(key, out)
            _strings(item, out)
    elif isinstance(value, list | tuple):
        for item in value:
            _strings(item, out)


def _replace(value: Any, foreign: set[str]) -> Any:
    if isinstance(value, str):
        return _REF.sub(lambda m: FOREIGN if m.group(0) in foreign else m.group(0), value)
    if isinstance(value, dict):
        return {_replace(k, foreign): _replace(v, foreign) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_replace(v, foreign) for v in value]
    return value


async def hide_foreign(conn: Connection, namespace_id: int, value: Any) -> Any:
    """``value`` with every id of a row of another namespace replaced by ``FOREIGN`` (an id of a row that is gone,
    e.g. erased, stays: it names nothing)."""
    texts: set[str] = set()
    _strings(value, texts)
    wanted: dict[str, set[int]] = {}
    for text in texts:
        for m in _REF.finditer(text):
            wanted.setdefault(m.group(1), set()).add(int(m.group(2)))
    foreign: set[str] = set()
    for kind, keys in wanted.items():
        foreign |= {ids.make(kind, k) for k in await q.elsewhere(conn, namespace_id, kind, keys)}
    return _replace(value, foreign) if foreign else value
