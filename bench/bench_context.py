"""Context-window management in the real host: StrataGate's context engine vs DSH's stock compaction.

Run from the repo root (DSH is installed into .dsh-local on first use, like the e2e tests):

    .venv/bin/python bench/bench_context.py [--turns 20] [--calls 10] [--window 65536] [--variants engine stock]

One long web-profile session per variant (dsh web, driven over its API by tests/support/dsh_web.py) against the
scripted model server, which reports DeepSeek-style prefix-cache hits (tests/support/model_server.py PrefixCache).
The scripted agent (tests/support/context_agent.py) runs ``--turns`` turns of ``--calls`` real DSH ``bash`` calls
over pytest logs, Python sources and grep results written into the workdir; round 10 reads an incident log that
holds a unique ticket number. A last turn asks for that ticket (the recall probe):

* ``engine``: StrataGate installed in the web profile; the session runs the deployment default, StrataGate's own
  ``stratagate`` preset (DSH's ``standard`` with StrataGate's compaction row, written by the shim); the probe is
  answered with ``search_context`` then ``decompress`` (up to three steps), from what those tools return;
* ``stock``: the same install, but the session runs DSH's shipped ``standard`` preset (compaction-basic) and the
  context engine is switched off (``STRATAGATE_CONTEXT_CONFIG={"enabled": false}``: the sidecar archives and
  never lands anything); the memory tools stay offered, so both variants pay the same tool-schema overhead. The
  probe is answered from what is in the request (a stock summary keeps requests and commands, not every detail).

Reported per variant: prompt tokens of all model requests (agent steps; plus titles, StrataGate's block summaries
and DSH's own summarization calls), peak prompt of an agent step, cache-hit tokens and rate, estimated cost
(miss 1, hit 0.1 per token), stock summaries (compaction/summary events not written by StrataGate), StrataGate
landings, and the probe's answer.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import shlex
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "sidecar"))

from support.context_agent import (  # noqa: E402
    STOCK_COMPACTION_HEAD,
    ScriptedSession,
    ScriptedTurn,
    bash,
    content_text,
    last_tool_text,
    workspace,
)
from support.dsh import DshHome, install_dsh, npm_pack, repo_python  # noqa: E402
from support.dsh_model import is_agent_request, messages  # noqa: E402
from support.dsh_web import plan_deadline_patch, running_web  # noqa: E402
from support.model_server import ScriptedModelServer, count_tokens  # noqa: E402

TICKET = "OPS-73519"
TICKET_RE = re.compile(r"OPS-\d{5}")
PROBE = "Last question: which ticket number did the db-replica incident in the first test runs mention?"
OUR_PROVIDER = "stratagate-py"
MISS_PRICE, HIT_PRICE = 1.0, 0.1


def incident_log() -> str:
    lines = [f"2026-11-30T10:{m:02d}:00Z INFO  request {m} ok in {m * 3 % 97} ms" for m in range(40)]
    lines.insert(23, f"2026-11-30T10:23:07Z ERROR db-replica-7 refused the connection; escalated as ticket {TICKET}")
    return "\n".join(lines) + "\n"


def plan(k: int, calls: int) -> list[Any]:
    """Ten realistic rounds per turn (test logs, file reads, grep results), cycled if ``calls`` > 10."""
    base = [
        bash(f"cat logs/run-{4 * k}.log", "Show the test log"),
        bash(f"grep -n FAILED logs/run-{4 * k + 1}.log logs/run-{4 * k + 2}.log", "Find failed tests"),
        bash(f"cat src/module_{2 * k}.py", "Show the module source"),
        bash(f"sed -n '1,60p' src/module_{2 * k + 1}.py", "Show the start of a module"),
        bash(f"cat logs/run-{4 * k + 1}.log", "Show the next test log"),
        bash(f"grep -rn 'def handler_{k}_' src | head -40", "Find the handlers"),
        bash(f"cat logs/run-{4 * k + 2}.log", "Show another test log"),
        bash(f"wc -l logs/run-{4 * k}.log src/module_{2 * k}.py", "Count lines"),
        bash(f"cat logs/run-{4 * k + 3}.log", "Show the last test log of the batch"),
        bash(f"cat src/module_{2 * k + 40}.py", "Show a related module"),
    ]
    if k == 0:
        base[9] = bash("cat logs/incident.log", "Show the incident log")  # round 10 of the session
    return [base[i % len(base)] for i in range(calls)]


def search_step(body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "search_context", {"query": "db-replica refused connection ticket"}


def decompress_step(body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Decompress the best hit of the search, or go one layer further down what the last decompress showed."""
    last = last_tool_text(body)
    try:
        value = json.loads(last)
    except ValueError:
        value = {}
    hits = value.get("hits") if isinstance(value, dict) else None
    if hits:
        return "decompress", {"id": hits[0]["ref"]}
    for key in ("parts", "children", "refs"):  # a fold/block decompress lists what it was made of
        items = value.get(key) if isinstance(value, dict) else None
        if items:
            first = items[0]
            return "decompress", {"id": first.get("ref") if isinstance(first, dict) else str(first)}
    return "decompress", {"id": str(value.get("id", "")), "full": True}


def answer_from_tools(body: dict[str, Any]) -> str:
    found = TICKET_RE.search(last_tool_text(body))
    return f"The ticket was {found.group(0)}." if found else "I could not find the ticket."


def answer_from_context(body: dict[str, Any]) -> str:
    text = "\n".join(content_text(m.get("content")) for m in messages(body)[:-1])
    found = TICKET_RE.search(text)
    return f"The ticket was {found.group(0)}." if found else "I could not find the ticket."


def scripted_session(turns: int, calls: int, variant: str) -> ScriptedSession:
    script = [
        ScriptedTurn(f"Turn {k}: review test batch {k} and its modules.", plan(k, calls), f"DONE {k}.")
        for k in range(turns)
    ]
    if variant == "engine":
        steps = [search_step, decompress_step, decompress_step, decompress_step]
        probe = ScriptedTurn(
            PROBE, steps, answer_from_tools, done_when=lambda b: bool(TICKET_RE.search(last_tool_text(b)))
        )
    else:
        probe = ScriptedTurn(PROBE, [], answer_from_context)
    return ScriptedSession([*script, probe])


def composition(body: dict[str, Any]) -> dict[str, int]:
    """Where one request's tokens go: tool schemas, system prompt, raw tool outputs, StrataGate cards, StrataGate
    checkpoints (blocks/folds), DSH summaries, everything else (user/assistant text, runtime context)."""
    out = {"tools": count_tokens(json.dumps(body.get("tools") or [])), "system": 0, "raw tool": 0, "cards": 0}
    out |= {"checkpoints": 0, "stock summary": 0, "other": 0}
    for m in messages(body):
        text = content_text(m.get("content"))
        n = count_tokens(json.dumps(m, ensure_ascii=False))
        if m.get("role") in ("system", "developer"):
            out["system"] += n
        elif m.get("role") == "tool":
            out["cards" if text.startswith("[stratagate:card") else "raw tool"] += n
        elif text.startswith("[stratagate:"):
            out["checkpoints"] += n
        elif "<compacted-summary>" in text:
            out["stock summary"] += n
        else:
            out["other"] += n
    return out


@dataclass
class Result:
    variant: str
    turns: int
    tool_rounds: int
    agent_requests: int
    agent_prompt: int
    other_prompt: int
    peak: int
    hit: int
    total_prompt: int
    stock_summaries: int
    landings: int
    probe: str
    seconds: float
    turn_ends: list[dict[str, int]]  # composition of each turn's last agent request

    @property
    def hit_rate(self) -> float:
        return self.hit / self.total_prompt if self.total_prompt else 0.0

    @property
    def cost(self) -> float:
        return (self.total_prompt - self.hit) * MISS_PRICE + self.hit * HIT_PRICE


def run_variant(variant: str, args: argparse.Namespace, tgz: Path, install: Any, root: Path) -> Result:
    work = workspace(root / "project", logs=4 * args.turns + 4, sources=2 * args.turns + 42)
    (work / "logs" / "incident.log").write_text(incident_log())
    agent = scripted_session(args.turns, args.calls, variant)
    server = ScriptedModelServer()
    server.default = agent
    started = time.monotonic()
    with server:
        home = DshHome(root / "home", install, server.base_url, logs=root / "logs", context_window=args.window)
        home.extra_env.update(
            {
                "STRATAGATE_PYTHON": str(repo_python()),
                "PYTHONPATH": str(REPO / "sidecar"),
                "STRATAGATE_SHIM_LOG": str(root / "logs" / "shim.log"),
                "STRATAGATE_HOST_LLM_TIMEOUT": "60",
            }
        )
        if variant == "stock":
            home.extra_env["STRATAGATE_CONTEXT_CONFIG"] = json.dumps({"enabled": False})
        home.add_plugin(tgz, "web")
        preset = None if variant == "engine" else "standard"  # engine: the default the plugin sets (stratagate)
        try:
            with running_web(home, work, patches=[plan_deadline_patch(home)]) as web:
                session = web.create_session(work, preset=preset)
                if session.preset != ("stratagate" if variant == "engine" else "standard"):
                    raise AssertionError(f"{variant}: the session runs preset {session.preset}")
                for turn in agent.turns:
                    session.send(turn.prompt, timeout=args.turn_timeout, requests=lambda: len(server.requests))
                    print(
                        f"  {variant}: turn {len(session.turns)}/{len(agent.turns)} done", file=sys.stderr, flush=True
                    )
                log = session.history()
        finally:
            home.kill_all()
        bodies, usages = server.requests, server.usages
    agent_idx = [
        i
        for i, b in enumerate(bodies)
        if is_agent_request(b) and not content_text(messages(b)[-1].get("content")).startswith(STOCK_COMPACTION_HEAD)
    ]
    summaries = [e for e in log if e.get("type") == "compaction/summary"]
    ours = [e for e in summaries if (e.get("data") or {}).get("provider") == OUR_PROVIDER]
    prunes = [e for e in log if e.get("type") == "compaction/prune"]
    probe_answers = [a for t, a in agent.answers if t == len(agent.turns) - 1]
    return Result(
        variant=variant,
        turns=len(agent.turns),
        tool_rounds=len(agent.calls),
        agent_requests=len(agent_idx),
        agent_prompt=sum(usages[i].prompt_tokens for i in agent_idx),
        other_prompt=sum(u.prompt_tokens for i, u in enumerate(usages) if i not in set(agent_idx)),
        peak=max((usages[i].prompt_tokens for i in agent_idx), default=0),
        hit=sum(u.cache_hit_tokens for u in usages),
        total_prompt=sum(u.prompt_tokens for u in usages),
        stock_summaries=len(summaries) - len(ours),
        landings=len(ours) + len(prunes),
        probe=probe_answers[-1] if probe_answers else "(no answer)",
        seconds=time.monotonic() - started,
        turn_ends=[composition(bodies[max(i for i in agent_idx if i < t.request_range[1])]) for t in session.turns],
    )


def table(results: list[Result], window: int) -> str:
    header = [
        "variant", "turns", "tool rounds", "agent requests", "prompt tokens (agent steps)",
        "other requests' prompt tokens", "total prompt tokens", "peak agent prompt", "cache-hit tokens", "hit rate",
        "est. cost (miss 1, hit 0.1)", "stock summaries", "StrataGate landings", "recall probe",
    ]  # fmt: skip
    rows = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 2) + "---|"]
    for r in results:
        ok = "✓" if TICKET in r.probe else "✗"
        cells = [
            r.variant, r.turns, r.tool_rounds, r.agent_requests, f"{r.agent_prompt:,}", f"{r.other_prompt:,}",
            f"{r.total_prompt:,}", f"{r.peak:,} ({r.peak / window:.0%} of W)", f"{r.hit:,}", f"{r.hit_rate:.1%}",
            f"{r.cost:,.0f}", r.stock_summaries, r.landings, f"{ok} {r.probe}",
        ]  # fmt: skip
        rows.append("| " + " | ".join(str(c) for c in cells) + " |")
    by = {r.variant: r for r in results}
    if "engine" in by and "stock" in by:
        e, s = by["engine"], by["stock"]
        rows.append("")
        rows.append(
            f"Engine / stock: total prompt tokens {e.total_prompt / s.total_prompt:.2f}×, "
            f"cost {e.cost / s.cost:.2f}×, peak {e.peak / s.peak:.2f}×."
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=20, help="tool turns before the probe turn")
    parser.add_argument("--calls", type=int, default=10, help="tool rounds per turn")
    parser.add_argument("--window", type=int, default=65536, help="the model's context window (settings.yaml)")
    parser.add_argument("--variants", nargs="+", default=["engine", "stock"], choices=["engine", "stock"])
    parser.add_argument("--turn-timeout", type=float, default=900)
    parser.add_argument("--json", type=Path, help="also write the results as JSON")
    parser.add_argument("--keep", type=Path, help="run in this (new) folder and keep it: DSH_HOME, logs, shim log")
    args = parser.parse_args(argv)
    install = install_dsh()
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=False)
    with (
        contextlib.nullcontext(str(args.keep)) if args.keep else tempfile.TemporaryDirectory(prefix="bench-ctx-") as tmp
    ):
        tgz = npm_pack(REPO, Path(tmp) / "pack", install)
        results = []
        for variant in args.variants:
            print(f"running {variant} …", file=sys.stderr, flush=True)
            results.append(run_variant(variant, args, tgz, install, Path(tmp) / variant))
    print(f"$ .venv/bin/python bench/bench_context.py {shlex.join(argv if argv is not None else sys.argv[1:])}")
    print(f"window {args.window:,} tokens; stock summary line 0.8·W = {0.8 * args.window:,.0f}\n")
    print(table(results, args.window))
    for r in results:
        print(f"\n{r.variant}: {r.seconds:.0f} s; composition of the last request of turns 1, 5, 10, 15, 20, 21:")
        for k in (1, 5, 10, 15, 20, 21):
            if k <= len(r.turn_ends):
                parts = ", ".join(f"{name} {n:,}" for name, n in r.turn_ends[k - 1].items() if n)
                print(f"  turn {k}: {parts}")
    if args.json:
        args.json.write_text(
            json.dumps([r.__dict__ | {"hit_rate": r.hit_rate, "cost": r.cost} for r in results], indent=1)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
