"""Well-known tools and what they are, so that 'npm' and 'pnpm' are both found as a 'package manager' and a switch
from one to the other replaces the project's package manager. Small on purpose: the extraction model names
everything else; this covers the words developers use daily without a model call.

A *functional* category holds one value per subject at a time (a project has one package manager), so a new fact
in it supersedes the old one. Other categories (languages, databases) can hold several values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Known:
    name: str
    kind: str
    category: str


FUNCTIONAL = frozenset(
    {"package manager", "bundler", "test runner", "ci service", "version control", "python package manager"}
)

_TABLE: dict[str, tuple[str, str, tuple[str, ...]]] = {
    # name: (kind, category, aliases)
    "npm": ("tool", "package manager", ()),
    "pnpm": ("tool", "package manager", ()),
    "yarn": ("tool", "package manager", ("yarn berry",)),
    "bun": ("tool", "package manager", ()),
    "pip": ("tool", "python package manager", ()),
    "poetry": ("tool", "python package manager", ()),
    "uv": ("tool", "python package manager", ()),
    "pipenv": ("tool", "python package manager", ()),
    "conda": ("tool", "python package manager", ("anaconda", "miniconda")),
    "cargo": ("tool", "build tool", ()),
    "maven": ("tool", "build tool", ()),
    "gradle": ("tool", "build tool", ()),
    "webpack": ("tool", "bundler", ()),
    "vite": ("tool", "bundler", ()),
    "rollup": ("tool", "bundler", ()),
    "esbuild": ("tool", "bundler", ()),
    "parcel": ("tool", "bundler", ()),
    "jest": ("tool", "test runner", ()),
    "vitest": ("tool", "test runner", ()),
    "mocha": ("tool", "test runner", ()),
    "pytest": ("tool", "test runner", ()),
    "github actions": ("tool", "ci service", ()),
    "gitlab ci": ("tool", "ci service", ()),
    "circleci": ("tool", "ci service", ()),
    "jenkins": ("tool", "ci service", ()),
    "git": ("tool", "version control", ()),
    "mercurial": ("tool", "version control", ("hg",)),
    "postgresql": ("tool", "database", ("postgres", "psql")),
    "mysql": ("tool", "database", ()),
    "sqlite": ("tool", "database", ("sqlite3",)),
    "mongodb": ("tool", "database", ("mongo",)),
    "redis": ("tool", "database", ()),
    "docker": ("tool", "container runtime", ()),
    "kubernetes": ("tool", "orchestrator", ("k8s",)),
    "eslint": ("tool", "linter", ()),
    "ruff": ("tool", "linter", ()),
    "prettier": ("tool", "formatter", ()),
    "black": ("tool", "formatter", ()),
    "react": ("tool", "framework", ("reactjs",)),
    "vue": ("tool", "framework", ("vue.js", "vuejs")),
    "django": ("tool", "framework", ()),
    "flask": ("tool", "framework", ()),
    "fastapi": ("tool", "framework", ()),
    "node.js": ("tool", "runtime", ("node", "nodejs")),
    "deno": ("tool", "runtime", ()),
    "python": ("concept", "programming language", ()),
    "typescript": ("concept", "programming language", ("ts",)),
    "javascript": ("concept", "programming language", ("js",)),
    "rust": ("concept", "programming language", ()),
    "go": ("concept", "programming language", ("golang",)),  # "go" alone is ambiguous: see AMBIGUOUS
    "java": ("concept", "programming language", ()),
}

# What each category is called in other words, English and Chinese: indexed with the category so "测试框架用什么？"
# or "which CI do we use?" finds "换成 Vitest 吧" (whose own words never name the category).
CATEGORY_LABELS: dict[str, tuple[str, ...]] = {
    "package manager": ("包管理器", "包管理", "依赖管理"),
    "python package manager": ("包管理器", "包管理", "依赖管理"),
    "build tool": ("构建工具", "构建"),
    "bundler": ("打包工具", "构建工具", "打包"),
    "test runner": ("test framework", "testing", "tests", "测试框架", "测试工具", "测试"),
    "ci service": ("ci", "continuous integration", "pipeline", "持续集成", "流水线"),
    "version control": ("版本控制",),
    "database": ("db", "数据库"),
    "container runtime": ("container", "容器"),
    "orchestrator": ("orchestration", "编排"),
    "linter": ("lint", "代码检查"),
    "formatter": ("formatting", "格式化"),
    "framework": ("框架",),
    "runtime": ("运行时", "运行环境"),
    "programming language": ("language", "编程语言", "语言"),
}


def labels(category: str) -> list[str]:
    """A category and its other names, for search indexes."""
    return [category, *CATEGORY_LABELS.get(category, ())]


# Everyday words that are also tool names: only taken as the tool where a sentence says it is used, never
# added to a search index from free text ("a black cat" is not about a formatter).
AMBIGUOUS = frozenset(
    {
        "black",
        "parcel",
        "mocha",
        "flask",
        "go",
        "rust",
        "java",
        "node",
        "bun",
        "yarn",
        "poetry",
        "jest",
        "mercurial",
        "hg",
        "vue",
        "react",
        "uv",
        "ts",
        "js",
        "mongo",
    }
)

_BY_KEY: dict[str, Known] = {}
for _name, (_kind, _category, _aliases) in _TABLE.items():
    for _key in (_name, *_aliases):
        _BY_KEY[_key] = Known(_name, _kind, _category)

LONGEST = max(len(key.split()) for key in _BY_KEY)
_STARTS_LONGER = frozenset(key.split(" ")[0] for key in _BY_KEY if " " in key)
"""First words of the names longer than one word: only at these is a longer match tried."""


def lookup(phrase: str) -> Known | None:
    """The known entity a phrase names exactly (case-insensitive), if any."""
    return _BY_KEY.get(" ".join(phrase.casefold().split()))


def aliases_of(name: str) -> list[str]:
    """The other names a known entity goes by."""
    entry = _TABLE.get(name)
    return list(entry[2]) if entry else []


def find_all(words: list[str]) -> list[tuple[int, int, Known]]:
    """Known entities in a word list as (start, end, entity), longest match first, non-overlapping."""
    folded = [w.casefold() for w in words]
    starts = [w.partition(" ")[0] in _STARTS_LONGER for w in folded]
    if not any(starts):  # only one-word names can match here: each word on its own
        return [(i, i + 1, hit) for i, w in enumerate(folded) if (hit := _BY_KEY.get(w)) is not None]
    found: list[tuple[int, int, Known]] = []
    i = 0
    while i < len(folded):
        longest = min(LONGEST, len(folded) - i) if starts[i] else 1
        for size in range(longest, 0, -1):
            hit = _BY_KEY.get(" ".join(folded[i : i + size]))
            if hit is not None:
                found.append((i, i + size, hit))
                i += size
                break
        else:
            i += 1
    return found


def category_terms(text: str) -> list[str]:
    """The categories of the known entities a text mentions ('npm' → 'package manager', '包管理器'), with their other
    names (``labels``), for search indexes."""
    import re

    words = re.findall(r"[\w.+#-]+", text)
    cats = []
    for start, end, known in find_all(words):
        if " ".join(words[start:end]).casefold() in AMBIGUOUS:
            continue
        for label in labels(known.category):
            if label not in cats:
                cats.append(label)
    return cats


def names_in(text: str) -> list[str]:
    """The canonical names of the known entities a text mentions, however it spells them ("Postgres" → "postgresql"),
    so two texts naming one thing by different names share a word."""
    import re

    words = re.findall(r"[\w.+#-]+", text)
    return list(dict.fromkeys(known.name for _, _, known in find_all(words)))


def kinds_named(named: str, claims: list[dict[str, Any]]) -> list[str]:
    """What the things named in ``named`` and in ``claims`` are ("npm" → "package manager"), each once: the words
    that let a search by kind find every member."""
    kinds = category_terms(named)
    for claim in claims:
        for key in ("object", "subject"):
            known = lookup(str(claim.get(key) or ""))
            if known is not None:
                kinds.extend(c for c in labels(known.category) if c not in kinds)
        if claim.get("slot"):
            kinds.extend(c for c in labels(str(claim["slot"])) if c not in kinds)
    return kinds
