"""Realistic DSH surfaces as the shim sends them to ``context.plan``: ``[{seq, type, data}]`` for each seq in
``session.surface.nodes``, in DSH's exact shapes (tests/js/session-log.json):

- ``user/message``: data is the message ``{id, role:'user', content:[{type:'text', text}], source:{kind:'user'}}``;
  a runtime-context snapshot has ``source:{kind:'plugin', plugin:'@deepseek-ai/dsh-system-prompt', form:'snapshot'}``;
- ``assistant/message``: ``{turn, step, message:{id, role:'assistant', content:[{type:'text'}, {type:'tool-call',
  id, name, arguments}], source:{kind:'model'}}}``;
- ``tool/result``: ``{turn, step, message:{id, role:'user', source:{kind:'tool', callId}, content:[{type:
  'tool-result', toolCallId, content:[{type:'text', text}], isError}]}}``.

Seqs leave gaps where DSH logs non-message events (turn/start, step/start, tool/call …), as a real log does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

RUNTIME_PLUGIN = "@deepseek-ai/dsh-system-prompt"
_WORDS = (
    "collected passed module fixture assert expected value handler request response config cache parser token "
    "session window commit branch import export build lint format schema column index query result status"
).split()


def output_text(tokens: int, seed: int, *, error: bool = False, secret: str | None = None) -> str:
    """A tool output of about ``tokens`` tokens (test-log-like lines), deterministic in ``seed``."""
    lines = [f"ERROR: command failed (seed {seed})" if error else f"$ run #{seed}: {tokens} tokens of output"]
    i = seed
    size = 12
    while size < tokens:
        words = [_WORDS[(i * 7 + k * 3) % len(_WORDS)] for k in range(8)]
        lines.append(f"tests/test_{i % 50:02d}.py::{words[0]}_{i} {' '.join(words[1:])} [{i % 100:3d}%]")
        size += 22
        i += 1
    if secret:
        lines.append(f"export API_KEY={secret}")
    lines.append("exit code: 1" if error else "exit code: 0")
    return "\n".join(lines)


@dataclass
class Built:
    events: list[dict[str, Any]]
    turns: int
    open_turn: int
    results: dict[str, str] = field(default_factory=dict)
    """Each call id's original result text (decompress must restore it byte for byte)."""
    last_seq: int = 0

    def surface(self, archived_through: int = -1) -> list[dict[str, Any]]:
        """The surface as sent, data omitted for seqs the sidecar already archived."""
        return [e if e["seq"] > archived_through else {k: v for k, v in e.items() if k != "data"}
                for e in self.events]


class SurfaceBuilder:
    """Append DSH surface events one by one (seq gaps as in a real log)."""

    def __init__(self, start_seq: int = 1) -> None:
        self.seq = start_seq
        self.events: list[dict[str, Any]] = []
        self.results: dict[str, str] = {}
        self._ids = 0

    def _next(self, gap: int = 1) -> int:
        self.seq += gap
        return self.seq

    def _id(self, prefix: str) -> str:
        self._ids += 1
        return f"{prefix}-{self._ids}"

    def user(self, text: str) -> int:
        seq = self._next(2)  # turn/start before it
        self.events.append({"seq": seq, "type": "user/message", "data": {
            "id": self._id("u"), "role": "user", "content": [{"type": "text", "text": text}],
            "source": {"kind": "user"}}})
        return seq

    def runtime(self, turn: int) -> int:
        seq = self._next()
        self.events.append({"seq": seq, "type": "user/message", "data": {
            "id": self._id("ctx"), "role": "user",
            "content": [{"type": "text", "text": f"Current runtime context (turn {turn}). cwd /work/app; "
                                                 "approval policy: ask. SECRET_PROMPT_TEXT"}],
            "source": {"kind": "plugin", "plugin": RUNTIME_PLUGIN, "form": "snapshot"}}})
        return seq

    def assistant(self, turn: int, step: int, text: str, calls: list[tuple[str, str, dict[str, Any]]] = (),
                  *, call_key: str = "id") -> int:
        seq = self._next(2)  # step/start before it
        content: list[dict[str, Any]] = []
        if text:
            content.append({"type": "text", "text": text})
        for call_id, name, args in calls:
            content.append({"type": "tool-call", call_key: call_id, "name": name, "arguments": json.dumps(args)})
        self.events.append({"seq": seq, "type": "assistant/message", "data": {
            "turn": turn, "step": step, "message": {"id": self._id("a"), "role": "assistant", "content": content,
                                                    "source": {"kind": "model", "provider": "fake"}}}})
        return seq

    def result(self, turn: int, step: int, call_id: str, text: str, *, error: bool = False) -> int:
        seq = self._next(2)  # tool/call before it
        self.results[call_id] = text
        self.events.append({"seq": seq, "type": "tool/result", "data": {
            "turn": turn, "step": step, "message": {
                "id": self._id("r"), "role": "user", "source": {"kind": "tool", "callId": call_id},
                "content": [{"type": "tool-result", "toolCallId": call_id, "content": [{"type": "text", "text": text}],
                             "isError": error}]}}})
        return seq

    def raw(self, event: dict[str, Any]) -> int:
        seq = self._next()
        self.events.append({**event, "seq": seq})
        return seq


TOOLS = (("bash", "command", "pytest -q tests/"), ("read", "path", "src/app/module.py"), ("grep", "pattern", "TODO"))


def build_surface(
    turns: int = 4,
    rounds_per_turn: int | list[int] = 3,
    output_tokens: int | list[int] = 600,
    *,
    runtime: bool = True,
    open_last: bool = True,
    unfinished: bool = False,
    errors_every: int = 0,
    secret: str | None = None,
) -> Built:
    """A session of ``turns`` turns, each: user message, runtime snapshot, ``rounds_per_turn`` tool rounds (one call
    each, outputs of ~``output_tokens``), a final reply. ``open_last``: the last turn has no final reply yet (the
    plan at its turn end sees it open); ``unfinished``: its last round's result is not in yet."""
    b = SurfaceBuilder()
    k = 0
    for t in range(1, turns + 1):
        b.user(f"Turn {t}: please check the test suite and fix what fails (request {t}).")
        if runtime:
            b.runtime(t)
        per = rounds_per_turn if isinstance(rounds_per_turn, list) else [rounds_per_turn]
        rounds = per[(t - 1) % len(per)]
        for r in range(rounds):
            k += 1
            name, key, value = TOOLS[k % len(TOOLS)]
            call_id = f"call_{t}_{r}"
            calls = [(call_id, name, {key: f"{value} {k}"})]
            b.assistant(t, r + 1, f"Step {r + 1} of turn {t}: running {name}.", calls)
            last = t == turns and r == rounds - 1
            if last and unfinished:
                continue
            size = output_tokens[k % len(output_tokens)] if isinstance(output_tokens, list) else output_tokens
            error = bool(errors_every) and k % errors_every == 0
            b.result(t, r + 1, call_id, output_text(size, k, error=error, secret=secret if k == 1 else None),
                     error=error)
        if not (t == turns and open_last):
            b.assistant(t, rounds + 1, f"Turn {t} done: the suite passes now.")
    return Built(b.events, turns, turns, b.results, b.seq)


def plan_params(built: Built | list[dict[str, Any]], *, window: int, phase: str = "turn-end", turn: int | None = None,
                namespace: str = "proj", session: str = "s1", archived_through: int = -1,
                **extra: Any) -> dict[str, Any]:
    surface = built.surface(archived_through) if isinstance(built, Built) else built
    if turn is None and isinstance(built, Built):
        turn = built.open_turn
    return {"namespace": namespace, "session": session, "phase": phase, "turn": turn, "window": window,
            "surface": surface, **extra}


Events = list[dict[str, Any]]


def apply_ops(events: Events, ops: Events, next_seq: int) -> tuple[Events, Events]:
    """Apply a plan's ops the way the shim does (back to front): returns (the new surface, the landed list for
    context.landed). A card replaces its tool/result (same data, new content); a block/fold becomes one checkpoint
    user/message with ``surfaceOp: replace``."""
    surface = list(events)
    landed = []
    seq = next_seq
    positions = {e["seq"]: i for i, e in enumerate(surface)}
    for op in sorted(ops, key=lambda o: positions[o["start"]], reverse=True):
        start, end = positions[op["start"]], positions[op["end"]]
        seq += 3 if op["kind"] != "card" else 2
        if op["kind"] == "card":
            original = surface[start]
            data = json.loads(json.dumps(original["data"]))
            result = data["message"]["content"][0]
            result["content"] = [{"type": "text", "text": op["text"]}]
            node = {"seq": seq, "type": "tool/result", "data": data,
                    "surfaceOp": {"op": "replace", "start": op["start"], "end": op["start"]},
                    "sourceEventSeqs": [op["start"]]}
        else:
            shadowed = [e["seq"] for e in surface[start : end + 1]]
            node = {"seq": seq, "type": "user/message", "data": {
                "id": f"chk-{seq}", "role": "user", "content": [{"type": "text", "text": op["text"]}],
                "source": {"kind": "plugin", "plugin": "compact", "compactionId": f"cmp-{seq}"}},
                "surfaceOp": {"op": "replace", "start": op["start"], "end": op["end"]},
                "sourceEventSeqs": [seq - 2, seq - 1, *shadowed]}
        surface[start : end + 1] = [node]
        landed.append({"ref": op["ref"], "replacement_seq": seq})
        positions = {e["seq"]: i for i, e in enumerate(surface)}
    return surface, landed
