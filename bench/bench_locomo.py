"""LoCoMo evidence retrieval: memory_search_raw against rank-bm25, plain SQLite FTS5 and the dense model alone.

Run from the repo root:  .venv/bin/python bench/bench_locomo.py [--file ../shared/data/locomo/26.json] [--split]
                                                                 [--json out.json] [--skip-ablation]

1. A real `stratagate serve` subprocess on a temporary database captures the whole conversation through
   `turn.capture`: each LoCoMo session is a session, speaker A is the user and speaker B the assistant (an A
   message followed by a B message is one turn), every message is stamped with its session's date and time,
   one minute apart. The text is "<speaker>: <text>" (as LoCoMo's own retrieval baselines format it: the speaker
   is the subject of most questions; --no-speaker-names drops it), and a shared photo is appended as
   "[shares a photo: <caption>]". Every system gets the same texts. Dialogue ids never enter the text: the bench
   maps (session, turn, role) back to them.
2. Every question of categories 1–4 (5 is adversarial: no evidence) goes to `memory_search_raw` with limit 20.
   recall@k is the share of the question's evidence dialogue ids among the top k hits (neighbours shown with a
   hit do not count); MRR is 1 / rank of the first evidence hit within the top 20 (0 when none is there).
3. Baselines in the same run over the same message texts: rank-bm25 BM25Okapi (lower-cased \\w+ words, and a
   second time over our tokenizer's terms), a plain SQLite FTS5 table (default unicode61 tokenizer, the
   question's words OR-ed, bm25()), and the dense model alone (cosine; when stratagate.search.dense is available).
4. Ablation: the database is copied and ranked in-process with one change added at a time (what each bought).

With --split every figure is also given for two halves of the questions: the even-numbered ones (0, 2, 4, … in
file order), on which the ranking constants were chosen, and the odd-numbered ones, held out. (Interleaved, not
first/second half: LoCoMo files list questions grouped by category, so a cut in the middle gives halves with
different categories.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import re
import shlex
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "sidecar"))

from conftest import summary_arguments  # noqa: E402
from stratagate.search import raw  # noqa: E402
from stratagate.text.terms import terms  # noqa: E402
from support.sidecar import SidecarClient  # noqa: E402

DEFAULT_FILE = REPO.parent / "shared" / "data" / "locomo" / "26.json"
KS = (5, 10, 20)
LIMIT = 20
NAMESPACE = "locomo"
_DIA = re.compile(r"D\d+:\d+")
CATEGORY = {1: "1 multi-hop", 2: "2 temporal", 3: "3 open-domain", 4: "4 single-hop"}


# ---------------------------------------------------------------- the conversation


@dataclass
class Message:
    dia_id: str
    speaker: str
    text: str
    at: datetime
    session: str
    index: int  # position in the whole conversation


@dataclass
class Question:
    index: int
    text: str
    category: int
    evidence: set[str]


@dataclass
class Conversation:
    name: str
    speaker_a: str
    speaker_b: str
    messages: list[Message]
    questions: list[Question]
    dropped_evidence: int = 0


def _session_time(raw_value: str) -> datetime:
    return datetime.strptime(raw_value.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def load(path: Path, speaker_names: bool = True) -> Conversation:
    data = json.loads(path.read_text())
    if isinstance(data, list):  # the full locomo10.json: take the first conversation
        data = data[0]
    conv = data.get("conversation", data)
    qa = data.get("qa", conv.get("qa", []))
    messages: list[Message] = []
    numbers = sorted(int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k) and conv[k])
    for n in numbers:
        start = _session_time(conv[f"session_{n}_date_time"])
        for i, turn in enumerate(conv[f"session_{n}"]):
            text = turn.get("text", "")
            if turn.get("blip_caption"):
                text = f"{text} [shares a photo: {turn['blip_caption']}]"
            if speaker_names:
                text = f"{turn['speaker']}: {text}"
            messages.append(
                Message(turn["dia_id"], turn["speaker"], text, start + timedelta(minutes=i), f"s{n}", len(messages))
            )
    known = {m.dia_id for m in messages}
    questions = []
    dropped = 0
    for q in qa:
        if q.get("category") not in CATEGORY:
            continue
        found = set(_DIA.findall(" ".join(map(str, q.get("evidence", [])))))
        evidence = found & known
        dropped += len(found - known)
        if evidence:
            questions.append(Question(len(questions), q["question"], q["category"], evidence))
    name = data.get("sample_id") or path.stem
    return Conversation(name, conv["speaker_a"], conv["speaker_b"], messages, questions, dropped)


def capture_plan(conv: Conversation) -> tuple[list[dict[str, Any]], dict[tuple[str, int, str], str]]:
    """turn.capture params in order, and (session, turn seq, role) -> dia id."""
    turns: list[dict[str, Any]] = []
    where: dict[tuple[str, int, str], str] = {}
    seq: dict[str, int] = {}
    msgs = conv.messages
    i = 0
    while i < len(msgs):
        m = msgs[i]
        n = seq[m.session] = seq.get(m.session, 0) + 1
        params: dict[str, Any] = {
            "namespace": NAMESPACE,
            "session": m.session,
            "receipt": f"locomo:{conv.name}:{m.dia_id}",
            "started_at": m.at.isoformat(),
            "ended_at": m.at.isoformat(),
            "end_reason": "stop",
        }
        if m.speaker == conv.speaker_a:
            params["user"] = m.text
            where[(m.session, n, "user")] = m.dia_id
            nxt = msgs[i + 1] if i + 1 < len(msgs) else None
            if nxt is not None and nxt.session == m.session and nxt.speaker == conv.speaker_b:
                params["assistant"] = nxt.text
                params["ended_at"] = nxt.at.isoformat()
                where[(m.session, n, "assistant")] = nxt.dia_id
                i += 1
        else:
            params["assistant"] = m.text
            where[(m.session, n, "assistant")] = m.dia_id
        turns.append(params)
        i += 1
    return turns, where


# ---------------------------------------------------------------- scoring


@dataclass
class Run:
    name: str
    ranked: list[list[str]] = field(default_factory=list)  # per question: dia ids, best first
    latencies: list[float] = field(default_factory=list)
    index_s: float | None = None
    note: str = ""


def _dedupe(ids: list[str]) -> list[str]:
    return list(dict.fromkeys(ids))


def metrics(questions: list[Question], ranked: list[list[str]]) -> dict[str, float]:
    out: dict[str, float] = {f"r@{k}": 0.0 for k in KS} | {"mrr": 0.0}
    if not questions:
        return out | {"n": 0}
    for q, got in zip(questions, ranked, strict=True):
        got = _dedupe(got)[:LIMIT]
        for k in KS:
            out[f"r@{k}"] += len(q.evidence & set(got[:k])) / len(q.evidence)
        first = next((i for i, d in enumerate(got) if d in q.evidence), None)
        out["mrr"] += 0.0 if first is None else 1.0 / (first + 1)
    return {k: v / len(questions) for k, v in out.items()} | {"n": len(questions)}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else math.nan


# ---------------------------------------------------------------- baselines


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def run_rank_bm25(conv: Conversation, tokenize: Callable[[str], list[str]], name: str) -> Run:
    from rank_bm25 import BM25Okapi

    run = Run(name)
    t0 = time.perf_counter()
    corpus = [tokenize(m.text) or ["\u0000"] for m in conv.messages]
    bm25 = BM25Okapi(corpus)
    run.index_s = time.perf_counter() - t0
    for q in conv.questions:
        s = time.perf_counter()
        scores = bm25.get_scores(tokenize(q.text))
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:LIMIT]
        run.latencies.append(time.perf_counter() - s)
        run.ranked.append([conv.messages[i].dia_id for i in order if scores[i] > 0])
    return run


def run_fts5_default(conv: Conversation) -> Run:
    run = Run("SQLite FTS5 bm25() (unicode61, words OR-ed)")
    db = sqlite3.connect(":memory:")
    t0 = time.perf_counter()
    db.execute("CREATE VIRTUAL TABLE t USING fts5(text)")
    db.executemany("INSERT INTO t(rowid, text) VALUES (?, ?)", [(m.index, m.text) for m in conv.messages])
    db.commit()
    run.index_s = time.perf_counter() - t0
    for q in conv.questions:
        match = " OR ".join('"' + w + '"' for w in dict.fromkeys(words(q.text)))
        s = time.perf_counter()
        rows = db.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?", (match, LIMIT)).fetchall()
        run.latencies.append(time.perf_counter() - s)
        run.ranked.append([conv.messages[r[0]].dia_id for r in rows])
    return run


def dense_module() -> Any | None:
    try:
        from stratagate.search import dense
    except ImportError:
        return None
    try:
        return dense if dense.available() is None else None
    except Exception:
        return None


def encode_all(conv: Conversation) -> dict[str, Any] | None:
    """Message and question vectors from the dense model, or None when it is not available here."""
    dense = dense_module()
    if dense is None:
        return None
    import numpy as np

    encoder = dense.get_encoder()
    t0 = time.perf_counter()
    messages = np.asarray(encoder.encode([m.text for m in conv.messages]))
    index_s = time.perf_counter() - t0
    return {"messages": messages, "questions": {}, "index_s": index_s, "encoder": encoder,
            "model": getattr(dense, "MODEL_NAME", "")}


def run_dense(conv: Conversation, vectors: dict[str, Any]) -> Run:
    import numpy as np

    run = Run("dense model alone (cosine)")
    run.index_s = vectors["index_s"]
    matrix = vectors["messages"]
    for q in conv.questions:
        s = time.perf_counter()
        vec = np.asarray(vectors["encoder"].encode([q.text]))[0]
        order = np.argsort(-(matrix @ vec), kind="stable")[:LIMIT]
        run.latencies.append(time.perf_counter() - s)
        vectors["questions"][q.text] = vec
        run.ranked.append([conv.messages[int(i)].dia_id for i in order])
    run.note = f"{vectors['model']}, numpy forward pass; index = encoding every message"
    return run


# ---------------------------------------------------------------- ours, through a real sidecar


async def host(method: str, params: dict) -> dict:
    tool = params["tool"]
    args = summary_arguments(tool["name"], {"messages": params["messages"]})
    call = {"name": tool["name"], "arguments": json.dumps(args)}
    return {"text": "", "finish_reason": "tool_calls", "tool_calls": [call]}


async def run_sidecar(conv: Conversation, db_path: Path, dense: str = "on") -> tuple[Run, dict[str, Any]]:
    turns, where = capture_plan(conv)
    # The test client starts an in-process sidecar with dense off unless told otherwise; the product's default is on.
    client = await SidecarClient.start(db_path, host_handler=host, env={"STRATAGATE_DENSE": dense})
    run = Run("**memory_search_raw** (StrataGate, over JSON-RPC)")
    extra: dict[str, Any] = {}
    try:
        t0 = time.perf_counter()
        for params in turns:
            await client.call("turn.capture", params)
        run.index_s = time.perf_counter() - t0
        extra["turns"] = len(turns)
        # Let block summaries (answered at once by the host below) finish, so queries are timed alone.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            jobs = (await client.call("system.info"))["counts"]["jobs"]
            if jobs["queued"] + jobs["running"] == 0:
                break
            await asyncio.sleep(0.2)
        for q in conv.questions:
            s = time.perf_counter()
            res = await client.tool(NAMESPACE, "bench", "memory_search_raw", {"query": q.text, "limit": LIMIT})
            run.latencies.append(time.perf_counter() - s)
            run.ranked.append([where[(h["session"], h["turn"], h["role"])] for h in res["hits"]])
        try:  # events exist only when block summaries reported durable facts (the scripted host says none)
            info = await client.call("system.info")
            extra["events"] = sum(info["counts"]["events"].values())
        except Exception:
            extra["events"] = None
    finally:
        await client.close()
    run.note = "capture = the whole turn.capture path (fsync, blocks) for every turn"
    return run, extra


# ---------------------------------------------------------------- ablation, in-process on a copy


D = raw.DEFAULT_OPTIONS
STEPS: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    # (label, tokenizer, options) — each step adds one change to the previous one
    ("FTS5 bm25 over the old tokenizer (words, stopwords, CJK bigrams) = the old memory_search_raw",
     {"stem": "none", "dates": False},
     {"stem": "none", "dates": False, "filler_weight": 1.0, "neighbour_share": 0.0, "answer_share": 0.0,
      "neighbour_hits": "", "skip_common": False, "date_boost": 0.0, "dense_weight": 0.0, "dense_pool": 0}),
    ("+ plural stemming (S-stemmer)", {"stem": "plural"}, {"stem": "plural"}),
    ("+ Snowball English stemming instead", {"stem": "snowball"}, {"stem": "snowball"}),
    ("+ date tokens; the period a query names is favoured", {"dates": True},
     {"dates": True, "date_boost": D.date_boost}),
    ("+ question filler words down-weighted", {}, {"filler_weight": D.filler_weight}),
    ("+ neighbour share (matches only)", {}, {"neighbour_share": D.neighbour_share,
                                              "answer_share": D.neighbour_share}),
    ("+ answer share (after a message that asks)", {}, {"answer_share": D.answer_share}),
    ("+ such answers are hits even without the words", {}, {"neighbour_hits": D.neighbour_hits}),
    ("+ terms in half the rows not scored (speed; BM25 weight ~0)", {}, {"skip_common": D.skip_common}),
    ("+ dense score fusion", {}, {"dense_weight": D.dense_weight}),
    ("+ nearest messages by cosine that share a term join", {}, {"dense_pool": D.dense_pool}),
]


async def ablation(
    conv: Conversation, db_path: Path, workdir: Path, steps: list[Any], vectors: Any | None
) -> list[Run]:
    """Rank a copy of the sidecar's database in-process, one change at a time.

    The dense step uses the vectors the sidecar's embedding job stored; if it did not store one for every message,
    the vectors computed here for the dense baseline (``vectors``) instead.
    """
    from stratagate.search.vectors import DenseIndex
    from stratagate.storage import lookup
    from stratagate.storage.db import Database

    copy = workdir / "ablation.db"
    for suffix in ("", "-wal", "-shm"):
        if Path(str(db_path) + suffix).exists():
            shutil.copy(str(db_path) + suffix, str(copy) + suffix)
    db = Database(copy)
    await db.open()
    index = DenseIndex(db)  # the sidecar's dense channel over this copy (its stored message vectors)
    runs = []
    try:
        ns = await lookup.namespace_id(db, NAMESPACE)
        rows = await db.fetchall(
            "SELECT m.id, s.key, t.seq, m.role FROM messages m JOIN turns t ON t.id = m.turn_id"
            " JOIN sessions s ON s.id = m.session_id WHERE m.namespace_id = ?",
            (ns,),
        )
        _, where = capture_plan(conv)
        dia = {int(r[0]): where[(r[1], r[2], r[3])] for r in rows}
        stored = await db.scalar(
            "SELECT COUNT(*) FROM embeddings WHERE namespace_id = ? AND kind = 'message'", (ns,)
        )
        similarities = None  # the sidecar's own stored vectors, when it has one for every message
        if vectors is not None and stored != len(dia):
            position = {m.dia_id: m.index for m in conv.messages}
            query_vectors = vectors["questions"]

            async def similarities(query: str, ids: list[int] | None, k: int) -> dict[int, float]:
                cosine = vectors["messages"] @ query_vectors[query]
                if ids is None:
                    best = sorted(dia, key=lambda i: -cosine[position[dia[i]]])[:k]
                    return {i: float(cosine[position[dia[i]]]) for i in best}
                return {i: float(cosine[position[dia[i]]]) for i in ids}

        tokenizer: dict[str, Any] = {}
        options = raw.RawOptions()
        indexed: dict[str, Any] | None = None
        for label, tok, opts in steps:
            tokenizer = tokenizer | tok
            options = replace(options, **opts)
            if options.dense_weight > 0 and similarities is None and stored != len(dia):
                continue
            if tokenizer != indexed:
                async with db.transaction() as conn:
                    await raw.reindex_messages(conn, ns, **tokenizer)
                indexed = dict(tokenizer)
            run = Run(label)
            for q in conv.questions:
                s = time.perf_counter()
                hits = await raw.rank(db, ns, q.text, raw.RawFilters(), options, similarities, dense=index)
                run.latencies.append(time.perf_counter() - s)
                run.ranked.append([dia[h.message_id] for h in hits[:LIMIT]])
            runs.append(run)
    finally:
        await db.close()
    return runs


async def scaled(conv: Conversation, workdir: Path, copies: int) -> Run:
    """Lexical ranking latency on a namespace holding ``copies`` copies of the conversation (each copy its own
    sessions), written straight into a fresh database (turns, messages, message_fts) rather than captured."""
    from stratagate.storage.db import Database
    from stratagate.text.terms import fts_document
    from stratagate.timeutil import to_iso

    db = Database(workdir / f"scaled-{copies}.db")
    await db.open()
    turns, _ = capture_plan(conv)
    t0 = time.perf_counter()
    try:
        async with db.transaction() as conn:
            await conn.execute("INSERT INTO namespaces(name, created_at) VALUES (?, ?)", (NAMESPACE, "2023-01-01"))
            for copy in range(copies):
                sessions: dict[str, tuple[int, int]] = {}
                for params in turns:
                    key = f"{params['session']}-{copy}"
                    if key not in sessions:
                        cur = await conn.execute(
                            "INSERT INTO sessions(namespace_id, key, created_at) VALUES (1, ?, ?)", (key, "x")
                        )
                        sessions[key] = (int(cur.lastrowid or 0), 0)
                    sid, seq = sessions[key]
                    sessions[key] = (sid, seq + 1)
                    cur = await conn.execute(
                        "INSERT INTO turns(namespace_id, session_id, seq, receipt, captured_at) VALUES (1, ?, ?, ?, ?)",
                        (sid, seq + 1, f"{copy}:{params['receipt']}", "x"),
                    )
                    tid = int(cur.lastrowid or 0)
                    for pos, (role, stamp) in enumerate((("user", "started_at"), ("assistant", "ended_at"))):
                        if not params.get(role):
                            continue
                        at = to_iso(datetime.fromisoformat(params[stamp]))
                        cur = await conn.execute(
                            "INSERT INTO messages(namespace_id, session_id, turn_id, position, role, content,"
                            " created_at) VALUES (1, ?, ?, ?, ?, ?, ?)",
                            (sid, tid, pos, role, params[role], at),
                        )
                        await conn.execute("INSERT INTO message_fts(rowid, terms) VALUES (?, ?)",
                                           (cur.lastrowid, fts_document(params[role])))
        index_s = time.perf_counter() - t0
        total = int(await db.scalar("SELECT COUNT(*) FROM messages"))
        run = Run(f"memory_search_raw ranking, lexical, {total:,} messages ({copies} copies)")
        run.index_s = index_s
        options = replace(raw.DEFAULT_OPTIONS, dense_weight=0.0)
        for q in conv.questions:
            s = time.perf_counter()
            await raw.rank(db, 1, q.text, raw.RawFilters(), options)
            run.latencies.append(time.perf_counter() - s)
        run.note = "in-process raw.rank(); index = direct inserts with our tokenizer, one transaction"
        return run
    finally:
        await db.close()


# ---------------------------------------------------------------- report


def table(conv: Conversation, runs: list[Run], halves: bool) -> list[str]:
    groups: list[tuple[str, list[int]]] = [("all", list(range(len(conv.questions))))]
    if halves:
        n = len(conv.questions)
        groups += [("tuning half (even-numbered)", list(range(0, n, 2))),
                   ("held-out half (odd-numbered)", list(range(1, n, 2)))]
    lines = []
    for gname, idx in groups:
        qs = [conv.questions[i] for i in idx]
        cats = sorted({q.category for q in qs})
        head = "| system | r@5 | r@10 | r@20 | MRR | " + " | ".join(f"r@10 cat {CATEGORY[c]}" for c in cats)
        lines += [f"\n**{gname} questions ({len(qs)})**\n", head + " |",
                  "|---|" + "---:|" * (4 + len(cats))]
        for run in runs:
            ranked = [run.ranked[i] for i in idx]
            m = metrics(qs, ranked)
            per = []
            for c in cats:
                sel = [(q, r) for q, r in zip(qs, ranked, strict=True) if q.category == c]
                cm = metrics([q for q, _ in sel], [r for _, r in sel])
                per.append(f"{cm['r@10']:.3f} (n={cm['n']})")
            lines.append(f"| {run.name} | {m['r@5']:.3f} | {m['r@10']:.3f} | {m['r@20']:.3f} | {m['mrr']:.3f} | "
                         + " | ".join(per) + " |")
    return lines


def timing_table(runs: list[Run]) -> list[str]:
    lines = ["| system | index s | query p50 ms | query p99 ms | note |", "|---|---:|---:|---:|---|"]
    for run in runs:
        idx = f"{run.index_s:.3f}" if run.index_s is not None else "–"
        lines.append(f"| {run.name} | {idx} | {pct(run.latencies, 0.5) * 1000:.2f} | "
                     f"{pct(run.latencies, 0.99) * 1000:.2f} | {run.note} |")
    return lines


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--split", action="store_true",
                        help="also report the tuning (even-numbered) and held-out (odd-numbered) questions")
    parser.add_argument("--skip-ablation", action="store_true")
    parser.add_argument("--dense", choices=("on", "off"), default="on",
                        help="the sidecar's dense channel (default on, as the product ships; off: lexical only)")
    parser.add_argument("--scale", type=int, nargs="*", default=[],
                        help="also time lexical ranking over this many copies of the conversation (e.g. 10 100)")
    parser.add_argument("--no-speaker-names", action="store_true",
                        help="capture the bare text, without the 'Name: ' prefix (names then appear only in questions)")
    args = parser.parse_args()
    path = args.file if args.file.is_absolute() else (Path.cwd() / args.file)
    conv = load(path.resolve(), speaker_names=not args.no_speaker_names)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        db_path = workdir / "locomo.db"
        ours, extra = await run_sidecar(conv, db_path, args.dense)
        runs = [ours,
                run_rank_bm25(conv, words, "rank-bm25 BM25Okapi (lower-cased \\w+ words)"),
                run_rank_bm25(conv, terms, "rank-bm25 BM25Okapi over our tokenizer's terms"),
                run_fts5_default(conv)]
        vectors = encode_all(conv)
        dense = run_dense(conv, vectors) if vectors is not None else None
        if dense is not None:
            runs.append(dense)
        steps = [] if args.skip_ablation else await ablation(conv, db_path, workdir, STEPS, vectors)
        scale_runs = [await scaled(conv, workdir, n) for n in args.scale]

    cats = {c: sum(q.category == c for q in conv.questions) for c in CATEGORY}
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}\n")
    print(f"Conversation {conv.name}: {len(conv.messages)} messages in "
          f"{len({m.session for m in conv.messages})} sessions ({extra.get('turns')} turns captured), "
          f"{len(conv.questions)} questions in categories 1–4 {cats}; evidence ids not in the conversation "
          f"(dropped): {conv.dropped_evidence}; events stored: {extra.get('events')}; "
          f"dense channel: {'on' if dense is not None else 'not available'}")
    print("\n".join(table(conv, runs, args.split)))
    print()
    in_process = []
    if steps:
        final = steps[-1]
        in_process = [Run("memory_search_raw ranking in-process (raw.rank, final step below)",
                          latencies=final.latencies, note="no JSON-RPC, no neighbours/row fetch for the reply")]
    print("\n".join(timing_table(runs + in_process + scale_runs)))
    if steps:
        print("\nWhat each change bought (in-process ranking of a copy of the same database, cumulative):")
        print("\n".join(table(conv, steps, args.split)))
    print(f"\nCommand: `{shlex.join([Path(sys.executable).name, *sys.argv])}`")
    if args.json:
        even, odd = conv.questions[0::2], conv.questions[1::2]

        def dump(run: Run) -> dict[str, Any]:
            return {
                "name": run.name,
                "all": metrics(conv.questions, run.ranked),
                "tuning_half": metrics(even, run.ranked[0::2]),
                "held_out_half": metrics(odd, run.ranked[1::2]),
                "per_category": {
                    str(c): metrics([q for q in conv.questions if q.category == c],
                                    [r for q, r in zip(conv.questions, run.ranked, strict=True) if q.category == c])
                    for c in CATEGORY
                },
                "index_s": run.index_s,
                "p50_ms": pct(run.latencies, 0.5) * 1000,
                "p99_ms": pct(run.latencies, 0.99) * 1000,
            }

        args.json.write_text(json.dumps({
            "conversation": conv.name, "messages": len(conv.messages), "questions": len(conv.questions),
            "systems": [dump(r) for r in runs], "ablation": [dump(r) for r in steps],
            "median_query_ms": {r.name: statistics.median(r.latencies) * 1000 for r in runs},
        }, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
