#!/usr/bin/env python3
"""Record what a DSH plugin really receives from the pinned DeepSeek Harness into tests/fixtures/dsh/.

    PYTHONPATH=sidecar .venv/bin/python scripts/record-dsh-fixtures.py   # re-run whenever the DSH pin changes

It installs the pinned DSH (scripts/install-dsh.sh, a no-op when installed), starts it headless against the
tests' scripted model server, and loads the recorder plugin (scripts/record-dsh-fixtures.mjs) with --patch (plus
DSH's own ask-user tool row, which only the web presets mount). The scripted model makes DSH's agent call every
built-in tool it is offered (PLAN below; an offered tool PLAN does not call is an error), and the plugin writes
every ``session/event``, ``tools/result``, ``agent/inbox/claimed`` and ``agent/turn-stopping`` payload. Those are
normalised (ids, times, temporary paths: ``Normaliser``) and written as JSON, one file per scenario, event kind and
hook, so a re-run against the same DSH gives an empty diff. tests/fixtures/dsh/README.md describes the files;
tests/test_dsh_fixtures.py checks them. Never edit the JSON by hand: re-run this script.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from support.dsh import DshHome, DshInstall, install_dsh  # noqa: E402
from support.dsh_model import (  # noqa: E402
    content_text,
    is_agent_request,
    is_extraction_request,
    is_summary_request,
    is_title_request,
    messages,
    offered_tools,
)
from support.model_server import Behaviour, ScriptedModelServer, text, tool_call  # noqa: E402

PLUGIN = REPO / "scripts" / "record-dsh-fixtures.mjs"
OUT = REPO / "tests" / "fixtures" / "dsh"
TASK = "RECORD-DSH-FIXTURES: call every built-in tool once, as scripted."
SUB_MARK = "FIXTURE-CHILD"  # every prompt a child agent (subagent, fork, workflow, ralph) gets carries it
FINAL = "FIXTURES-RECORDED: every scripted tool call was made."
CHILD_ANSWER = "FIXTURE-CHILD-DONE: nothing to do."
ANSWER = "FIXTURE-HUMAN-ANSWER"  # the recorder plugin's answer to a question without options
# A 1x1 PNG for read_image.
PIXEL_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
SKILL = "---\nname: fixture-skill\ndescription: A skill the fixture recorder loads.\n---\n\nSay FIXTURE-SKILL-BODY.\n"

Args = dict[str, Any] | Callable[["Replay"], dict[str, Any]]


@dataclass(frozen=True)
class Step:
    """One scripted tool call: ``scenario`` names its fixture file, ``arguments`` may depend on earlier results."""

    scenario: str
    tool: str
    arguments: Args
    settled_before: int = 0  # answer only once this many background-subagent notices reached the main session


@dataclass
class Replay:
    """What the main agent saw so far: the text of each tool result, by scenario."""

    work: Path
    results: dict[str, str] = field(default_factory=dict)

    def path(self, name: str) -> str:
        return str(self.work / name)

    def match(self, scenario: str, pattern: str) -> str:
        found = re.search(pattern, self.results.get(scenario, ""))
        if not found:
            raise RuntimeError(f"{pattern!r} not found in the result of {scenario}: {self.results.get(scenario)!r}")
        return found.group(1)


def _job_id(scenario: str) -> Callable[[Replay], str]:
    return lambda r: r.match(scenario, r"background job (\S+)")


PLAN: list[Step] = [
    Step("bash-success", "bash", {"command": "printf 'alpha\\nbeta\\n'", "description": "Print two lines"}),
    Step(
        "bash-exit-code",
        "bash",
        {"command": "echo to-stdout; echo to-stderr >&2; exit 3", "description": "Fail with exit code 3"},
    ),
    Step("bash-long-output", "bash", {"command": "seq 1 40000", "description": "Print forty thousand lines"}),
    Step(
        "bash-background",
        "bash",
        {
            "command": "echo bg-start; sleep 1; echo bg-done",
            "description": "Run in background",
            "run_in_background": True,
        },
    ),
    Step("job_output", "job_output", lambda r: {"job_id": _job_id("bash-background")(r), "wait": True}),
    Step("job_list", "job_list", {}),
    Step(
        "bash-background-sleep",
        "bash",
        {"command": "sleep 60", "description": "Sleep in background", "run_in_background": True},
    ),
    Step("job_kill", "job_kill", lambda r: {"job_id": _job_id("bash-background-sleep")(r), "reason": "fixture"}),
    Step("read", "read", {"file_path": "notes.txt"}),
    Step("read-missing", "read", {"file_path": "missing.txt"}),
    Step("write", "write", {"file_path": "new.txt", "content": "one\ntwo\n"}),
    Step("edit", "edit", {"file_path": "new.txt", "old_string": "two", "new_string": "deux"}),
    Step("edit-no-match", "edit", {"file_path": "new.txt", "old_string": "absent", "new_string": "x"}),
    Step("str_replace_editor-view", "str_replace_editor", lambda r: {"command": "view", "path": r.path("notes.txt")}),
    Step(
        "str_replace_editor-create",
        "str_replace_editor",
        lambda r: {"command": "create", "path": r.path("sre.txt"), "file_text": "first\nsecond\n"},
    ),
    Step(
        "str_replace_editor-str_replace",
        "str_replace_editor",
        lambda r: {"command": "str_replace", "path": r.path("sre.txt"), "old_str": "second", "new_str": "2nd"},
    ),
    Step(
        "str_replace_editor-insert",
        "str_replace_editor",
        lambda r: {"command": "insert", "path": r.path("sre.txt"), "insert_line": 1, "new_str": "inserted"},
    ),
    Step("glob", "glob", {"pattern": "*.txt"}),
    Step("grep", "grep", {"pattern": "needle"}),
    Step("read_image", "read_image", {"file_path": "pixel.png"}),
    Step(
        "todo_write",
        "todo_write",
        {"todos": [{"content": "Record fixtures", "status": "in_progress"}, {"content": "Check", "status": "pending"}]},
    ),
    Step("skill", "skill", {"name": "fixture-skill"}),
    Step("web_search", "web_search", {"queries": ["stratagate fixture recorder"]}),
    Step("create_goal", "create_goal", {"objective": "Record the DSH fixtures.", "max_goal_rounds": 1}),
    Step("get_goal", "get_goal", {}),
    Step(
        "update_goal",
        "update_goal",
        lambda r: {
            "goal_id": r.match("get_goal", r'"?id"?\s*[:=]\s*"?([A-Za-z0-9_-]+)'),
            "revision": int(r.match("get_goal", r'"?revision"?\s*[:=]\s*(\d+)')),
            "action": "pause",
        },
    ),
    Step(
        "subagent",
        "subagent",
        {"description": "Fixture child task", "prompt": f"{SUB_MARK}: answer done.", "run_in_background": False},
    ),
    Step(
        "subagent-background",
        "subagent",
        {"description": "Fixture background child", "prompt": f"{SUB_MARK}: answer done.", "run_in_background": True},
    ),
    # A background child's "finished" notice lands in the main session whenever it finishes: each step below waits
    # for it, so the notice is claimed at a fixed step and a re-run gives the same events.
    Step("list_agents", "list_agents", {}, settled_before=1),
    Step(
        "send_message",
        "send_message",
        lambda r: {"subagent_id": r.match("subagent-background", SUBAGENT_ID), "message": f"{SUB_MARK}: once more."},
    ),
    Step(
        "interrupt_agent",
        "interrupt_agent",
        lambda r: {"agent_id": r.match("subagent-background", SUBAGENT_ID)},
        settled_before=2,
    ),
    Step(
        "subagent_fork",
        "subagent_fork",
        {"description": "Fixture fork", "prompt": f"{SUB_MARK}: answer done.", "run_in_background": False},
    ),
    Step(
        "workflow",
        "workflow",
        {
            "script": "const child = await agent(args.prompt, { label: 'fixture' })\nreturn { child, n: args.n }",
            "meta": {"name": "fixture-workflow", "description": "One child agent, for the fixtures."},
            "args": {"prompt": f"{SUB_MARK}: answer done.", "n": 2},
        },
    ),
    Step("ralph", "ralph", {"objective": f"{SUB_MARK}: answer done.", "maxRounds": 1}),
    Step("exit_plan_mode", "exit_plan_mode", {"plan": "# Fixture plan\n\nNothing to do."}),
    # Mounted by the recorder's patch (the web presets carry it, headless does not); the plugin plays the human.
    Step(
        "ask_user_question",
        "ask_user_question",
        {
            "questions": [
                {"id": "pick", "question": "Which one?", "options": [{"label": "First"}, {"label": "Second"}]},
                {"id": "free", "question": "Anything else?"},
            ]
        },
    ),
]
SUBAGENT_ID = r"started subagent (\S+)"


class FixtureModel:
    """The scripted model: the main agent's step n calls PLAN[n] (then answers FINAL); child agents, titles and
    any other request get plain text. ``raw_path`` is the recorder plugin's output (read for ``settled_before``)."""

    def __init__(self, work: Path, raw_path: Path) -> None:
        self.replay = Replay(work)
        self.raw_path = raw_path
        self.errors: list[str] = []
        self.offered: list[str] | None = None

    def __call__(self, body: dict[str, Any]) -> Behaviour:
        if is_title_request(body) or is_summary_request(body) or is_extraction_request(body):
            return text("Fixture session")
        if not is_agent_request(body):
            return text(CHILD_ANSWER)
        said = [content_text(m.get("content")) for m in messages(body) if m.get("role") == "user"]
        first = next((s for s in said if TASK in s or SUB_MARK in s), "")
        if TASK not in first:  # a child agent (its own prompt comes first; a fork inherits no open turn)
            return text(CHILD_ANSWER)
        if self.offered is None:
            self.offered = offered_tools(body)
        results = [content_text(m.get("content")) for m in messages(body) if m.get("role") == "tool"]
        for step, result in zip(PLAN, results, strict=False):
            self.replay.results[step.scenario] = result
        if len(results) >= len(PLAN):
            return text(FINAL)
        step = PLAN[len(results)]
        try:
            if not results:  # DSH titles the session in parallel with step 1: let the title land first
                self.wait_for(lambda rows: titles(rows) >= 2, "the model-written session title")
            if step.settled_before:
                self.wait_for(lambda rows: settled_notices(rows) >= step.settled_before, "subagent-settled notices")
            args = step.arguments(self.replay) if callable(step.arguments) else step.arguments
        except Exception as exc:  # reported after the run; the turn ends here
            self.errors.append(f"{step.scenario}: {exc}")
            return text(f"RECORDER-ERROR {step.scenario}: {exc}")
        return tool_call(step.tool, args)

    def wait_for(self, done: Callable[[list[dict[str, Any]]], bool], what: str, timeout: float = 30) -> None:
        """Hold this reply until the recorded payloads show ``what`` (so it lands at a fixed place in the log)."""
        deadline = time.monotonic() + timeout
        while not done(read_raw(self.raw_path)):
            if time.monotonic() > deadline:
                raise RuntimeError(f"no {what} after {timeout:.0f}s")
            time.sleep(0.05)  # polling the recorder plugin's file for DSH's own event


def read_raw(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:  # a line still being written
            break
    return rows


def main_session(rows: list[dict[str, Any]]) -> str:
    """The top-level session: the first one seen (children start later, from its tool calls)."""
    return next(r["session"]["id"] for r in rows if r["hook"] == "session/event")


def main_events(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if not rows:
        return []
    main = main_session(rows)
    return [r["event"] for r in rows if r["hook"] == "session/event" and r["session"]["id"] == main]


def titles(rows: list[dict[str, Any]]) -> int:
    return sum(1 for e in main_events(rows) if e.get("type") == "session/title")


def settled_notices(rows: list[dict[str, Any]]) -> int:
    """How many background-subagent "finished" notices DSH queued for the main session so far."""
    count = 0
    for event in main_events(rows):
        if event.get("type") == "agent/inbox/spliced":
            inserted = (event.get("data") or {}).get("inserted") or []
            count += sum(1 for m in inserted if (m.get("source") or {}).get("kind") == "subagent-settled")
    return count


def prepare_work(work: Path) -> None:
    (work / "src").mkdir(parents=True, exist_ok=True)
    (work / "notes.txt").write_text("alpha\nbeta\ngamma needle\n")
    (work / "src" / "app.py").write_text("print('needle in app')\n")
    (work / "pixel.png").write_bytes(PIXEL_PNG)
    skill = work / ".dsh" / "skills" / "fixture-skill"
    skill.mkdir(parents=True, exist_ok=True)
    (skill / "SKILL.md").write_text(SKILL)


def record(raw_path: Path, scratch: Path, timeout: float) -> tuple[FixtureModel, Path, Path, str]:
    """Run the scripted session once; the plugin's JSON lines land in ``raw_path``. Returns the model, the work and
    home folders and the DSH version that ran."""
    install = install_dsh()
    work = scratch / "work"
    prepare_work(work)
    model = FixtureModel(work, raw_path)
    server = ScriptedModelServer()
    server.default = model
    with server:
        home = DshHome(scratch / "dsh-home", install, server.base_url, logs=scratch / "logs")
        settings = home.path / "settings.yaml"  # read_image needs a model that accepts images
        image = "          input: [text, image]\n          maxTokens:"
        settings.write_text(settings.read_text().replace("          maxTokens:", image))
        patch = scratch / "recorder.patch.yml"
        patch.write_text(
            "- insert:\n"
            "    - id: stratagate-fixture-recorder\n"
            f"      name: {json.dumps(str(PLUGIN))}\n"
            "      config:\n"
            f"        out: {json.dumps(str(raw_path))}\n"
            f"        answer: {json.dumps(ANSWER)}\n"
            # DSH's own ask-user tool, as the web profile's agent presets mount it.
            "    - id: tool-ask-user\n"
            "      name: '@deepseek-ai/dsh-tool-ask-user'\n"
        )
        try:
            # DSH's spill files go to a temp folder of the scratch, removed with it.
            tmp = scratch / "tmp"
            tmp.mkdir()
            run = home.headless(TASK, work, timeout=timeout, patches=[patch], env={"TMPDIR": str(tmp)})
        finally:
            home.kill_all()
    if run.returncode != 0 or run.timed_out:
        raise SystemExit(f"the recording run failed:\n{run.describe()}")
    if model.errors:
        raise SystemExit("the scripted plan went wrong: " + "; ".join(model.errors) + "\n" + run.describe())
    return model, work, home.path, dsh_version(install)


# ----------------------------------------------------------------------------------------- normalising

BASE_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z: every recorded timestamp becomes this (events: + seq seconds)
TIME_KEYS = {"time", "createdAt", "updatedAt", "startedAt", "finishedAt", "endedAt", "at", "timestamp"}
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
CALL_ID = re.compile(r"call_[0-9a-f]{8}")
RESPONSE_ID = re.compile(r"chatcmpl-[0-9a-f]{12}")
SPILL = re.compile(r"/dsh-subprocess-[A-Za-z0-9]{6}/dsh-subprocess-(\d+)-(\d+)-[0-9a-f]+-")
OMITTED = re.compile(r"\n\n\(Omitted (\d+) bytes\.")
SPILL_SHOWN = r"/dsh-subprocess-XXXXXX/dsh-subprocess-1-\2-0-"
RESULT_SPILL_SHOWN = "/dsh-spill-XXXXXX/session-000000000000/000000000000-"
STORED_AT = re.compile(r"Full formatted result stored at: (\S+)\. ")
RESULT_SPILL = re.compile(r"/dsh-spill-[A-Za-z0-9]{6}/session-[0-9a-f]{12}/[0-9a-f]{12}-")


@dataclass(frozen=True)
class Notice:
    """DSH's spill notice as recorded (``text``, with its byte ``count`` and ``locator``), rendered for another count
    and, optionally, another locator."""

    text: str
    count: str
    locator: str
    shown: str | None = None

    def render(self, count: int) -> str:
        out = self.text.replace(f"Omitted {self.count} bytes", f"Omitted {count} bytes", 1)
        return out if self.shown is None else out.replace(self.locator, self.shown, 1)


def spill_cut(full: str, notice: Callable[[int], str], cap: int) -> str:
    """dsh-spill-policy's bounded text for ``full`` (ASCII): the notice for the whole size is reserved, the rest of
    ``cap`` is split into ceil/floor halves of head and tail, and the notice names what was omitted."""
    budget = max(0, cap - len(notice(len(full))) - 2)
    head, tail = (budget + 1) // 2, budget // 2
    return f"{full[:head]}{full[len(full) - tail :]}\n\n{notice(len(full) - head - tail)}"


def recut_spilled_bash(rows: list[dict[str, Any]], tmp: Path) -> list[dict[str, Any]]:
    """A bash result too long for the model is cut by DSH's spill policy (``spill_cut``) from its formatted text: the
    output's tail plus a line naming the output's spill file (in ``tmp``, named with DSH's pid), and the notice names
    the result's spill file: both paths' lengths move the cut. Re-cut it with the paths as the normalisation shows
    them, so the text does not change with the pid or the temp folder. Stops if the raw text is not DSH's cut."""
    texts: dict[str, str] = {}
    for r in rows:
        result = r.get("result") or {}
        stdout = ((result.get("value") or {}).get("stdout") or {}) if isinstance(result.get("value"), dict) else {}
        path, content = stdout.get("spillPath"), result.get("content") or []
        text = content[0].get("text") if content and isinstance(content[0], dict) else None
        omitted = OMITTED.search(text) if isinstance(text, str) else None
        spill = SPILL.search(path) if isinstance(path, str) else None
        stored = STORED_AT.search(text) if isinstance(text, str) else None
        if not (omitted and spill and stored and isinstance(text, str) and isinstance(path, str)):
            continue
        full = f"{stdout['text']}\n[output truncated; full output: {path}]"
        raw = Notice(text[omitted.start() + 2 :], omitted.group(1), stored.group(1))
        cap = len(text) + len(str(len(full))) - len(raw.count)  # the notice was reserved for the whole size
        if spill_cut(full, raw.render, cap) != text:
            raise SystemExit("DSH's spill cut changed: update spill_cut in scripts/record-dsh-fixtures.py")
        shown = SPILL.sub(SPILL_SHOWN, path).replace(str(tmp), "/fixture/tmp", 1)
        locator = RESULT_SPILL.sub(RESULT_SPILL_SHOWN, raw.locator).replace(str(tmp), "/fixture/tmp", 1)
        normalised = Notice(raw.text, raw.count, raw.locator, locator)
        texts[text] = spill_cut(full.replace(path, shown, 1), normalised.render, cap)

    def swap(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: swap(v) for k, v in value.items()}
        if isinstance(value, list):
            return [swap(v) for v in value]
        return texts.get(value, value) if isinstance(value, str) else value

    return [swap(r) for r in rows] if texts else rows


class Normaliser:
    """Replaces what changes from run to run with stable stand-ins of the same shape: uuids, call ids and response
    ids by numbered ones (in order of first appearance, so equal ids stay equal), the scratch folders by
    ``/fixture/work``, ``/fixture/dsh-home`` and ``/fixture/tmp`` (DSH's temp folder), timestamps by
    ``BASE_MS`` (an event's ``time`` by ``BASE_MS + seq * 1000``, which keeps the order), and the scripted model's
    token counts (they count the random ids) by 0."""

    def __init__(self, work: Path, home: Path, tmp: Path) -> None:
        self.paths = [
            (str(work), "/fixture/work"),
            (str(home), "/fixture/dsh-home"),
            (str(tmp), "/fixture/tmp"),
        ]
        self.ids: dict[str, str] = {}

    def _id(self, raw: str, make: Callable[[int], str]) -> str:
        if raw not in self.ids:
            self.ids[raw] = make(len(self.ids) + 1)
        return self.ids[raw]

    def text(self, value: str) -> str:
        for real, stand_in in self.paths:
            value = value.replace(real, stand_in)
        value = SPILL.sub(SPILL_SHOWN, value)
        value = RESULT_SPILL.sub(RESULT_SPILL_SHOWN, value)
        value = UUID.sub(lambda m: self._id(m.group(0), lambda n: f"00000000-0000-4000-8000-{n:012d}"), value)
        value = CALL_ID.sub(lambda m: self._id(m.group(0), lambda n: f"call_{n:08d}"), value)
        return RESPONSE_ID.sub(lambda m: self._id(m.group(0), lambda n: f"chatcmpl-{n:012d}"), value)

    def value(self, value: Any, key: str | None = None, parent: str | None = None) -> Any:
        if isinstance(value, dict):
            out = {k: self.value(v, k, key) for k, v in value.items()}
            if isinstance(out.get("seq"), int) and isinstance(value.get("time"), int | float):
                out["time"] = BASE_MS + out["seq"] * 1000
            return out
        if isinstance(value, list):
            return [self.value(v, key, parent) for v in value]
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, int | float) and not isinstance(value, bool):
            if key in TIME_KEYS and value > 1e12:
                return BASE_MS
            if parent == "usage":
                return 0
        return value


# ----------------------------------------------------------------------------------------- writing

TURN_EVENT_TYPES = ("turn/start", "user/message", "assistant/message", "tool/call", "tool/result", "turn/end")


def dsh_version(install: DshInstall) -> str:
    manifest = install.dest / "dsh" / "node_modules" / "@deepseek-ai" / "dsh" / "package.json"
    return str(json.loads(manifest.read_text())["version"])


def user_kind(data: dict[str, Any]) -> str:
    source = data.get("source") or {}
    if source.get("kind") == "user":
        return "user-message"
    if source.get("plugin") == "@deepseek-ai/dsh-system-prompt":
        return "user-message-runtime-context"
    if source.get("kind") == "plugin":
        return "user-message-plugin"
    return f"user-message-{source.get('kind', 'unknown')}"


def event_kind(event: dict[str, Any]) -> str:
    data = event.get("data") or {}
    kind = str(event.get("type", "")).replace("/", "-")
    if event.get("type") == "user/message":
        return user_kind(data)
    if event.get("type") == "assistant/message":
        blocks = (data.get("message") or {}).get("content") or []
        return kind + ("-tool-call" if any(b.get("type") == "tool-call" for b in blocks) else "-text")
    return kind


def _names_call(event: dict[str, Any], call_id: str) -> bool:
    """Whether a main-session event belongs to tool call ``call_id`` (its request, call or result)."""
    data = event.get("data") or {}
    message = data.get("message") or {}
    if event["type"] == "tool/call":
        return data.get("callId") == call_id
    if event["type"] == "tool/result":
        return (message.get("source") or {}).get("callId") == call_id
    if event["type"] == "assistant/message":
        return any(b.get("id") == call_id for b in message.get("content") or [])
    return False


def _first_turn(stream: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A session's forwarded events (TURN_EVENT_TYPES) through its first ``turn/end``, as the shim buffers them."""
    out = []
    for event in stream:
        if event["type"] in TURN_EVENT_TYPES:
            out.append(event)
            if event["type"] == "turn/end":
                break
    return out


def build(rows: list[dict[str, Any]], offered: list[str], version: str) -> dict[str, Any]:
    """Every fixture file (relative path → JSON value) from the normalised recording."""
    missing = sorted(set(offered) - {s.tool for s in PLAN})
    if missing:
        raise SystemExit(f"DSH offers built-in tools PLAN does not call: {missing}; add a Step for each")
    main = main_session(rows)
    origins = {r["session"]["id"]: r["session"]["origin"] for r in rows if r["hook"] == "session/event"}
    events: dict[str, list[dict[str, Any]]] = {sid: [] for sid in origins}
    for r in rows:
        if r["hook"] == "session/event":
            events[r["session"]["id"]].append(r["event"])
    hooks = [r for r in rows if r["hook"] == "tools/result"]
    calls = [e for e in events[main] if e["type"] == "tool/call"]
    if [c["data"]["name"] for c in calls] != [s.tool for s in PLAN]:
        raise SystemExit(f"the main session's tool calls differ from PLAN: {[c['data']['name'] for c in calls]}")

    files: dict[str, Any] = {}
    scenarios = []
    for step, call in zip(PLAN, calls, strict=True):
        call_id = call["data"]["callId"]
        (hook,) = [h for h in hooks if h["exec"]["callId"] == call_id]
        name = f"tools/{step.scenario}.json"
        files[name] = {
            "dsh_version": version,
            "scenario": step.scenario,
            "tool": step.tool,
            "session_events": [e for e in events[main] if _names_call(e, call_id)],
            "tools_result": {"exec": hook["exec"], "result": hook["result"]},
        }
        is_error = hook["result"]["isError"]
        scenarios.append({"scenario": step.scenario, "tool": step.tool, "file": name, "is_error": is_error})

    kinds: dict[str, dict[str, Any]] = {}  # the first event of each kind, main session then children
    for sid, stream in events.items():
        for event in stream:
            if event["type"] in TURN_EVENT_TYPES:
                kind = ("child-" if sid != main else "") + event_kind(event)
                session = {"id": sid, "origin": origins[sid]}
                kinds.setdefault(kind, {"dsh_version": version, "kind": kind, "session": session, "event": event})
    for kind, doc in kinds.items():
        files[f"events/{kind}.json"] = doc

    canonical = {
        h["exec"]["callId"]: h["result"]["value"]
        for h in hooks
        if h["exec"]["session"] == main and not h["result"]["isError"]
    }
    child = next(sid for sid in events if origins[sid] == "subagent")
    for name, sid, values in (("main", main, canonical), ("subagent", child, {})):
        files[f"turns/{name}.json"] = {
            "dsh_version": version,
            "session": sid,
            "origin": origins[sid],
            "turn": 1,
            "events": _first_turn(events[sid]),
            "canonical": values,
        }
    for name in ("agent/inbox/claimed", "agent/turn-stopping"):  # the main session's, in order
        payloads = [r["payload"] for r in rows if r["hook"] == name and r["payload"]["agent"]["session"]["id"] == main]
        files[f"hooks/{name.replace('/', '-')}.json"] = {"dsh_version": version, "hook": name, "payloads": payloads}
    files["manifest.json"] = {
        "dsh_version": version,
        "profile": "headless",
        "recorder": "scripts/record-dsh-fixtures.py",
        "builtin_tools": sorted(offered),
        "scenarios": scenarios,
        "event_files": sorted(f"events/{k}.json" for k in kinds),
        "turn_files": ["turns/main.json", "turns/subagent.json"],
        "hook_files": ["hooks/agent-inbox-claimed.json", "hooks/agent-turn-stopping.json"],
        "event_types_seen": sorted({e["type"] for stream in events.values() for e in stream}),
    }
    return files


def write(out: Path, files: dict[str, Any]) -> None:
    for sub in ("tools", "events", "turns", "hooks"):
        shutil.rmtree(out / sub, ignore_errors=True)
    for name, value in files.items():
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--raw", type=Path, help="also keep the plugin's raw JSON lines here")
    parser.add_argument("--timeout", type=float, default=240)
    args = parser.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="dsh-fixtures-"))
    try:
        raw_path = scratch / "raw.jsonl"
        model, work, home, version = record(raw_path, scratch, args.timeout)
        if args.raw:
            shutil.copy(raw_path, args.raw)
        normaliser = Normaliser(work, home, scratch / "tmp")
        rows = [normaliser.value(r) for r in recut_spilled_bash(read_raw(raw_path), scratch / "tmp")]
        files = build(rows, model.offered or [], version)
        write(args.out, files)
        tools = len(model.offered or [])
        print(f"wrote {len(files)} files to {args.out} ({len(rows)} payloads; {tools} built-in tools)")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
