"""Train the zero-model sentence classifier (events/sentence_kind.py) on the train split of the labelled corpus
(tests/fixtures/extraction/, split fixed by tests/support/extraction_corpus.py) and write its weights to
sidecar/stratagate/events/data/sentence_kinds.json.

Multinomial logistic regression with L2, full-batch gradient descent from zeros for a fixed number of steps: the
same corpus always gives the same weights (no randomness). Features seen fewer than MIN_COUNT times in the train
split are left out (they cannot generalise and only make the file bigger). The test split is never read here.

    PYTHONPATH=$PWD/sidecar .venv/bin/python scripts/train_sentence_kinds.py [--check]

``--check`` trains in memory and fails when the result differs from the shipped file (CI can run it).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "sidecar"))
sys.path.insert(0, str(REPO / "tests"))

from stratagate.events import sentence_kind  # noqa: E402
from support.extraction_corpus import split  # noqa: E402

MIN_COUNT = 2
L2 = 0.002
STEPS = 1500
RATE = 2.0
DIGITS = 4


def train(items: list[tuple[str, str]], l2: float = L2, min_count: int = MIN_COUNT) -> dict[str, object]:
    labels = sentence_kind.LABELS
    feats = [sentence_kind.features(text) for text, _ in items]
    counts = Counter(f for fs in feats for f in fs)
    vocab = sorted(f for f, n in counts.items() if n >= min_count)
    index = {f: i for i, f in enumerate(vocab)}
    x = np.zeros((len(items), len(vocab)))
    for row, fs in enumerate(feats):
        for f in fs:
            if f in index:
                x[row, index[f]] = 1.0
    y = np.zeros((len(items), len(labels)))
    for row, (_, label) in enumerate(items):
        y[row, labels.index(label)] = 1.0
    w = np.zeros((len(vocab), len(labels)))
    b = np.zeros(len(labels))
    for _ in range(STEPS):
        logits = x @ w + b
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        g = (p - y) / len(items)
        w -= RATE * (x.T @ g + l2 * w)
        b -= RATE * g.sum(axis=0)
    weights = {f: [round(float(v), DIGITS) for v in w[i]] for f, i in index.items()
               if np.abs(w[i]).max() >= 10 ** -DIGITS}
    return {"labels": list(labels), "bias": [round(float(v), DIGITS) for v in b], "weights": weights,
            "trained_on": len(items), "features": len(weights)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when the shipped weights differ")
    args = parser.parse_args()
    data = train([(item.text, item.label) for item in split("train")])
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
