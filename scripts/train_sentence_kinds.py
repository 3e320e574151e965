"""Train the zero-model sentence classifier (events/sentence_kind.py) on the train split of the labelled corpus
(tests/fixtures/extraction/, split fixed by tests/support/extraction_corpus.py) and write its weights to
sidecar/stratagate/events/data/sentence_kinds.json.

Full-batch training from a fixed start for a fixed number of steps: the same corpus always gives the same weights.
Features seen fewer than MIN_COUNT times in the train split are left out (they cannot generalise and only make the
file bigger). The test split and the holdouts are never read here.

    PYTHONPATH=$PWD/sidecar .venv/bin/python scripts/train_sentence_kinds.py [--check] [--cv K]

``--check`` trains in memory and fails when the result differs from the shipped file (CI can run it).
``--cv K`` scores the model by K-fold cross-validation over the train split alone (each fold trained on the other
folds plus the regression sentences, scored as bench/bench_extraction.py scores the test split): precision and
recall overall, per language and per type, supersession, and a confusion matrix. Develop against this, never
against the test split.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "sidecar"))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

from stratagate.events import sentence_kind  # noqa: E402
from support.extraction_corpus import Item, split  # noqa: E402

DIGITS = 4


@dataclass(frozen=True)
class Config:
    """The shipped settings, chosen by ``--cv 4`` on the train split (docs/benchmarks.md)."""

    min_count: int = 2
    l2: float = 0.001
    steps: int = 1500
    rate: float = 2.0
    threshold: float = sentence_kind.MIN_PROBABILITY
    min_kind: float = 0.45
    regression_repeat: int = 2
    """How many times each regression.tsv sentence is trained on: they pin what the rule proposer's tests expect."""


class Sparse:
    """A binary matrix of items × features as (row, column) pairs: the products training needs, without scipy."""

    def __init__(self, rows: list[list[int]], width: int) -> None:
        self.n, self.width = len(rows), width
        self.r = np.array([i for i, cols in enumerate(rows) for _ in cols], dtype=np.int64)
        self.c = np.array([c for cols in rows for c in cols], dtype=np.int64)
        self.starts = np.searchsorted(self.r, np.arange(self.n))
        self.empty = np.bincount(self.r, minlength=self.n) == 0
        order = np.argsort(self.c, kind="stable")
        self.cr, self.cc = self.r[order], self.c[order]
        self.cols, self.cstarts = np.unique(self.cc, return_index=True)

    def dot(self, w: np.ndarray) -> np.ndarray:
        out = np.add.reduceat(w[self.c], self.starts, axis=0) if len(self.c) else np.zeros((self.n, w.shape[1]))
        out[self.empty] = 0.0
        return out

    def tdot(self, g: np.ndarray) -> np.ndarray:
        out = np.zeros((self.width, g.shape[1]))
        if len(self.cc):
            out[self.cols] = np.add.reduceat(g[self.cr], self.cstarts, axis=0)
        return out


def fit(x: Sparse, labels: list[int], cfg: Config) -> tuple[np.ndarray, np.ndarray]:
    """Multinomial logistic regression with L2, full-batch gradient descent from zeros."""
    k = len(sentence_kind.LABELS)
    y = np.zeros((x.n, k))
    y[np.arange(x.n), labels] = 1.0
    w, b = np.zeros((x.width, k)), np.zeros(k)
    for _ in range(cfg.steps):
        z = x.dot(w) + b
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        g = (p - y) / x.n
        w -= cfg.rate * (x.tdot(g) + cfg.l2 * w)
        b -= cfg.rate * g.sum(axis=0)
    return w, b


_FEATURES = sentence_kind.features


@cache
def _features(text: str) -> tuple[str, ...]:
    return tuple(_FEATURES(text))


def train(items: list[tuple[str, str]], cfg: Config | None = None,
          regression: list[tuple[str, str]] | None = None) -> dict[str, object]:
    cfg = cfg or Config()
    labels = sentence_kind.LABELS
    trained_on = len(items) + len(regression or [])
    items = items + (regression or []) * cfg.regression_repeat
    feats = [_features(text) for text, _ in items]
    counts = Counter(f for fs in feats for f in fs)
    vocab = sorted(f for f, n in counts.items() if n >= cfg.min_count)
    index = {f: i for i, f in enumerate(vocab)}
    x = Sparse([[index[f] for f in fs if f in index] for fs in feats], len(vocab))
    w, b = fit(x, [labels.index(label) for _, label in items], cfg)

    def rnd(a: np.ndarray) -> list[float]:
        return [round(float(v), DIGITS) for v in a]

    weights = {f: rnd(w[i]) for f, i in index.items() if np.abs(w[i]).max() >= 10**-DIGITS}
    return {"labels": list(labels), "bias": rnd(b), "weights": weights, "trained_on": trained_on,
            "features": len(weights), "threshold": cfg.threshold, "min_kind": cfg.min_kind}


# --- cross-validation -----------------------------------------------------------------------------------------


def folds(items: list[Item], k: int) -> list[list[Item]]:
    """K folds, each language and label spread evenly: items ordered by SHA-1 of their text, dealt round-robin."""
    out: list[list[Item]] = [[] for _ in range(k)]
    groups: dict[tuple[str, str], list[Item]] = {}
    for item in items:
        groups.setdefault((item.lang, item.label), []).append(item)
    for _, group in sorted(groups.items()):
        for i, item in enumerate(sorted(group, key=lambda it: hashlib.sha1(it.text.encode()).hexdigest())):
            out[i % k].append(item)
    return out


def _with_model(model: sentence_kind.Model, run: Callable[[], Any]) -> Any:
    saved = sentence_kind.model
    sentence_kind.model = lambda: model  # type: ignore[assignment]
    try:
        return run()
    finally:
        sentence_kind.model = saved  # type: ignore[assignment]


def cross_validate(k: int, cfg: Config, sweep: tuple[tuple[float, float], ...] = ()) -> dict[str, Any]:
    import bench_extraction as bench

    sentence_kind.features = lambda text: list(_features(text))  # type: ignore[assignment]
    corpus = split("corpus-train")
    regression = [(i.text, i.label) for i in split("train") if i.split == "regression"]
    got: dict[str, str] = {}
    swept: dict[tuple[float, float], dict[str, str]] = {t: {} for t in sweep}
    sup_ok = sup_n = 0
    for n, fold in enumerate(folds(corpus, k)):
        held = {i.text for i in fold}
        rest = [(i.text, i.label) for i in corpus if i.text not in held]
        model = sentence_kind.parse_model(train(rest, cfg, regression))
        got.update(_with_model(model, lambda fold=fold: {i.text: bench.predicted(i.text) for i in fold}))
        for t, found in swept.items():
            other = replace(model, threshold=t[0], min_kind=t[1])
            found.update(_with_model(other, lambda fold=fold: {i.text: bench.predicted(i.text) for i in fold}))
        sup = _with_model(model, lambda fold=fold: bench.supersession(fold))
        sup_n += sup["n"]["all"]
        sup_ok += round(sup["accuracy"].get("all", 0.0) * sup["n"]["all"])
        print(f"  fold {n + 1}/{k} done", file=sys.stderr)
    return {"scores": score(corpus, got), "supersession": sup_ok / sup_n if sup_n else None, "got": got,
            "corpus": corpus, "sweep": {t: score(corpus, found) for t, found in swept.items()}}


def score(items: list[Item], got: dict[str, str]) -> dict[str, tuple[float, float, int]]:
    """(precision, recall, gold events) overall, per language and per type (a type's precision: right / items
    predicted as that type)."""
    out = {}
    for key in ("all", "en", "zh", *sentence_kind.EVENT_LABELS):
        mine = [i for i in items if key == "all" or i.lang == key or i.label == key]
        if key in sentence_kind.EVENT_LABELS:
            pred = [i for i in items if got[i.text] == key]
            right = sum(1 for i in pred if i.label == key)
            became = len(pred)
        else:
            became = sum(1 for i in mine if got[i.text] != "none")
            right = sum(1 for i in mine if i.label != "none" and got[i.text] == i.label)
        gold = sum(1 for i in mine if i.label != "none")
        out[key] = (right / became if became else 0.0, right / gold if gold else 0.0, gold)
    return out


def report(result: dict[str, Any], show: bool = False) -> None:
    print("| slice | gold | P | R |\n|---|---:|---:|---:|")
    for key, (p, r, gold) in result["scores"].items():
        print(f"| {key} | {gold} | {p:.3f} | {r:.3f} |")
    for t, scores in result.get("sweep", {}).items():
        overall = "  ".join(f"{key} {p:.3f}/{r:.3f}" for key, (p, r, _) in scores.items() if key in ("all", "en", "zh"))
        print(f"none below {t[0]:.2f}, kind at least {t[1]:.2f}: {overall}")
    sup = result["supersession"]
    print(f"supersession {sup:.3f}" if sup is not None else "supersession –")
    labels = sentence_kind.LABELS
    matrix = Counter((i.label, result["got"][i.text]) for i in result["corpus"])
    print("gold \\ got  " + " ".join(f"{x[:6]:>6}" for x in labels))
    for gold in labels:
        print(f"{gold:<11} " + " ".join(f"{matrix[(gold, got)]:>6}" for got in labels))
    asks = [i.text for i in result["corpus"] if i.label == "none" and result["got"][i.text] != "none"
            and sentence_kind.guard(i.text) in ("question", "request")]
    print(f"questions/requests as events: {len(asks)}")
    if show:
        for i in result["corpus"]:
            if result["got"][i.text] != i.label:
                print(f"  {i.lang} {i.label:>10} → {result['got'][i.text]:<10} {i.text}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when the shipped weights differ")
    parser.add_argument("--cv", type=int, default=0, metavar="K", help="K-fold cross-validation on the train split")
    parser.add_argument("--sweep", nargs="*", default=(), metavar="T/M",
                        help="with --cv: also score these thresholds (the 'none' probability below which a sentence "
                             "is an event / the least share of the event probability its kind must have)")
    parser.add_argument("--show", action="store_true", help="with --cv: list the misjudged sentences")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="override a training setting (with --cv, to compare settings)")
    args = parser.parse_args()
    cfg = Config()
    for pair in args.set:
        name, value = pair.split("=", 1)
        cfg = replace(cfg, **{name: type(getattr(cfg, name))(json.loads(value))})
    if args.cv:
        print(f"{args.cv}-fold cross-validation on the train split, {cfg}")
        sweep = tuple((float(t), float(m)) for t, m in (x.split("/") for x in args.sweep))
        report(cross_validate(args.cv, cfg, sweep), args.show)
        return 0
    items = split("train")
    data = train([(i.text, i.label) for i in items if i.split != "regression"], cfg,
                 [(i.text, i.label) for i in items if i.split == "regression"])
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), sort_keys=True) + "\n"
    if args.check:
        same = sentence_kind.WEIGHTS.read_text(encoding="utf-8") == text
        print("weights are up to date" if same else "weights differ: run scripts/train_sentence_kinds.py")
        return 0 if same else 1
    sentence_kind.WEIGHTS.parent.mkdir(parents=True, exist_ok=True)
    sentence_kind.WEIGHTS.write_text(text, encoding="utf-8")
    print(f"{data['features']} features from {data['trained_on']} train items → {sentence_kind.WEIGHTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
