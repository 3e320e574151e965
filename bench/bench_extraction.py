"""Zero-model event extraction on the held-out TEST split of the labelled corpus (tests/fixtures/extraction/):
before (the cue table alone, as the rule proposer was) against after (events/sentence_kind.py's guards and model).

Run from the repo root:  PYTHONPATH=$PWD/sidecar .venv/bin/python bench/bench_extraction.py [--json] [--show]
[--holdout] [--locomo FILE]  (``--holdout``: the sentences of holdout.tsv, written after the model was frozen,
instead; ``--locomo``: what a LoCoMo conversation's user-side messages become, before and after)

Each test item is one user message given to the rule proposer (``events/rule_extraction.propose``), as a block
with no related events. It "becomes an event of the right type" when its first draft has the item's label: for
*after* the draft's kind (a rule is stored as a decision tagged ``rule``); for *before*, which has no rule kind, a
rule counts as right when the cue table calls it a decision or a preference (lenient to the baseline). Precision
is right / items that became events, recall right / event items, per type and language.

Supersession: each test change that names the earlier statement it replaces is proposed with that statement as a
related event (stored as the proposer made it, or as a fact when it made none) plus the earlier statements of three
other changes of the same language as distractors (none about the same tool category: two package managers would
both be fair targets); right when it supersedes exactly that one. "Old value named"
splits them by whether a name, number or date word of the earlier statement appears in the change.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "sidecar"))

from stratagate.blocks.source import SourceMessage  # noqa: E402
from stratagate.events import lexicon, rule_extraction  # noqa: E402
from stratagate.events.models import EventRow  # noqa: E402
from stratagate.events.sentence_kind import EVENT_LABELS, Kind  # noqa: E402
from stratagate.text import cues  # noqa: E402
from support.extraction_corpus import Item, holdout, split  # noqa: E402

SAID = "2026-05-06T10:00:00+08:00"
DISTRACTORS = 3
_ASKS = re.compile(r"[?？]\s*$|^\s*(?:remind me|tell me|can you|could you|what|which|who|where|how|why)\b|"
                   r"^(?:提醒我|告诉我|能告诉|能不能)|(?:来着|是什么|是哪)", re.I)
_NAMEISH = re.compile(r"[A-Za-z]*[A-Z0-9][A-Za-z0-9.]*|monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
                      r"january|february|march|april|may|june|july|august|september|october|november|december|"
                      r"周[一二三四五六日]|[一二三四五六七八九十]+月|\d+", re.I)


def message(i: int, text: str) -> SourceMessage:
    return SourceMessage(id=i, turn_seq=i, role="user", content=text, created_at=SAID)  # type: ignore[arg-type]


def row(event_id: int, text: str, draft: Any | None) -> EventRow:
    claims = [c.model_dump(exclude_none=True) for c in draft.claims] if draft is not None else []
    return EventRow(
        id=event_id, namespace_id=1, session_id=1, origin="extraction", title=text, summary=text, narrative=text,
        quotes=[text], type=draft.type if draft is not None else "fact", scope="project", mentioned_at=SAID,
        fingerprint=str(event_id), claims=claims, status="active", created_at=SAID, updated_at=SAID,
    )


@contextlib.contextmanager
def before() -> Iterator[None]:
    """The proposer as it was: the cue table picks sentences and types, relations only by claims."""

    def cue_sentences(text: str) -> list[tuple[cues.Sentence, Kind]]:
        return [(s, Kind(c.type, 1.0, c.scope, c.polarity == "negative")) for s, c in cues.cue_sentences(text)]

    saved = rule_extraction.event_sentences, rule_extraction._by_topic
    rule_extraction.event_sentences = cue_sentences  # type: ignore[assignment]
    rule_extraction._by_topic = lambda *a, **k: None  # type: ignore[assignment]
    try:
        yield
    finally:
        rule_extraction.event_sentences, rule_extraction._by_topic = saved


def predicted(text: str) -> str:
    drafts = rule_extraction.propose([message(1, text)], []).output.events
    if not drafts:
        return "none"
    return drafts[0].tags[0] if drafts[0].tags else drafts[0].type


def right(gold: str, got: str, baseline: bool) -> bool:
    if baseline and gold == "rule":
        return got in ("decision", "preference")
    return gold == got


def kinds(items: list[Item], baseline: bool) -> dict[str, Any]:
    per: dict[str, Counter[str]] = {}
    leaked: list[dict[str, str]] = []
    for item in items:
        got = predicted(item.text)
        for key in ("all", item.lang, f"{item.lang}:{item.label}", f"type:{item.label}"):
            c = per.setdefault(key, Counter())
            c["gold"] += item.label != "none"
            c["events"] += got != "none"
            c["right"] += item.label != "none" and right(item.label, got, baseline)
        if got != "none" and item.label != "none":
            per.setdefault(f"type:{got}", Counter())["predicted"] += 1
            per.setdefault(f"{item.lang}:{got}", Counter())["predicted"] += 1
        if item.label == "none" and got != "none":
            leaked.append({"text": item.text, "became": got, "asks": "yes" if _ASKS.search(item.text) else "no"})
    table = {}
    for key, c in sorted(per.items()):
        if key.startswith(("type:", "en:", "zh:")):
            predicted_n = c["predicted"]
            precision = c["right"] / predicted_n if predicted_n else None
        else:
            precision = c["right"] / c["events"] if c["events"] else None
        table[key] = {"gold": c["gold"], "right": c["right"], "precision": precision,
                      "recall": c["right"] / c["gold"] if c["gold"] else None}
    return {"table": table, "non_events_as_events": leaked,
            "questions_or_requests_as_events": sum(1 for x in leaked if x["asks"] == "yes")}


def _same_slot(a: str | None, b: str | None) -> bool:
    """Two earlier statements about the same functional slot (two package managers): not a fair distractor."""
    cats = [{known.category for _, _, known in lexicon.find_all(re.findall(r"[\w.+#-]+", t or ""))} for t in (a, b)]
    return bool(cats[0] & cats[1])


def named(old: str, new: str) -> bool:
    return any(w.casefold() in new.casefold() for w in _NAMEISH.findall(old))


def supersession(items: list[Item]) -> dict[str, Any]:
    changes = [i for i in items if i.label == "change" and i.old]
    counts: Counter[str] = Counter()
    misses = []
    for n, item in enumerate(changes):
        same = [c for c in changes if c.lang == item.lang and c is not item and not _same_slot(c.old, item.old)]
        others = [same[(n + k) % len(same)].old for k in range(DISTRACTORS)] if same else []
        related = []
        for k, text in enumerate([item.old, *others], start=1):
            drafts = rule_extraction.propose([message(100 + k, text or "")], []).output.events
            related.append(row(k, text or "", drafts[0] if drafts else None))
        drafts = rule_extraction.propose([message(1, item.text)], related).output.events
        ok = bool(drafts) and drafts[0].supersedes == ["evt_1"]
        group = "named" if named(item.old or "", item.text) else "unnamed"
        for key in ("all", item.lang, group):
            counts[f"{key}:n"] += 1
            counts[f"{key}:ok"] += ok
        if not ok:
            misses.append({"change": item.text, "old": item.old,
                           "superseded": drafts[0].supersedes if drafts else "no event"})
    out = {key: counts[f"{key}:ok"] / counts[f"{key}:n"] for key in ("all", "en", "zh", "named", "unnamed")
           if counts[f"{key}:n"]}
    return {"accuracy": out, "n": {k: counts[f"{k}:n"] for k in ("all", "en", "zh", "named", "unnamed")},
            "misses": misses}


def run(which: str = "test") -> dict[str, Any]:
    items = split("test") if which == "test" else holdout(which)
    with before():
        old = {"kinds": kinds(items, baseline=True), "supersession": supersession(items)}
    new = {"kinds": kinds(items, baseline=False), "supersession": supersession(items)}
    return {"which": which, "items": len(items), "before": old, "after": new}


def locomo(path: Path) -> dict[str, Any]:
    """What the proposer makes of a LoCoMo conversation (personal chat, no project): the user side's (speaker A)
    messages one by one, before and after, as events per session and by kind, with a sample."""
    sys.path.insert(0, str(REPO / "bench"))
    from bench_locomo import load

    conv = load(path, speaker_names=False)
    said = [m for m in conv.messages if m.speaker == conv.speaker_a]
    photo = re.compile(r"\s*\[shares a photo: [^\]]*\]")  # the bench's caption marker, not the speaker's words
    sessions = len({m.session for m in conv.messages})
    out: dict[str, Any] = {"conversation": conv.name, "sessions": sessions, "user_messages": len(said)}
    for name, ctx in (("before", before()), ("after", contextlib.nullcontext())):
        kinds_seen: Counter[str] = Counter()
        sample: list[str] = []
        with ctx:
            for m in said:
                for d in rule_extraction.propose([message(1, photo.sub("", m.text))], []).output.events:
                    kinds_seen[d.tags[0] if d.tags else d.type] += 1
                    if len(sample) < 12:
                        sample.append(f"{d.tags[0] if d.tags else d.type}: {d.quotes[0]}")
        total = sum(kinds_seen.values())
        out[name] = {"events": total, "per_session": total / sessions, "kinds": dict(kinds_seen), "sample": sample}
    return out


def _f(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}"


def report(result: dict[str, Any], show: bool) -> None:
    b, a = result["before"], result["after"]
    print(f"{result['which']}: {result['items']} items")
    print("| slice | gold events | before P | before R | after P | after R |")
    print("|---|---:|---:|---:|---:|---:|")
    keys = ["all", "en", "zh", *[f"type:{t}" for t in EVENT_LABELS],
            *[f"{lang}:{t}" for lang in ("en", "zh") for t in EVENT_LABELS]]
    for key in keys:
        x, y = b["kinds"]["table"].get(key, {}), a["kinds"]["table"].get(key, {})
        print(f"| {key} | {y.get('gold', 0)} | {_f(x.get('precision'))} | {_f(x.get('recall'))} | "
              f"{_f(y.get('precision'))} | {_f(y.get('recall'))} |")
    for name, side in (("before", b), ("after", a)):
        leaked = side["kinds"]["non_events_as_events"]
        print(f"{name}: non-events that became events {len(leaked)}, of them questions/requests "
              f"{side['kinds']['questions_or_requests_as_events']}; supersession "
              + ", ".join(f"{k} {v:.2f} (n={side['supersession']['n'][k]})"
                          for k, v in side["supersession"]["accuracy"].items()))
        if show:
            for x in leaked:
                print(f"   leaked: {x['text']!r} → {x['became']}")
            for m in side["supersession"]["misses"]:
                print(f"   supersession miss: {m['change']!r} (old {m['old']!r}) → {m['superseded']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the full result as JSON")
    parser.add_argument("--show", action="store_true", help="list the leaked non-events and supersession misses")
    parser.add_argument("--holdout", nargs="?", const="holdout", default=None, metavar="NAME",
                        help="score tests/fixtures/extraction/NAME.tsv (default holdout; written after the model "
                             "was frozen) instead of the test split")
    parser.add_argument("--locomo", type=Path, default=None,
                        help="a LoCoMo conversation file: what the user side's messages become, before and after")
    args = parser.parse_args()
    if args.locomo is not None:
        print(json.dumps(locomo(args.locomo), ensure_ascii=False, indent=1))
        return 0
    result = run(args.holdout or "test")
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=1))
    else:
        report(result, args.show)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
