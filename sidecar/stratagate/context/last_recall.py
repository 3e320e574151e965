"""Each session's last recall, kept in memory for ``/memory recall`` and ``/memory status`` (context/recalled.py
explains a step's recall and records it here). Light on purpose: the app holds one store from start-up.
A restarted sidecar has no last recall until the next step."""

from __future__ import annotations

from collections import OrderedDict
from typing import Literal

from pydantic import Field

from stratagate.protocol.types import Result

Lang = Literal["en", "zh"]
REMEMBER = 512
"""Sessions whose last recall is kept."""


Reason = Literal["safety", "pinned", "words", "recent", "history", "other", "own"]


class RecalledItem(Result):
    id: str
    kind: Literal["event", "node", "block"]
    status: str = Field(description="An event's status, a graph node's kind, a block's state (ready or pending).")
    title: str
    reason: Reason
    words: list[str] = Field(description="The step's words the item shares (reason 'words').")
    why: str = Field(description="The reason in plain words, in the step's UI language.")


class LastRecall(Result):
    at: str
    query: str
    lang: Lang
    items: list[RecalledItem]


class Recalls:
    """Each session's last recall, newest sessions kept (bounded)."""

    def __init__(self, remember: int = REMEMBER) -> None:
        self.remember = remember
        self._by: OrderedDict[tuple[str, str], LastRecall] = OrderedDict()

    def get(self, namespace: str, session: str) -> LastRecall | None:
        return self._by.get((namespace, session))

    def put(self, namespace: str, session: str, recall: LastRecall) -> None:
        self._by.pop((namespace, session), None)
        self._by[(namespace, session)] = recall
        while len(self._by) > self.remember:
            self._by.popitem(last=False)
