"""Cost of secret redaction and of the rendering rule on realistic texts (in process, one thread).

Run from the repo root:  .venv/bin/python bench/bench_safety.py [--repeat 30]

Texts: a prose turn (~1.9 KB), a 200-line and a 2,000-line tool result (code listing with paths and numbers), an
activation-sized memory text, and the same tool result with 20 secrets planted. Each figure is the median of
``--repeat`` runs; "inert" is measured without its cache (the cold path), and also warm.
"""

from __future__ import annotations

import argparse
import platform
import shlex
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "sidecar"))

from stratagate.redact import redact  # noqa: E402
from stratagate.safety import inert as inert_mod  # noqa: E402

PROSE = (
    "We decided to move the staging deploy to Fridays after the incident on 2026-05-06; the retry loop in "
    "src/deploy/retry.py used a fixed 1 s delay, which hammered the API when the token budget ran out. I changed "
    "it to exponential backoff capped at 60 s, added tests/test_retry.py::test_backoff_caps and bumped the client "
    "to 2.4.1. Next week we switch the package manager from npm to pnpm (see PR #4312). "
) * 4


def listing(lines: int) -> str:
    return "\n".join(
        f"src/module_{i}.py:{i * 7}: def handler_{i}(event, context):  # returns {{'status': {200 + i % 5}}}"
        for i in range(lines)
    )


def with_secrets(text: str) -> str:
    lines = text.split("\n")
    secrets = [
        "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY",
        "token: ghp_Zq8Rk2bN5vT1xW7yA3cD9eF0gH4jK6mL2nP8",
        "postgres://admin:Sup3r-Secret-pw@db.internal:5432/app",
        "the password for staging is Tr0ub4dor&3",
    ]
    for i in range(20):
        lines[(i * 37) % len(lines)] += " " + secrets[i % len(secrets)]
    return "\n".join(lines)


def median_ms(fn, arg, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn(arg)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    texts = {
        "prose turn": PROSE,
        "tool result, 200 lines": listing(200),
        "tool result, 2,000 lines": listing(2000),
        "tool result, 2,000 lines, 20 secrets": with_secrets(listing(2000)),
        "activation-sized memory text": (PROSE + "\n" + listing(20)) * 2,
    }
    cold = inert_mod._render
    print(f"Command: {shlex.join(['.venv/bin/python', 'bench/bench_safety.py', *sys.argv[1:]])}")
    print(f"Python {platform.python_version()}, {platform.machine()}, median of {args.repeat} runs\n")
    print("| text | size | redact | inert (cold) | inert (warm) | redact throughput |")
    print("|---|---|---|---|---|---|")
    for name, text in texts.items():
        r = median_ms(redact, text, args.repeat)
        c = median_ms(lambda t: cold(t, False), text, args.repeat)
        inert_mod.inert(text)
        w = median_ms(inert_mod.inert, text, args.repeat)
        size = len(text.encode())
        print(f"| {name} | {size / 1024:.1f} KB | {r:.2f} ms | {c:.2f} ms | {w:.3f} ms | {size / r / 1000:.1f} MB/s |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
