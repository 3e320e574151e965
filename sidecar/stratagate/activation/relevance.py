"""The relevance floor of activation: below it a non-pinned, non-safety event or graph node is not injected.

An item is relevant to a prompt when the specificity the two share (``text/specificity.py``: the sum, over the
prompt's terms the item holds, of how rare each term is in everyday language) reaches ``FLOOR``. One rare word
("readme", "prototype", "Redis") is enough; one ordinary word is not ("keep", "short", "main", "store": "Who owns the
Eiffel Tower?" is not about "Alice owns the payments service"); two fairly common ones are ("deploy … production").
The score depends on the prompt and the item only, never on how many items the memory holds.

What counts as the item's words: its title, summary, narrative, tags, quotes, participants and the categories of the
things it names ("pnpm" → "package manager"), as its search index has them, minus secret placeholders: a
``[secret:kind#hash]`` is a redaction, not something the event is about, so "tell me a secret" or a hash never makes
a redacted event relevant. The event's type and the dates it was mentioned are not its topic either ("plan a trip"
is not about every plan).

``FLOOR`` was chosen on the calibration half of tests/fixtures/recall/floor_corpus.json (related and unrelated
prompts, EN and ZH, against a small project memory) and checked on its held-out half: docs/benchmarks.md, "The
relevance floor".
"""

from __future__ import annotations

from functools import lru_cache

from stratagate.events import lexicon
from stratagate.events.models import EventRow
from stratagate.events.queries import fts_documents
from stratagate.safety.secrets import PLACEHOLDER_RE
from stratagate.storage.sqlite import Connection
from stratagate.text.specificity import overlap, weight
from stratagate.text.terms import fts_query, quote, terms

FLOOR = 0.65
"""The shared specificity an item needs (calibrated: between the best unrelated match, 0.59, and the weakest
related one kept, 0.74, on the calibration prompts)."""


def clean(text: str) -> str:
    """``text`` without its secret placeholders."""
    return PLACEHOLDER_RE.sub(" ", text) if "[secret:" in text else text


@lru_cache(maxsize=4096)
def text_terms(text: str) -> frozenset[str]:
    """The distinct terms of a text with its secret placeholders taken out, and the canonical names of the things it
    names ("Postgres" → "postgresql": the prompt and the memory may spell one tool differently). Cached: prompts and
    items repeat."""
    cleaned = clean(text)
    return frozenset(terms("\n".join([cleaned, *lexicon.names_in(cleaned)])))


STEP_TERMS = 16
"""A step's query searches at most this many of its terms: the most specific (``text/specificity.py``; ties: the
first said). The recent turns hold whole assistant answers: at 10k events a first step cost 8.5 ms CPU p50 with short
turns, 10.3 with 300 words and 12.0 with 1,500 (hundreds of OR-ed terms in two event and two node searches). The
terms left out are the most ordinary ones, whose BM25 weight is least and which the relevance floor counts least."""


@lru_cache(maxsize=32)
def query_match(text: str, limit: int | None = None) -> str | None:
    """The FTS match of a step's query with its secret placeholders taken out (its ``limit`` most specific terms, in
    the order said), or None when nothing in it is searchable. Cached: the recent turns' words are the same query
    step after step until the next capture."""
    if not text.strip():
        return None
    if limit is None:
        return fts_query(clean(text))
    found = list(dict.fromkeys(terms(clean(text))))
    if len(found) > limit:
        kept = set(sorted(found, key=lambda term: -weight(term))[:limit])  # (a stable sort: ties keep the first said)
        found = [term for term in found if term in kept]
    return " OR ".join(quote(term) for term in found) or None


def event_text(ev: EventRow) -> str:
    """What an event is about, in words: its search text without type, dates or placeholders."""
    named = clean("\n".join([ev.title, ev.narrative, *ev.tags]))
    categories = lexicon.kinds_named(named, ev.claims)
    return "\n".join([*categories, ev.title, ev.summary, ev.narrative, *ev.tags, *ev.quotes, *ev.participants])


def score(query: frozenset[str], item: frozenset[str]) -> float:
    return overlap(query, item)


def relevant(query: frozenset[str], item: frozenset[str]) -> bool:
    return score(query, item) >= FLOOR


def shared(query: frozenset[str], document: str) -> frozenset[str]:
    """The query's terms an index document (terms joined by spaces, as ``fts_document`` writes it) holds, found
    without splitting the document: a graph node's holds every current fact's terms, the query a handful."""
    padded = f" {document} "
    return frozenset(term for term in query if f" {term} " in padded)


_EVENT_TERMS: dict[tuple[int, str, str, str], frozenset[str]] = {}
_MAX_CACHED = 4096


def _key(ev: EventRow) -> tuple[int, str, str, str]:
    return ev.id, ev.updated_at, ev.title, ev.summary


def event_terms(ev: EventRow) -> frozenset[str]:
    """``event_text``'s terms, kept per event version: activation reads the same few events step after step."""
    key = _key(ev)
    found = _EVENT_TERMS.get(key)
    if found is None:
        if len(_EVENT_TERMS) >= _MAX_CACHED:
            _EVENT_TERMS.clear()
        found = _EVENT_TERMS[key] = text_terms(event_text(ev))
    return found


async def event_documents(conn: Connection, events: list[EventRow]) -> dict[int, str]:
    """The index documents of those of ``events`` whose terms were not made yet (one statement; none when all
    were): what ``event_relevant`` judges a new candidate on first."""
    wanted = list(dict.fromkeys(ev.id for ev in events if _key(ev) not in _EVENT_TERMS))
    if not wanted:
        return {}
    return await fts_documents(conn, wanted)


def event_relevant(query: frozenset[str], ev: EventRow, document: str | None = None) -> bool:
    """Whether ``ev`` passes the floor for ``query``. With the event's index ``document`` (its ``event_fts`` terms),
    a candidate whose terms were not made yet is first judged on the query terms the document holds: the document's
    words are the event's words plus its type, its dates and when it was said (``events.store._fts_text``), so those
    held terms less any the type, a date or ``time_original`` can give are terms the event's own words give. When
    they reach the floor the event is relevant without its words being tokenised (a step's new query brings a dozen
    new candidates); otherwise ``event_terms`` decides."""
    if document is not None and _key(ev) not in _EVENT_TERMS and _plain(ev):
        held = shared(query, document)
        if held and relevant(query, held - _not_topic(ev, held)):
            return True
    return relevant(query, event_terms(ev))


def _plain(ev: EventRow) -> bool:
    """No secret placeholder (relevance leaves them out, the index does not) and no 年, the one date form a line
    break can split (a date of the index's own lines could then swallow a word of the event's)."""
    return not any("[secret:" in text or "年" in text for text in (
        ev.title, ev.summary, ev.narrative, *ev.tags, *ev.quotes, *ev.participants))


def _not_topic(ev: EventRow, held: frozenset[str]) -> set[str]:
    """Held terms the event's own words may not give: its type's, ``time_original``'s, and every date token."""
    out = {t for t in held if len(t) > 4 and t[0] in "ymd" and t[1:].isdigit()}
    return out.union(terms(ev.type), terms(ev.time_original or "")) if held - out else out
