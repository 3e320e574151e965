"""The one declaration of every setting: each field below is one row (name, type, bounds, default, environment
variable, page-editable or not, plugin option, help in English and Chinese). Everything else is derived from it or
checked against it: ``config.load_settings`` (the environment), the Memory page's Settings tab (user_settings.py:
which settings the page edits, their labels and help), the shim's option map (``plugin/settings.json``, written by
``stratagate settings``, read by shim-js/config.js), the configuration tables of README.md and shim-js/README.md
(written by ``scripts/settings_docs.py``) and the docs test (tests/test_docs.py).

Four groups, one class each (a class keeps every field's type checkable):

- :class:`Settings`: the sidecar's settings. Field ``x`` ↔ env ``STRATAGATE_`` + ``X``; the App holds one instance.
- :class:`ProcessEnv`: variables the sidecar reads straight from the environment, before or without ``Settings``.
- :class:`ShimOptions`: read by the shim only (plugin options of the ``stratagate`` row, and the shim's variables).
- :class:`ContextPage`: the context engine's settings the page edits (the engine's own knobs are the nested
  ``context`` object: context/settings.py, documented in docs/protocol.md, checked by the docs test).

Adding a page-editable setting that is also a plugin option, e.g. ``recall_limit``:

1. One row in :class:`Settings`::

       recall_limit: int = row(8, ge=1, le=50, plugin="recallLimit", page=("Recall limit", "召回条数"),
                               en="how many memories recall shows", zh="召回显示的记忆条数")

   This gives the env variable named after it (``STRATAGATE_`` + the name in capitals), the plugin option
   ``recallLimit`` (passed to the sidecar as that variable), a field on the Memory page's Settings tab with its
   label, bounds and help in both languages, and a row in the docs' tables.
2. Its consumer reads ``app.settings.recall_limit`` at use (a page change is assigned in place, without a restart).
3. Regenerate what is derived, then run the tests that check it (tests/test_docs.py, tests/test_settings_table.py,
   tests/js/config.test.mjs)::

       PYTHONPATH=sidecar .venv/bin/python -m stratagate settings > plugin/settings.json
       PYTHONPATH=sidecar .venv/bin/python scripts/settings_docs.py
"""

from __future__ import annotations

import os
import types
import typing
from pathlib import Path
from typing import Any, Literal

from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

Scope = Literal["sidecar", "process", "shim", "context"]
Kind = Literal["int", "float", "bool", "string", "path", "choice", "json"]
ContextMode = Literal["cost", "quality", "custom"]
"""The context engine's presets (context/settings.py ``Mode``)."""

_DERIVED = "derived"  # env: STRATAGATE_<NAME>; plugin_default: the field's default


def default_db_path() -> Path:
    home = os.environ.get("DSH_HOME") or str(Path.home() / ".dsh")
    return Path(home) / "stratagate" / "memory.db"


def row(
    default: Any = PydanticUndefined,
    *,
    en: str,
    zh: str,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    default_factory: Any = None,
    default_doc: str | None = None,
    env: str | None = _DERIVED,
    page: tuple[str, str] | None = None,
    plugin: str | None = None,
    plugin_default: Any = _DERIVED,
    plugin_env: bool = True,
    json_text: bool = False,
) -> Any:
    """One row: the pydantic ``Field`` (default, bounds, English help as its description) with the rest attached.

    ``env``: the variable that sets it (default ``STRATAGATE_<NAME>``; None: none). ``page``: its label (English,
    Chinese) when the Memory page edits it. ``plugin``: the plugin option's name; ``plugin_env``: the shim passes the
    option to the sidecar as ``env`` (False: the shim uses it itself); ``plugin_default``: the option's own default
    when it differs. ``default_doc``: the default as the docs say it (a computed default). ``json_text``: the variable
    holds JSON (the plugin option is an object)."""
    extra: dict[str, Any] = {
        "zh": zh, "env": env, "page": list(page) if page else None, "plugin": plugin, "plugin_env": plugin_env,
        "json_text": json_text, "default_doc": default_doc,
    }
    if plugin_default != _DERIVED:
        extra["plugin_default"] = plugin_default
    if default_factory is not None:
        return Field(default_factory=default_factory, ge=ge, gt=gt, le=le, description=en, json_schema_extra=extra)
    return Field(default, ge=ge, gt=gt, le=le, description=en, json_schema_extra=extra)


class Settings(BaseModel):
    """The sidecar's settings: defaults ← ``STRATAGATE_*`` ← flags (config.load_settings) ← the page (page rows)."""

    db: Path = row(default_factory=default_db_path, plugin="database",
                   default_doc="`$DSH_HOME/stratagate/memory.db` (`DSH_HOME` defaults to `~/.dsh`)",
                   en="SQLite file (folder 0700, files 0600; survives plugin removal); flag `--db`",
                   zh="SQLite 数据库文件（目录 0700，文件 0600；卸载插件后仍保留）；命令行 `--db`")
    # None: the mode the shim passes (namespace.for_session); set (env or page) it wins over the shim's.
    namespace_mode: Literal["project", "session", "global"] | None = row(
        None, plugin="namespaceMode", plugin_env=False, plugin_default="project",
        page=("Namespace mode", "命名空间模式"),
        en="`project` (one memory per working directory), `session` or `global`; the variable or the page's setting "
           "wins over the plugin option `namespaceMode`",
        zh="`project`（每个工作目录一份记忆）、`session` 或 `global`；"
           "环境变量或页面上的设置优先于插件选项 `namespaceMode`")
    block_turns: int = row(6, ge=1, le=1000, plugin="blockTurns", page=("Turns per block", "每个区块的轮数"),
                           en="turns per sealed block; flag `--block-turns`",
                           zh="每个封存区块包含的轮数；命令行 `--block-turns`")
    block_decay_lambda: float = row(0.30, gt=0, le=10, en="decay per newer ready block",
                                    zh="每多一个更新的就绪区块时的衰减系数")
    # The open tail (fewer turns than a block) is sealed as a short block after this idle time, when DSH closes the
    # session, and at shutdown (blocks/tail.py).
    session_idle_minutes: float = row(
        10.0, ge=0, le=7 * 24 * 60, plugin="sessionIdleMinutes",
        en="minutes without a new turn after which a session's last turns (fewer than a block) are sealed as a short "
           "block (0: only when DSH closes the session and at shutdown)",
        zh="会话多少分钟没有新轮次后，把不足一个区块的最后几轮封存为短区块（0：只在 DSH 关闭会话和关机时封存）")

    model_base_url: str | None = row(
        None, en="direct OpenAI-compatible route; when unset, model calls go to DSH via `host.llm.complete`",
        zh="直连 OpenAI 兼容接口；未设置时模型调用经 `host.llm.complete` 交给 DSH")
    model_api_key: str | None = row(None, en="API key of the direct route", zh="直连路由的 API 密钥")
    model: str | None = row(None, en="model name of the direct route (required with `STRATAGATE_MODEL_BASE_URL`)",
                            zh="直连路由的模型名（设置 `STRATAGATE_MODEL_BASE_URL` 时必填）")
    model_timeout: float = row(120.0, gt=0, en="seconds per model call", zh="每次模型调用的超时（秒）")
    model_max_tokens: int = row(4096, ge=256, en="largest answer a model call asks for (tokens)",
                                zh="每次模型调用请求的最大回答长度（token）")
    model_concurrency: int = row(2, ge=1, le=32, en="model calls (and jobs) at once",
                                 zh="同时进行的模型调用（及任务）数")
    host_llm_timeout: float = row(180.0, gt=0, en="seconds per model call through DSH (`host.llm.complete`)",
                                  zh="经 DSH（`host.llm.complete`）的每次模型调用超时（秒）")
    # 'auto': the direct route when model_base_url is set, else the host's model; a block whose model jobs fail gets
    # rule-written views and events meanwhile (marked 'fallback', upgraded when the model answers again).
    # 'none': zero-model mode: L0–L2 and events are written by rule, no model call is ever made.
    model_route: Literal["auto", "none"] = row(
        "auto", page=("Model route", "模型路由"),
        en="`auto`: the direct route if set, else DSH's model; `none`: zero-model mode (titles, summaries, key facts "
           "and events written by rule; no model call)",
        zh="`auto`：有直连路由用直连，否则用 DSH 的模型；"
           "`none`：零模型模式（标题、摘要、要点和事件按规则生成，不调用模型）")

    job_max_attempts: int = row(5, ge=1, le=100, en="attempts before a job of any kind is `failed` (then `jobs.retry`)",
                                zh="任务标记为 `failed` 前的尝试次数（之后可 `jobs.retry`）")
    job_backoff_base: float = row(5.0, ge=0, en="first retry delay in seconds (exponential, ±20 % jitter)",
                                  zh="首次重试的延迟（秒；指数退避，±20% 抖动）")
    job_backoff_cap: float = row(600.0, ge=0, en="longest retry delay in seconds", zh="最长重试延迟（秒）")
    # PRAGMA data_version: how the runner notices jobs another process (the `stratagate import` CLI) committed.
    job_watch_interval: float = row(0.5, gt=0, le=60,
                                    en="seconds between looks for jobs another process (`stratagate import`) queued",
                                    zh="检查其他进程（`stratagate import`）排入任务的间隔（秒）")
    # A job whose heartbeat is older than job_lease_timeout (or whose owner's process is dead) is taken back.
    job_heartbeat_interval: float = row(5.0, gt=0, le=600, en="seconds between a running job's heartbeats",
                                        zh="运行中任务的心跳间隔（秒）")
    job_lease_timeout: float = row(60.0, gt=0, le=86_400,
                                   en="a running job whose heartbeat is older (seconds) is taken back",
                                   zh="心跳超过此时长（秒）的运行中任务会被收回")
    # The maintenance job (stratagate/maintenance/) also runs at start when the newest run is older.
    maintenance_interval_hours: float = row(24.0, ge=0, le=24 * 366,
                                            en="hours between maintenance passes (0: never scheduled)",
                                            zh="维护任务的间隔（小时；0 表示不自动运行）")

    activation_recent_tokens: int = row(600, ge=0, le=100_000,
                                        page=("Recent-memory budget (tokens)", "近期记忆预算（token）"),
                                        en="recall budget for recent blocks of other sessions",
                                        zh="召回中其他会话近期区块的 token 预算")
    activation_session_tokens: int = row(1200, ge=0, le=100_000, page=("Session budget (tokens)", "会话预算（token）"),
                                         en="recall budget for this session's older blocks",
                                         zh="召回中本会话较早区块的 token 预算")
    activation_longterm_tokens: int = row(900, ge=0, le=900,
                                          page=("Long-term budget (tokens)", "长期记忆预算（token）"),
                                          en="recall budget for events and graph facts (900 is the ceiling)",
                                          zh="召回中事件与图谱事实的 token 预算（上限 900）")

    # The plugin config's `context` object as JSON: the context engine's settings under the ones stored by
    # context.settings.set (stratagate/context/settings.py checks it at start-up).
    context_config: str | None = row(
        None, plugin="context", json_text=True, default_doc="unset (the cost preset)",
        en="context-engine settings (JSON object: mode `cost`/`quality`/`custom`, automatic folds, reminders, "
           "thresholds; keys in docs/protocol.md `context.settings.get`), under what the page stores; unset: the cost "
           "preset",
        zh="上下文引擎设置（JSON 对象：模式 `cost`/`quality`/`custom`、自动折叠、提醒、阈值；键见 docs/protocol.md "
           "`context.settings.get`），位于页面保存的设置之下；未设置为 cost 预设")

    dense: bool = row(True, en="the optional dense retrieval channel, when its packages are installed (`off`: never)",
                      zh="可选的稠密检索通道（已安装其依赖时使用；`off` 关闭）")

    max_line_bytes: int = row(8 * 1024 * 1024, ge=1024, default_doc="8 MiB", en="largest JSON-RPC message accepted",
                              zh="可接受的最大 JSON-RPC 消息（字节）")
    db_max_mb: int | None = row(None, ge=1, en="cap on the database size: writes beyond it fail cleanly like a full "
                                "disk", zh="数据库大小上限（MB）：超出后写入像磁盘已满一样干净地失败")
    db_lock_timeout_s: float = row(10.0, ge=0, le=3600,
                                   en="seconds opening the database waits for another process's lock",
                                   zh="打开数据库时等待其他进程锁的时长（秒）")

    # Team memory (stratagate/team/): the shared PostgreSQL tier. The DSN may hold a password: it is never logged
    # or shown (team/dsn.py shows the host, port and database only).
    team_dsn: str | None = row(
        None, plugin="teamDsn", page=("Team database", "团队数据库"),
        en="PostgreSQL DSN of the team's shared memory (`postgresql://user@host/db`; TLS options such as `sslmode` "
           "pass through to asyncpg); unset: no team memory. The page never stores a password: put it in "
           "`~/.pgpass` or `PGPASSWORD`",
        zh="团队共享记忆的 `PostgreSQL` 连接串（`postgresql://user@host/db`；`sslmode` 等加密选项原样交给 `asyncpg`）；"
           "未设置则不使用团队记忆。页面从不保存密码：请写在 `~/.pgpass` 或 `PGPASSWORD` 中")
    team_member: str | None = row(
        None, plugin="teamMember", page=("Your member id", "你的成员标识"),
        en="this person's member id in the team (required with `STRATAGATE_TEAM_DSN`; shown beside what they said)",
        zh="本人在团队中的成员标识（设置 `STRATAGATE_TEAM_DSN` 时必填；显示在其所说内容旁）")
    team_poll_seconds: float = row(
        5.0, gt=0, le=3600,
        en="seconds between two pulls when the server's notifications do not arrive (they wake the sync at once)",
        zh="收不到服务器通知时两次拉取之间的秒数（通知到达时立即同步）")

    @model_validator(mode="after")
    def _direct_route_needs_a_model(self) -> Settings:
        if self.model_base_url and not self.model:
            raise ValueError("STRATAGATE_MODEL_BASE_URL is set but STRATAGATE_MODEL (the model name) is not")
        if self.team_dsn and not (self.team_member and self.team_member.strip()):
            raise ValueError("STRATAGATE_TEAM_DSN is set but STRATAGATE_TEAM_MEMBER (your member id) is not")
        return self

    @property
    def zero_model(self) -> bool:
        """No model call at all: every model-written view and event comes from the rules."""
        return self.model_route == "none"


class ProcessEnv(BaseModel):
    """Variables the sidecar reads from the environment itself (before Settings exist, or in a leaf module)."""

    model_config = ConfigDict(defer_build=True)  # not validated by a running sidecar

    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = row(
        "INFO", en="log level of `serve` and `ui` (the `--log-level` flag wins)",
        zh="`serve` 与 `ui` 的日志级别（命令行 `--log-level` 优先）")
    tokens_cache: str | None = row(
        None, default_doc="`$XDG_CACHE_HOME/stratagate/tokens`, else `~/.cache/stratagate/tokens`",
        en="folder of the tokenizer's cache", zh="分词器缓存目录")


class ShimOptions(BaseModel):
    """What only the shim reads: options of the plugin row ``stratagate`` (cordis.patch.yml) and its variables."""

    model_config = ConfigDict(defer_build=True)  # not validated by a running sidecar

    python: str = row("auto", plugin="python", env="STRATAGATE_PYTHON",
                      en="interpreter path, or `auto` (`$STRATAGATE_PYTHON`, then `python3`, `python`)",
                      zh="Python 解释器路径，或 `auto`（依次 `$STRATAGATE_PYTHON`、`python3`、`python`）")
    global_namespace: str = row("default", plugin="globalNamespace", env=None, en="the name used by `global` mode",
                                zh="`global` 模式使用的命名空间名")
    capture_subagents: bool = row(False, plugin="captureSubagents", env=None,
                                  en="also store subagent sessions' turns", zh="同时保存子代理会话的轮次")
    activation_timeout_ms: int = row(
        1500, ge=50, le=60_000, plugin="activationTimeoutMs", env=None,
        en="longest wait for recalled memory per model step (15 s until the first recall of a process: Python "
           "start-up on a loaded machine)",
        zh="每个模型步骤等待召回记忆的最长时间（毫秒；进程首次召回前为 15 秒：负载高时 Python 启动较慢）")
    llm_provider: str | None = row(
        None, plugin="llmProvider", env=None,
        en="provider of the model for background summaries (with `llmModel`); unset: the route of the last session "
           "that captured a turn, else DSH's default model",
        zh="后台摘要所用模型的提供方（与 `llmModel` 一起设置）；未设置时用最近捕获轮次的会话路由，否则用 DSH 默认模型")
    llm_model: str | None = row(None, plugin="llmModel", env=None,
                                en="model for background summaries (with `llmProvider`)",
                                zh="后台摘要所用的模型（与 `llmProvider` 一起设置）")
    context_timeout_ms: int = row(
        5000, ge=100, le=120_000, plugin="contextTimeoutMs", env=None,
        en="longest wait for a `context.plan` answer at turn end, before a step, on overflow or `/compact`; past it "
           "nothing lands and the turn goes on",
        zh="轮次结束、步骤前、溢出或 `/compact` 时等待 `context.plan` 回答的最长时间（毫秒）；超时则不替换，轮次继续")
    shim_log: str | None = row(None, env="STRATAGATE_SHIM_LOG",
                               en="a file that gets a copy of the shim's log lines (DSH's own logger only buffers "
                                  "them)",
                               zh="复制一份 shim 日志行的文件（DSH 自带的日志只做缓冲）")


class ContextPage(BaseModel):
    """The context engine's settings the Memory page edits (stored by the engine: context/settings.py)."""

    model_config = ConfigDict(defer_build=True)  # not validated by a running sidecar

    context_mode: ContextMode = row(
        "cost", env=None, page=("Context mode", "上下文模式"),
        en="the context engine's preset (`cost`, `quality`, or `custom` once a threshold differs); the plugin option "
           "`context`'s `mode` sets it too",
        zh="上下文引擎的预设（`cost`、`quality`，阈值被改动后为 `custom`）；插件选项 `context` 的 `mode` 也可设置")


GROUPS: dict[Scope, type[BaseModel]] = {
    "sidecar": Settings, "process": ProcessEnv, "shim": ShimOptions, "context": ContextPage,
}


class Text(BaseModel):
    model_config = ConfigDict(frozen=True)

    en: str
    zh: str


class Row(BaseModel):
    """One row of the table as data (what the page, the shim's option map and the docs are made from)."""

    model_config = ConfigDict(frozen=True)

    name: str
    scope: Scope
    annotation: Any = Field(exclude=True)
    type: Kind
    optional: bool
    choices: list[str] | None = None
    minimum: int | float | None = None
    maximum: int | float | None = None
    exclusive_minimum: bool = False
    exclusive_maximum: bool = False
    default: Any
    default_doc: str
    env: str | None
    page: Text | None
    plugin: str | None
    plugin_env: bool
    plugin_default: Any
    help: Text

    @property
    def passed_by_shim(self) -> bool:
        """The shim hands the plugin option to the sidecar as the env variable (it does not check it itself)."""
        return self.plugin is not None and self.scope == "sidecar" and self.plugin_env and self.env is not None


def without_none(annotation: Any) -> tuple[Any, bool]:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return (args[0] if len(args) == 1 else annotation), len(args) < len(typing.get_args(annotation))
    return annotation, False


def _kind(annotation: Any, json_text: bool) -> tuple[Kind, list[str] | None]:
    if typing.get_origin(annotation) is Literal:
        return "choice", [str(a) for a in typing.get_args(annotation)]
    kinds: tuple[tuple[Kind, type], ...] = (("bool", bool), ("int", int), ("float", float), ("path", Path))
    for kind, cls in kinds:
        if annotation is cls:
            return kind, None
    if annotation is str:
        return ("json" if json_text else "string"), None
    raise TypeError(f"settings table: no row type for {annotation!r}")


def _show(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"`{value}`"
    return f"{value:g}" if isinstance(value, float) else str(value)


class _Extra(BaseModel):
    """What row() attaches to the Field (its json_schema_extra), read back."""

    zh: str
    env: str | None
    page: tuple[str, str] | None
    plugin: str | None
    plugin_env: bool
    json_text: bool
    default_doc: str | None


def _bound(marker: object) -> int | float | None:
    """The number of an annotated_types bound (Ge, Gt, Le or Lt); None: no bound."""
    for attr in ("ge", "gt", "le", "lt"):
        value = getattr(marker, attr, None)
        if isinstance(value, int | float):
            return value
    return None


def row_of(name: str, scope: Scope, info: FieldInfo) -> Row:
    if not isinstance(info.json_schema_extra, dict):
        raise TypeError(f"settings table: {name} is not declared with row()")
    extra = _Extra.model_validate(info.json_schema_extra)
    annotation, optional = without_none(info.annotation)
    kind, choices = _kind(annotation, extra.json_text)
    default = None if info.default is PydanticUndefined else info.default
    low = next((m for m in info.metadata if isinstance(m, Ge | Gt)), None)
    high = next((m for m in info.metadata if isinstance(m, Le | Lt)), None)
    return Row(
        name=name, scope=scope, annotation=info.annotation, type=kind, optional=optional, choices=choices,
        minimum=_bound(low), maximum=_bound(high),
        exclusive_minimum=isinstance(low, Gt), exclusive_maximum=isinstance(high, Lt),
        default=default, default_doc=extra.default_doc or _show(default),
        env=f"STRATAGATE_{name.upper()}" if extra.env == _DERIVED else extra.env,
        page=Text(en=extra.page[0], zh=extra.page[1]) if extra.page else None,
        plugin=extra.plugin, plugin_env=extra.plugin_env,
        plugin_default=info.json_schema_extra.get("plugin_default", default),
        help=Text(en=info.description or "", zh=extra.zh),
    )


def rows_of(model: type[BaseModel], scope: Scope) -> list[Row]:
    return [row_of(name, scope, info) for name, info in model.model_fields.items()]


def rows(groups: dict[Scope, type[BaseModel]] | None = None) -> list[Row]:
    """Every row, in declaration order: sidecar, process, shim, context."""
    return [r for scope, model in (groups or GROUPS).items() for r in rows_of(model, scope)]


def env_names(model: type[BaseModel]) -> dict[str, str]:
    """Field → env variable of a group (what config.load_settings reads)."""
    return {r.name: r.env for r in rows_of(model, "sidecar") if r.env}


# --- derived outputs: the shim's option map and the docs' tables ---------------------------------------------------


def plugin_manifest(groups: dict[Scope, type[BaseModel]] | None = None) -> dict[str, Any]:
    """``plugin/settings.json``: every plugin option with what shim-js/config.js needs to read it. An option the shim
    passes to the sidecar (``sidecar: true``) is not checked in JS (default null: the sidecar's own default applies,
    and the sidecar refuses a bad value with one clear message); the others are checked against their bounds."""
    options: dict[str, dict[str, Any]] = {}
    for r in rows(groups):
        if r.plugin is None:
            continue
        passed = r.passed_by_shim
        spec: dict[str, Any] = {
            "setting": r.name,
            "type": "object" if r.type == "json" else r.type,
            "default": None if passed else r.plugin_default,
        }
        if r.choices:
            spec["choices"] = r.choices
        if not passed and r.minimum is not None:
            spec["min"] = r.minimum
        if not passed and r.maximum is not None:
            spec["max"] = r.maximum
        spec["env"] = r.env
        spec["sidecar"] = passed
        options[r.plugin] = spec
    return {"generated_by": "stratagate settings (from sidecar/stratagate/settings_table.py)", "options": options}


def _bounds(r: Row) -> str:
    if r.choices:
        return " / ".join(f"`{c}`" for c in r.choices)
    low = None if r.minimum is None else f"{'>' if r.exclusive_minimum else '≥'} {_show(r.minimum)}"
    high = None if r.maximum is None else f"{'<' if r.exclusive_maximum else '≤'} {_show(r.maximum)}"
    return ", ".join(b for b in (low, high) if b)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def readme_table(groups: dict[Scope, type[BaseModel]] | None = None) -> str:
    """README.md's configuration table: every setting the sidecar reads (env, the page, the plugin option)."""
    lines = [
        "| Environment | Default | Bounds | Page | Plugin option | Meaning |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows(groups):
        if r.scope == "shim":
            continue
        env = f"`{r.env}`" if r.env else f"(page: `{r.name}`)"
        plugin = f"`{r.plugin}`" if r.plugin else ""
        page = "yes" if r.page else ""
        cells = (env, _cell(r.default_doc), _cell(_bounds(r)), page, plugin, _cell(r.help.en))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def shim_table(groups: dict[Scope, type[BaseModel]] | None = None) -> str:
    """shim-js/README.md's options table: every plugin option, and the variables only the shim reads."""
    lines = ["| Option | Default | Environment | Meaning |", "|---|---|---|---|"]
    for r in rows(groups):
        if r.plugin is None and r.scope != "shim":
            continue
        option = f"`{r.plugin}`" if r.plugin else ""
        if r.passed_by_shim:
            default = f"the sidecar's: {_cell(r.default_doc)}"
            env = f"→ `{r.env}`"
        else:
            default = _cell(_show(r.plugin_default))
            env = f"`{r.env}`" if r.env else ""
        lines.append(f"| {option} | {default} | {env} | {_cell(r.help.en)} |")
    return "\n".join(lines)
