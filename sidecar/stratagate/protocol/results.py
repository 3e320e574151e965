"""Typed results of the JSON-RPC methods. Every reply is validated and serialised through its model
(protocol/adapter.py); keys a handler leaves out stay out. Nested shapes owned by one feature and documented in
docs/protocol.md next to it (system.info's dense section, an import's stored report) are typed as JSON objects."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import RootModel

from stratagate.protocol.types import Result

JsonObject = dict[str, Any]
Number = int | float  # an int stays an int on the wire (a float field would print 0 as 0.0)


class PingResult(Result):
    pong: bool
    version: str


class InfoCounts(Result):
    namespaces: int
    sessions: int
    turns: int
    messages: int
    blocks: dict[str, int]
    block_views: dict[str, int]  # ready blocks by who wrote their L0–L2: model, extractive, fallback
    events: dict[str, int]
    graph_nodes: int
    graph_facts: dict[str, int]
    imports: dict[str, int]
    jobs: dict[str, int]


class DenseInfo(Result):
    """The optional dense channel (search/dense.py state, search/vectors.py counts)."""

    state: Literal["ready", "loading", "off", "unavailable"]
    reason: str | None
    model: str
    dim: int
    loaded: bool
    load_s: Number | None
    vectors: dict[str, int]
    pending: dict[str, int] | None
    jobs: dict[str, int]


class LoopInfo(Result):
    """The event-loop stall monitor (stalls.py): lateness of a timer repeating every interval_ms."""

    interval_ms: Number
    max_stall_ms: Number
    stalls_over_20ms: int
    max_busy_ms: Number
    busy_over_20ms: int
    ticks: int
    since: str | None


class TokensInfo(Result):
    """The DeepSeek V4 token counter (tokens/): built yet, from where (tokens/cache.py), in how long."""

    ready: bool
    source: Literal["cache", "built", "converted"] | None
    build_ms: Number | None


class InfoResult(Result):
    version: str
    pid: int
    db_path: str
    schema_version: int
    expected_schema_version: int
    uptime_s: Number
    block_turns: int
    block_decay_lambda: Number
    model_mode: Literal["auto", "none"]
    model_route: str
    counts: InfoCounts
    last_job_error: str | None
    dense: DenseInfo
    loop: LoopInfo
    tokens: TokensInfo
    host: dict[str, Any]  # the DSH the sidecar runs under and the verdict (dsh/host.py HostCheck)
    team: dict[str, Any]  # team memory's sync (team/sync.py status_of): enabled, member, server, outbox, lag, error


class StatsEvents(Result):
    by_status: dict[str, int]
    by_scope: dict[str, int]


class StatsBlocks(Result):
    by_status: dict[str, int]
    by_summary_source: dict[str, int]


class StatsGraph(Result):
    nodes: int
    facts: dict[str, int]


class StatsMerges(Result):
    done: int
    undone: int
    open: int


class StatsSizes(Result):
    db_bytes: int
    wal_bytes: int
    page_size: int
    page_count: int
    freelist_pages: int
    tables: dict[str, int]


class StatsJobRef(Result):
    job: str
    kind: str
    created_at: str | None = None
    error: str | None = None
    at: str | None = None


class StatsJobHealth(Result):
    failed: int
    queued_overdue_1h: int
    oldest_queued: StatsJobRef | None
    last_error: StatsJobRef | None


class StatsRun(Result):
    id: int
    trigger: Literal["schedule", "start", "manual"]
    status: Literal["running", "done", "failed"]
    started_at: str
    finished_at: str | None
    error: str | None


class StatsSchedule(Result):
    interval_hours: Number
    last_run: StatsRun | None
    job_status: Literal["queued", "running", "done", "failed"] | None
    next_run_at: str | None


class StatsResult(Result):
    """system.stats / stratagate stats: the maintenance report (stratagate/maintenance/stats.py)."""

    generated_at: str
    db_path: str
    events: StatsEvents
    blocks: StatsBlocks
    graph: StatsGraph
    jobs: dict[str, dict[str, int]]
    merges: StatsMerges
    sizes: StatsSizes
    job_health: StatsJobHealth
    schedule: StatsSchedule


class MergeRef(Result):
    namespace: str
    survivor: str
    merged: str
    similarity: Number
    match: Literal["exact", "near"]


class MaintenanceRunResult(Result):
    """maintenance.run / stratagate maintain: what the pass did (or, dry, would do) and the report after it."""

    dry_run: bool
    run_id: int | None
    trigger: Literal["schedule", "start", "manual"]
    merges: list[MergeRef]
    merged: int
    reprojection: dict[str, list[str]]
    fallbacks_requeued: dict[str, int | None]
    optimize: JsonObject
    report: StatsResult


class UnmergeResult(Result):
    event: JsonObject
    survivor: str
    sources_removed: int
    fact_links_removed: int


class OkResult(Result):
    ok: bool


class ResolveResult(Result):
    namespace: str
    mode: Literal["project", "session", "global"]
    label: str


class ActivationResult(Result):
    text: str
    tokens: int
    longterm_tokens: int
    block_ids: list[str]
    event_ids: list[str]
    node_ids: list[str]


class ToolSpec(Result):
    name: str
    description: str
    parameters: JsonObject


class ToolsListResult(RootModel[list[ToolSpec]]):
    pass


class ToolsCallResult(RootModel[JsonObject]):
    """The tool's own result, already validated by the tool's result model (protocol/tool_results.py)."""


class JobView(Result):
    id: str
    namespace: str
    kind: str
    subject: str
    status: Literal["queued", "running", "done", "failed"]
    attempts: int
    max_attempts: int
    next_run_at: str | None
    last_error: str | None
    created_at: str
    updated_at: str


class JobsListResult(Result):
    jobs: list[JobView]


class JobsRetryResult(Result):
    retried: list[str]


class ImportReport(Result):
    import_id: str
    namespace: str
    format: str
    source_name: str
    source_sha256: str
    items: int
    inserted: list[str]
    merged: list[str]
    suppressed: int
    tombstones: list[str]
    skipped_inactive: int
    skipped_statuses: dict[str, int]
    skipped_struck: int
    struck_refs: list[str]
    partly_struck_refs: list[str]
    warnings: list[str]
    projection_jobs: list[str]


class ImportRemoveResult(Result):
    import_id: str
    archived: list[str]
    restored: list[str]


class ImportView(Result):
    id: str
    namespace: str
    format: str
    source_name: str
    source_sha256: str
    item_count: int
    status: Literal["active", "removed"]
    created_at: str
    removed_at: str | None
    counts: JsonObject


class ImportListResult(Result):
    imports: list[ImportView]


class ImportGetResult(ImportView):
    report: JsonObject
    source_text: str


class WeightView(Result):
    """One ref's long-term weight with every input (evidence/weights.py), or ``weight: null`` and a note."""

    ref: str
    note: str | None = None
    id: str | None = None
    kind: Literal["event", "node"] | None = None
    weight: Number | None = None
    distance: int | None = None
    uses: int | None = None
    session_uses: int | None = None
    last_used_turn: int | None = None
    turn: int | None = None
    decay_rate: Number | None = None
    floor: Number | None = None
    cap: Number | None = None
    pinned: bool | int | None = None
    status: str | None = None
    criticality: str | None = None


class WeightsResult(Result):
    namespace: str
    session: str
    turn: int
    weights: list[WeightView]


class OpenBatch(Result):
    batch_id: str
    tool: str
    query: str | None
    refs: int
    state: Literal["unassessed", "unrecorded"]
    created_at: str


class OpenBatchesResult(Result):
    namespace: str
    session: str
    turn: int
    batches: list[OpenBatch]
    nudge: str | None


class EraseResult(Result):
    id: str
    erased: bool
    erased_at: str
    counts: JsonObject
    note: str
