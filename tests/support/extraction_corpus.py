"""The labelled extraction corpus (tests/fixtures/extraction/*.tsv) and its fixed train/test split.

Each language's items are in ``<lang>.tsv`` and any ``<lang>.<batch>.tsv`` (batches written separately, so writers
never edit one file). Labels follow GUIDE.md in the same folder.

Each line: ``label<TAB>sentence[<TAB>the earlier statement a change supersedes]``; ``#`` lines are comments. The
split is fixed and needs no stored list: within each language and label, items are ordered by the SHA-1 of their
text and every third one (positions 2, 5, 8, …) is a test item, the rest train. Adding an item can move others
between splits, so the trainer, the benchmark and the tests always recompute it, and a test item is never trained on.

``regression.tsv`` holds the sentences of the rule proposer's older regression table (tests/test_rule_events.py,
minus any the README shows): always train, never scored, so the behaviour those tests pin keeps holding.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

FOLDER = Path(__file__).resolve().parents[1] / "fixtures" / "extraction"
LANGS = ("en", "zh")
LABELS = ("none", "decision", "change", "plan", "preference", "rule", "fact")


@dataclass(frozen=True)
class Item:
    lang: str
    label: str
    text: str
    old: str | None  # for a change: the earlier statement it supersedes
    split: str


def _key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def _rows(path: Path) -> list[tuple[str, str, str | None]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        label, text, *rest = line.split("\t")
        out.append((label, text, rest[0] if rest and rest[0] else None))
    return out


def load(folder: Path = FOLDER) -> list[Item]:
    items: list[Item] = []
    seen: set[str] = set()
    for lang in LANGS:
        rows: dict[str, list[tuple[str, str | None]]] = {}
        files = [folder / f"{lang}.tsv", *sorted(folder.glob(f"{lang}.*.tsv"))]
        for label, text, old in (row for path in files for row in _rows(path)):
            if label not in LABELS:
                raise ValueError(f"{lang}: {text!r} has label {label!r}, not one of {LABELS}")
            if text in seen:
                raise ValueError(f"{lang}: {text!r} is listed twice")
            seen.add(text)
            rows.setdefault(label, []).append((text, old))
        for label, group in sorted(rows.items()):
            for i, (text, old) in enumerate(sorted(group, key=lambda r: _key(r[0]))):
                items.append(Item(lang, label, text, old, "test" if i % 3 == 2 else "train"))
    for label, text, old in _rows(folder / "regression.tsv"):
        lang = "zh" if re.search(r"[\u4e00-\u9fff]", text) else "en"
        items.append(Item(lang, label, text, old, "regression"))
    return items


def split(name: str, folder: Path = FOLDER) -> list[Item]:
    """'train' (regression items included), 'test', or 'corpus-train' (train without the regression items)."""
    if name == "train":
        return [item for item in load(folder) if item.split in ("train", "regression")]
    if name == "corpus-train":
        return [item for item in load(folder) if item.split == "train"]
    return [item for item in load(folder) if item.split == name]


def holdout(name: str = "holdout", folder: Path = FOLDER) -> list[Item]:
    """``<name>.tsv`` (holdout.tsv, holdout-2.tsv, …): sentences written after a model was frozen, by writers who did
    not see the training corpus; scored, never trained on."""
    return [Item("zh" if re.search(r"[\u4e00-\u9fff]", text) else "en", label, text, old, name)
            for label, text, old in _rows(folder / f"{name}.tsv")]
