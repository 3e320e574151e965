"""The scale bench's generated workload: long-term memories, step queries and captured turns.

Deterministic (seeded): the same ``GENERATOR_VERSION`` always gives the same texts, so cached databases
(bench/.cache/) stay valid until this file changes what it generates (bump the version then).

Memories are decisions, preferences, plans, changes, facts and events about many subjects (services, tools,
people, tables, environments). Subjects are drawn with a Zipf-like skew: a few are in thousands of memories,
most in a handful, as in a real project. Every memory carries its own numbers (ports, limits, dates, ticket
ids), so none is a near duplicate of another (admission merges ≥ 80 % word overlap with the same numbers).
Queries name one or two subjects and a topic, so they match a slice of the memory, not every event.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

GENERATOR_VERSION = 2

AREAS = [
    "billing", "checkout", "auth", "search", "notifications", "payments", "inventory", "shipping", "profile",
    "analytics", "reporting", "onboarding", "catalog", "pricing", "ledger", "gateway", "scheduler", "export",
    "import", "media", "chat", "feed", "ranking", "fraud", "identity", "audit", "tenant", "webhooks", "mailer",
    "sync", "metrics", "alerts", "queue", "cache", "session", "upload", "thumbnail", "geo", "tax", "refunds",
]
ROLES = ["api", "worker", "service", "cron", "proxy", "daemon", "frontend", "backend", "consumer", "indexer"]
TOOLS = [
    "npm", "pnpm", "yarn", "vite", "webpack", "esbuild", "jest", "vitest", "pytest", "ruff", "mypy", "docker",
    "podman", "kubernetes", "helm", "terraform", "ansible", "redis", "memcached", "postgresql", "mysql", "sqlite",
    "mongodb", "kafka", "rabbitmq", "nats", "elasticsearch", "opensearch", "clickhouse", "grafana", "prometheus",
    "sentry", "datadog", "nginx", "envoy", "caddy", "celery", "airflow", "fastapi", "django", "flask", "express",
    "nestjs", "react", "vue", "svelte", "tailwind", "graphql", "grpc", "protobuf", "openapi", "s3", "minio",
    "vault", "consul", "github-actions", "gitlab-ci", "jenkins", "bazel", "poetry", "uv", "pip", "cargo", "go",
    "rust", "typescript", "python", "java", "kotlin", "swift", "duckdb", "polars", "pandas", "numpy", "pydantic",
    "sqlalchemy", "alembic", "prisma", "drizzle", "zod", "playwright", "cypress", "storybook", "turborepo", "nx",
]
PEOPLE = [
    "Priya", "Marcus", "Lena", "Tomás", "Aiko", "Noah", "Fatima", "Jonas", "Chen Wei", "Olga", "Ravi", "Sofia",
    "Kwame", "Ingrid", "Mateo", "Yuki", "Hannah", "Diego", "Amara", "Luca", "Zara", "Felix", "Mei", "Oskar",
    "Nadia", "Emre", "Clara", "Bilal", "Greta", "Hugo", "Leila", "Anton", "Rosa", "Sven", "Maya", "Idris",
    "Elif", "Pablo", "Nora", "Kenji", "Sara", "Viktor", "Ines", "Omar", "Julia", "Tariq", "Alma", "Bruno",
]
TABLES = [
    "orders", "invoices", "users", "accounts", "carts", "line_items", "payments", "refunds", "shipments",
    "products", "prices", "coupons", "sessions", "tokens", "events", "audit_log", "webhooks", "subscriptions",
    "plans", "tenants", "addresses", "reviews", "messages", "attachments", "jobs", "locks", "migrations",
]
ENVS = ["staging", "production", "the canary pool", "eu-west", "us-east", "the preview environment", "local dev"]
KNOBS = [
    ("retry backoff", "s"), ("request timeout", "ms"), ("connection pool", "connections"), ("batch size", "rows"),
    ("rate limit", "requests per minute"), ("cache TTL", "minutes"), ("worker concurrency", "threads"),
    ("max payload", "KB"), ("queue depth alarm", "messages"), ("log retention", "days"), ("heap limit", "MB"),
]
REASONS = [
    "the p99 latency doubled under load", "the vendor deprecated the old API", "it halves the build time",
    "the on-call rotation kept getting paged at night", "the license changed", "memory use kept climbing",
    "it was the only option with good ARM support", "the security review flagged it", "the team already knows it",
    "cold starts were too slow", "it removes a moving part", "the old one dropped messages during failover",
    "costs went up by a third", "tests were flaky on CI", "the data model needs transactions",
]
SYMPTOMS = [
    "health checks timed out", "the migration locked a hot table", "a config map was missing",
    "the image was built for the wrong architecture", "TLS certificates had expired", "DNS resolution failed",
    "the disk filled up with logs", "a feature flag was flipped in the wrong order", "OOM kills on every pod",
    "a dependency bump broke the serializer", "the queue consumer fell hours behind",
]
STYLES = [
    "small pull requests", "squash merges", "tabs over spaces", "explicit type hints", "snake_case JSON keys",
    "integration tests over mocks", "feature flags for risky changes", "ADRs for every architecture change",
    "async code reviews", "short standups", "trunk-based development", "conventional commit messages",
    "one assertion per test", "structured logging", "British spelling in the docs",
]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]

TEMPLATES: dict[str, list[str]] = {
    "decision": [
        "We decided that {svc} moves from {t1} to {t2} because {reason}; tracked in ticket {tk}.",
        "Decision for {svc}: use {t1} instead of {t2} for the {table} pipeline, since {reason} (ADR-{n}).",
        "{p1} and {p2} agreed to keep {t1} for {svc} until Q{q} {year} ({tk}); revisit when {reason}.",
        "Agreed in the {area} sync: the {knob} of {svc} is capped at {v1} {unit}; {reason}.",
        "{svc} will read {table} through {t1} only; direct queries from {svc2} are banned after incident {tk}.",
    ],
    "preference": [
        "{p1} prefers {style} for the {area} code, and asked for it in review {n}.",
        "{p1} likes {t1} over {t2} for local work on {svc}; keep examples in {t1} (said on {month} {day}).",
        "The {area} team prefers {style}; {p1} said so again on {month} {day}.",
        "{p1} wants deploy notes for {svc} in the #{area}-ops channel, never by email (asked {month} {day}).",
        "For {svc}, {p1} prefers {knob} changes behind a flag, rolled out to {pct}% first (review {n}).",
    ],
    "plan": [
        "Plan: migrate {svc} to {t1} by {month} {day}; {p1} owns it, {p2} reviews (ticket {tk}).",
        "Next sprint {p1} will split {svc} into {svc2} and a separate {role}, starting with the {table} table "
        "({tk}).",
        "We plan to drop {t1} from {svc} after the {env} soak test passes for {v1} days.",
        "TODO for {p1}: add {t1} dashboards for {svc} before the {month} launch (about {v1} panels).",
        "Roadmap item {n}: move the {table} backups of {svc} to {t1} in {env}.",
    ],
    "change": [
        "Changed the {knob} of {svc} from {v1} to {v2} {unit} in {env} after {symptom}.",
        "Switched {svc} from {t1} to {t2} on {month} {day}; the old {t1} config is kept for {v1} days.",
        "{p1} bumped {t1} to version {v1}.{v2} in {svc}; {n} tests needed updating.",
        "Renamed the {table} column in {svc} (migration {n}); {svc2} reads the new name since build {tk}.",
        "Replaced the cron in {svc} with a {t1} job that runs every {v1} minutes (build {n}).",
    ],
    "fact": [
        "{svc} stores {table} in {t1}; the table holds about {v1},{v2:03d} rows in {env}.",
        "{svc} listens on port {port} and talks to {svc2} over {t1}.",
        "The {knob} for {svc} is {v1} {unit} in {env} and {v2} {unit} elsewhere.",
        "{p1} is the owner of {svc}; {p2} is the backup on-call for it (rota {n}).",
        "{svc} depends on {t1} for {table} and on {t2} for sessions; both run in {env} (audit {tk}).",
    ],
    "event": [
        "On {month} {day} the {svc} deploy to {env} failed: {symptom}; {p1} rolled it back within {v1} minutes.",
        "Incident {tk}: {svc} was down for {v1} minutes in {env} because {symptom}.",
        "{p1} demoed the new {area} flow on {month} {day}; {p2} found {v1} bugs in {svc}.",
        "The {t1} outage on {month} {day} stalled {svc} for {v1} minutes; {svc2} kept working.",
        "Load test {n} of {svc}: {v1} requests per second before {symptom}.",
    ],
}
TYPES = list(TEMPLATES)


def _zipf_weights(n: int, s: float = 1.0) -> list[float]:
    return [1.0 / (rank + 1) ** s for rank in range(n)]


SERVICES = [f"{a}-{r}" for a in AREAS for r in ROLES]  # 400 services
_SVC_W = _zipf_weights(len(SERVICES), 0.9)
_TOOL_W = _zipf_weights(len(TOOLS), 0.8)
_PEOPLE_W = _zipf_weights(len(PEOPLE), 0.6)


def _fields(rng: random.Random) -> dict[str, Any]:
    svc, svc2 = rng.choices(SERVICES, _SVC_W, k=2)
    t1, t2 = rng.choices(TOOLS, _TOOL_W, k=2)
    p1, p2 = rng.choices(PEOPLE, _PEOPLE_W, k=2)
    knob, unit = rng.choice(KNOBS)
    return {
        "svc": svc, "svc2": svc2, "t1": t1, "t2": t2, "p1": p1, "p2": p2, "knob": knob, "unit": unit,
        "area": svc.split("-")[0], "role": rng.choice(ROLES), "table": rng.choice(TABLES), "env": rng.choice(ENVS),
        "reason": rng.choice(REASONS), "symptom": rng.choice(SYMPTOMS), "style": rng.choice(STYLES),
        "month": rng.choice(MONTHS), "day": rng.randint(1, 28), "year": rng.randint(2024, 2027),
        "q": rng.randint(1, 4), "tk": f"{rng.choice(['OPS', 'ENG', 'INC', 'PLAT'])}-{rng.randint(100, 99999)}",
        "n": rng.randint(2, 9999), "v1": rng.randint(2, 999), "v2": rng.randint(1, 999),
        "pct": rng.choice([1, 5, 10, 25]), "port": rng.randint(1025, 65000),
    }


def memories(count: int, seed: int = 14) -> Iterator[dict[str, Any]]:
    """``count`` memory_remember arguments (text and type), deterministic for a seed."""
    rng = random.Random(seed)
    seen: set[str] = set()
    while len(seen) < count:
        kind = rng.choice(TYPES)
        text = rng.choice(TEMPLATES[kind]).format(**_fields(rng))
        if text not in seen:  # every template carries numbers, so a repeat is exact, never near
            seen.add(text)
            yield {"text": text[0].upper() + text[1:], "type": kind}


QUERY_TEMPLATES = [
    "which package manager does {svc} use now?",
    "why did the {svc} deploy fail in {env}?",
    "what did we decide about the {knob} for {svc}?",
    "who owns {svc} and who is the backup on-call?",
    "does {svc} still depend on {t1}?",
    "what does {p1} prefer for code reviews?",
    "when do we plan to migrate {svc} to {t1}?",
    "what port does {svc} listen on?",
    "what changed in {svc} after the last incident?",
    "where does {svc} store the {table} table?",
    "what happened during the {t1} outage?",
    "remind me why we moved away from {t2}",
]


def queries(count: int = 24, seed: int = 140) -> list[str]:
    """Step queries naming a subject and a topic (a slice of the memory, never all of it)."""
    rng = random.Random(seed)
    return [QUERY_TEMPLATES[i % len(QUERY_TEMPLATES)].format(**_fields(rng)) for i in range(count)]


def fresh_queries(count: int, seed: int = 141, avoid: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """``count`` distinct step queries generated like ``queries``, none in ``avoid`` (and, by default, none of
    ``queries()``): each one a new human message whose search no cache has answered yet."""
    rng = random.Random(seed)
    seen = set(avoid) | set(queries())
    out: list[str] = []
    i = 0
    while len(out) < count:
        q = QUERY_TEMPLATES[i % len(QUERY_TEMPLATES)].format(**_fields(rng))
        i += 1
        if q not in seen:
            seen.add(q)
            out.append(q)
    return out


TOOL_RESULT_LINES = 12


def history_turn(i: int, namespace: str, session: str) -> dict[str, Any]:
    """One captured turn of the history (user ask, one tool record, assistant answer), varied per index."""
    rng = random.Random(i * 7919 + 14)
    f = _fields(rng)
    result = "\n".join(
        f"src/{f['area']}/{rng.choice(TABLES)}_{k}.py:{rng.randint(1, 900)}: def handle_{f['table']}_{k}(event):"
        for k in range(TOOL_RESULT_LINES)
    )
    return {
        "namespace": namespace,
        "session": session,
        "receipt": f"scale:{session}:turn:{i}",
        "user": f"Turn {i}: can you check why {f['svc']} is slow in {f['env']}? {f['p1']} says {f['symptom']}.",
        "assistant": f"I looked at {f['svc']}: the {f['knob']} was {f['v1']} {f['unit']}; I set it to {f['v2']} "
        f"{f['unit']} and added a test. {f['reason'].capitalize()}, so I also noted it for {f['p2']}.",
        "tools": [{"name": "grep", "arguments": {"pattern": f"def handle_{f['table']}", "path": f"src/{f['area']}/"},
                   "result": result}],
        "started_at": "2026-05-01T10:00:00Z",
        "ended_at": "2026-05-01T10:00:30Z",
        "end_reason": "stop",
    }
