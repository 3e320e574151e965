"""Memory-import parsing layer: formats, detection, verbatim sources, read-only SQLite, errors, properties."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from stratagate.imports import parsers
from stratagate.imports.parsers import (
    MAX_IMPORT_BYTES,
    ImportBatch,
    ImportFormatError,
    ImportItem,
    detect_format,
    detect_text_format,
    parse_file,
    parse_text,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "imports"
TEXT_FIXTURES = ["chatgpt_manage_memories.txt", "chatgpt_export_answer.md", "notes.md", "plain.txt"]
ALL_FIXTURES = {
    "mem0_get_all.json": "mem0",
    "mem0_oss_results.json": "mem0",
    "mem0_export.jsonl": "mem0",
    "chatgpt_manage_memories.txt": "chatgpt",
    "chatgpt_export_answer.md": "chatgpt",
    "chatgpt_memories.json": "chatgpt",
    "notes.md": "markdown",
    "plain.txt": "text",
}


def texts(batch: ImportBatch) -> list[str]:
    return [item.text for item in batch.items]


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def sha_bytes(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------------------------------------------------------
# dsh-memory-connect store, built here with the documented v0.4.0 schema (no binary fixture is committed)

DSH_SCHEMA = """
PRAGMA application_id = 1296387376;  -- 0x4D454D30, "MEM0"
PRAGMA user_version = 1;
CREATE TABLE IF NOT EXISTS memories (
  id TEXT PRIMARY KEY,
  type TEXT NOT NULL CHECK (type IN ('fact', 'preference', 'context', 'decision', 'skill')),
  content TEXT NOT NULL,
  session_id TEXT NOT NULL,
  source_event_seq TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  last_accessed_at INTEGER NOT NULL,
  access_count INTEGER NOT NULL DEFAULT 0,
  relevance_score REAL NOT NULL DEFAULT 0.5,
  tags TEXT NOT NULL DEFAULT '[]',
  parent_memory_id TEXT,
  status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'consolidated', 'decayed', 'archived')),
  content_hash TEXT NOT NULL
) STRICT;
CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5(
  content, tags, memory_id UNINDEXED, type UNINDEXED, session_id UNINDEXED, created_at UNINDEXED,
  tokenize = 'unicode61'
);
CREATE TABLE IF NOT EXISTS memory_session_relevance (
  memory_id TEXT NOT NULL, session_id TEXT NOT NULL, relevance REAL NOT NULL DEFAULT 0.5,
  recalled_at INTEGER NOT NULL, PRIMARY KEY (memory_id, session_id)
) STRICT;
CREATE TABLE IF NOT EXISTS extraction_state (
  session_id TEXT PRIMARY KEY, last_extracted_seq INTEGER NOT NULL DEFAULT 0,
  extraction_status TEXT NOT NULL DEFAULT 'pending'
) STRICT;
CREATE TABLE IF NOT EXISTS memory_consolidation_log (
  id TEXT PRIMARY KEY, source_memory_ids TEXT NOT NULL, target_memory_id TEXT NOT NULL,
  merge_score REAL NOT NULL, merged_at INTEGER NOT NULL
) STRICT;
"""


def java_hash(text: str) -> str:
    """dsh-memory-connect's content_hash: the 32-bit ×31 rolling hash over UTF-16 code units, as a string."""
    value = 0
    units = text.encode("utf-16-le")
    for i in range(0, len(units), 2):
        value = (value * 31 + int.from_bytes(units[i : i + 2], "little")) & 0xFFFFFFFF
    return str(value - (1 << 32) if value & 0x80000000 else value)


# (id, type, content, created_at ms, tags JSON text, status, parent) — inserted deliberately out of created_at order.
DSH_ROWS: list[tuple[str, str, str, int, str, str, str | None]] = [
    (
        "mem-1736899200000-k3j9x1",
        "preference",
        "Please use pnpm for this repo",
        1736899200000,
        '["nodejs"]',
        "active",
        None,
    ),
    ("mem-1737000000000-zz11aa", "context", "项目：智能家居控制面板 🏠", 1737000000000, "[]", "decayed", None),
    (
        "mem-1736812800000-p0q9r8",
        "decision",
        "decided to use PostgreSQL for the shop backend",
        1736812800000,
        '["database", "ci-cd"]',
        "consolidated",
        None,
    ),
    (
        "mem-1737100000000-abc123",
        "context",
        "Session topic: Set up pnpm monorepo",
        1737100000000,
        "{not json",
        "archived",
        "mem-1736899200000-k3j9x1",
    ),
    ("mem-1737200000000-emp000", "fact", "   ", 1737200000000, "[]", "active", None),
    ("mem-1736900000000-skill1", "skill", "line one\nline two", 1736900000000, '["tool-result", 42]', "active", None),
]
DSH_ORDER = [
    "mem-1736812800000-p0q9r8",
    "mem-1736899200000-k3j9x1",
    "mem-1736900000000-skill1",
    "mem-1737000000000-zz11aa",
    "mem-1737100000000-abc123",
]


def insert_rows(conn: sqlite3.Connection, rows: list[tuple[str, str, str, int, str, str, str | None]]) -> None:
    for mem_id, kind, content, created, tags, status, parent in rows:
        conn.execute(
            "INSERT INTO memories (id, type, content, session_id, source_event_seq, created_at, last_accessed_at,"
            " access_count, relevance_score, tags, parent_memory_id, status, content_hash)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (mem_id, kind, content, "sess-42", "7", created, created, 0, 0.5, tags, parent, status, java_hash(content)),
        )
        conn.execute("INSERT INTO memory_fts (memory_id, content, tags) VALUES (?, ?, ?)", (mem_id, content, tags))


def make_store(path: Path, rows: list[Any] = DSH_ROWS, *, journal: str = "delete") -> Path:
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA journal_mode = {journal}")
    conn.executescript(DSH_SCHEMA)
    insert_rows(conn, rows)
    conn.commit()
    conn.close()
    return path


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return make_store(tmp_path / "memory.db")


# ---------------------------------------------------------------------------------------------------------------
# Detection


@pytest.mark.parametrize(("name", "fmt"), sorted(ALL_FIXTURES.items()))
def test_detects_each_fixture(name: str, fmt: str):
    assert detect_format(FIXTURES / name) == fmt
    assert parse_file(FIXTURES / name).format == fmt


def test_detects_dsh_store(store: Path):
    assert detect_format(store) == "dsh-memory-connect"


@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        ('[{"memory": "x"}]', "mem0"),
        ('{"memories": [{"memory": "x"}]}', "mem0"),
        ('{"id": "1", "memory": "a single Mem0 memory object"}', "mem0"),
        ('["Prefers tea"]', "chatgpt"),
        ('{"results": [{"content": "x"}]}', "chatgpt"),
        ("Memories:\nLikes tea\n", "chatgpt"),
        ("## ChatGPT memories (2)\n- Likes tea\n", "chatgpt"),
        ("[2025-01-01] - Likes tea\n[2025-01-02] - Likes cake\n", "chatgpt"),
        ("Here you go:\n```\nLikes tea\nLikes cake\n```\n", "chatgpt"),
        ("# Me\nLikes tea\n", "markdown"),
        ("- Likes tea\n", "markdown"),
        ("• Likes tea\n", "markdown"),
        ("1. Likes tea\n", "markdown"),
        ("> - quoted bullet\n", "markdown"),
        ("Me\n===\nLikes tea\n", "markdown"),
        ("- a\n- b\n```\ncode\n```\n", "markdown"),
        ("Likes tea\nLikes cake\n", "text"),
        ("[a link](https://example.com) is not a date\n", "text"),
    ],
)
def test_detects_text_shapes(text: str, fmt: str):
    assert detect_text_format(text) == fmt


# ---------------------------------------------------------------------------------------------------------------
# Mem0


def test_mem0_get_all_list():
    batch = parse_file(FIXTURES / "mem0_get_all.json")
    assert batch.format == "mem0"
    assert batch.source_name == "mem0_get_all.json"
    assert texts(batch) == [
        "Prefers morning meetings and async communication",
        "住在上海，喜欢吃小笼包 🥟",
        'Is allergic to "shellfish" — avoid suggesting it',
    ]
    assert batch.warnings == ["$[2]: empty 'memory' — skipped"]
    first, cjk, naive = batch.items
    assert first.source_ref == "$[0]"
    assert first.external_id == "3c90c3cc-0d44-4b50-8888-8dd25736052a"
    assert first.created_at == utc(2024, 11, 7, 5, 31, 56)
    assert first.kind == "preference"  # metadata.type wins over the first category
    assert first.tags == ["work", "communication"]
    assert first.status is None
    assert first.extra["metadata"] == {"type": "preference"}
    assert first.extra["hash"] == "8a1e2b7f0c54e0c1c6e3f6b1b0f7b3a2"
    assert first.extra["updated_at"] == "2024-11-07T05:31:56Z"
    assert first.extra["user_id"] == "arjun"
    assert "memory" not in first.extra and "id" not in first.extra
    assert cjk.created_at == utc(2024, 7, 26, 17, 29, 36, 630547)  # -07:00 converted to UTC
    assert cjk.kind == "personal_details"  # no metadata: first category
    assert naive.created_at == utc(2024, 7, 20, 8, 0, 0)  # naive ISO taken as UTC
    assert naive.source_ref == "$[3]"


def test_mem0_oss_results_with_bom_and_crlf():
    path = FIXTURES / "mem0_oss_results.json"
    raw = path.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf") and b"\r\n" in raw
    batch = parse_file(path)
    assert batch.source_text == raw.decode("utf-8")  # verbatim, BOM included
    assert batch.source_sha256 == hashlib.sha256(raw).hexdigest()
    assert [i.source_ref for i in batch.items] == ["$.results[0]", "$.results[1]"]
    assert texts(batch) == ["Likes to play cricket on weekends", "Is learning Japanese — 日本語を勉強中 ✍️"]
    assert batch.items[0].kind == "hobbies"  # metadata.category
    assert batch.items[1].extra["agent_id"] == "travel-bot"
    assert batch.items[1].created_at == utc(2024, 8, 1, 19, 0, 0)


def test_mem0_json_lines_epochs_and_state():
    batch = parse_file(FIXTURES / "mem0_export.jsonl")
    assert [i.source_ref for i in batch.items] == ["line 1", "line 2"]
    seconds, millis = batch.items
    assert seconds.created_at == utc(2024, 11, 7, 5, 31, 56)  # epoch seconds
    assert millis.created_at == utc(2024, 11, 7, 5, 31, 56, 123000)  # epoch milliseconds
    assert millis.status == "archived"
    assert seconds.tags == ["professional_details"]


def test_mem0_wrappers_and_liberal_entries():
    doc = {
        "memories": [
            {"id": 7, "memory": "Has a \n two-line memory", "categories": "food", "created_at": "yesterday"},
            {"memory": None},
            "a bare string entry",
            42,
            {"id": "x", "text": "no memory key, text used"},
            {"memory": "nan metadata", "metadata": {"score": float("nan")}},
        ]
    }
    batch = parse_text(json.dumps(doc), "mem0", "export.json")
    assert texts(batch) == [
        "Has a \n two-line memory",
        "a bare string entry",
        "no memory key, text used",
        "nan metadata",
    ]
    first = batch.items[0]
    assert first.external_id == "7"
    assert first.tags == ["food"]
    assert first.created_at is None
    assert first.extra["created_at"] == "yesterday"  # unparsed value kept
    assert batch.items[3].extra["metadata"] == {"score": "nan"}  # JSON-safe
    assert batch.warnings == [
        "$.memories[0]: unrecognised created_at 'yesterday' — kept in extra",
        "$.memories[1]: 'memory' is a JSON NoneType, not a string — skipped",
        "$.memories[3]: expected a memory object, got a JSON int — skipped",
    ]


# ---------------------------------------------------------------------------------------------------------------
# ChatGPT


def test_chatgpt_manage_memories_copy():
    path = FIXTURES / "chatgpt_manage_memories.txt"
    raw = path.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf") and raw.count(b"\r\n") == raw.count(b"\n")
    batch = parse_file(path)
    assert batch.format == "chatgpt"
    assert texts(batch) == [
        "Prefers concise answers.",
        "Is learning Rust",
        "Lives in Berlin",
        "Has a cat named Miso 🐱",
        "用户喜欢用中文交流，但代码注释要用英文。",
        "Works as a data engineer at a fintech startup.",
        "Prefers metric units",
    ]
    assert [i.source_ref for i in batch.items] == [
        "line 3",
        "line 4",
        "line 5",
        "line 6",
        "line 7",
        "line 8",
        "line 10",
    ]
    assert batch.warnings == []
    assert all(i.tags == [] and i.created_at is None for i in batch.items)


def test_chatgpt_export_answer_code_block_and_dates():
    batch = parse_file(FIXTURES / "chatgpt_export_answer.md")
    assert texts(batch) == [
        "Prefers responses without emojis unless asked.",
        "Is building a home-automation project with Home Assistant and Zigbee sensors.",
        "女儿叫小雨，今年六岁。",
        "Likes dark roast coffee ☕ and dislikes tea.",
        "Uses Neovim with a custom Lua config.",
    ]
    assert [i.created_at for i in batch.items] == [
        utc(2025, 1, 15),
        utc(2025, 2, 3),
        utc(2025, 2, 3),
        None,
        utc(2025, 3, 4),
    ]
    assert batch.items[3].extra["date_prefix"] == "[unknown]"
    assert len(batch.warnings) == 1 and "ignored 2 line(s) outside the code block" in batch.warnings[0]


def test_chatgpt_bracket_that_is_not_a_date_stays():
    batch = parse_text("Memories\n[draft] - keep this prefix\n- [2024/02/29]: Leap-day memory\n", "chatgpt")
    assert texts(batch) == ["[draft] - keep this prefix", "Leap-day memory"]
    assert batch.items[1].created_at == utc(2024, 2, 29)


def test_chatgpt_json_variant():
    batch = parse_file(FIXTURES / "chatgpt_memories.json")
    assert texts(batch) == ["Prefers Python for scripting.", "Has two kids 👧👦"]
    first, second = batch.items
    assert first.created_at == utc(2025, 1, 15, 0, 0, 0, 500000)
    assert first.external_id == "mem_01" and first.status is None
    assert second.status == "disabled" and second.extra["enabled"] is False
    assert second.created_at == utc(2025, 2, 1, 9, 0, 0)
    assert batch.warnings == ["$[2]: empty 'content' — skipped"]


# ---------------------------------------------------------------------------------------------------------------
# Markdown and plain text

NOTES_EXPECTED = [
    ("Name: Dana; pronouns she/her", "line 8", ["About me"]),
    ("Lives in Lisbon, works remotely for a\n  company in Berlin (CET, one hour ahead)", "lines 9-10", ["About me"]),
    ("会说一点中文，正在学习繁體字 📚", "line 11", ["About me"]),
    ("Prefers British spelling in documents.", "line 15", ["About me", "Preferences"]),
    (
        "Wants code reviews to point out\n   naming issues first,\n   then logic.",
        "lines 16-18",
        ["About me", "Preferences"],
    ),
    ("[ ] Try out **Helix** editor", "line 19", ["About me", "Preferences"]),
    ("Uses a split keyboard 🎹", "line 24", ["About me", "Work setup"]),
    ("Layout: Colemak-DH", "line 25", ["About me", "Work setup"]),
    ("Plain paragraph line that is also a memory.", "line 34", ["About me", "Work setup"]),
    ("Quoted: likes to travel by train.", "line 35", ["About me", "Work setup"]),
]


def test_markdown_notes():
    batch = parse_file(FIXTURES / "notes.md")
    assert [(i.text, i.source_ref, i.tags) for i in batch.items] == NOTES_EXPECTED
    assert batch.warnings == [
        "lines 1-4: skipped YAML front matter",
        "lines 27-30: skipped a fenced code block (2 line(s))",
        "line 36: empty list item skipped",
    ]
    wrapped = batch.items[1]
    assert wrapped.flat_text == "Lives in Lisbon, works remotely for a company in Berlin (CET, one hour ahead)"
    assert "not a memory" not in " ".join(texts(batch))


def test_markdown_with_bom_and_crlf_keeps_items(tmp_path: Path):
    lf = (FIXTURES / "notes.md").read_bytes()
    path = tmp_path / "notes-windows.md"
    path.write_bytes(b"\xef\xbb\xbf" + lf.replace(b"\n", b"\r\n"))
    batch = parse_file(path)
    assert batch.format == "markdown"
    assert [(i.flat_text, i.source_ref, i.tags) for i in batch.items] == [
        (" ".join(text.split()), ref, tags) for text, ref, tags in NOTES_EXPECTED
    ]
    assert batch.items[1].text == "Lives in Lisbon, works remotely for a\r\n  company in Berlin (CET, one hour ahead)"
    assert not any(i.text.endswith("\r") for i in batch.items)


def test_plain_text_lines():
    batch = parse_file(FIXTURES / "plain.txt")
    assert texts(batch) == [
        "Drinks oat milk.",
        "Birthday is on 12 May.",
        "Dislikes video calls before 10:00 — prefers chat.",
        "東京出身です。",
    ]
    assert [i.source_ref for i in batch.items] == ["line 1", "line 2", "line 4", "line 5"]


def test_forced_format_overrides_detection():
    as_text = parse_file(FIXTURES / "notes.md", "text")
    assert as_text.format == "text"
    assert "- Name: Dana; pronouns she/her" in texts(as_text)  # no marker stripping in plain text
    json_lines = parse_file(FIXTURES / "chatgpt_memories.json", "text")
    assert json_lines.items[0].text == "["
    chat = parse_text("- Memories\n- Likes tea\n", "markdown")
    assert texts(chat) == ["Memories", "Likes tea"]  # header lines are only special for chatgpt


def test_headings_nest_and_reset():
    batch = parse_text("# A\n## B\n- one\n# C\n- two\n### D\n- three\n#\n- four\n", "markdown")
    assert [(i.text, i.tags) for i in batch.items] == [
        ("one", ["A", "B"]),
        ("two", ["C"]),
        ("three", ["C", "D"]),
        ("four", []),
    ]


def test_unclosed_fence_is_reported():
    batch = parse_text("- kept\n```\n- swallowed by the open fence\n", "markdown")
    assert texts(batch) == ["kept"]
    assert "line 2: code fence is never closed" in batch.warnings


# ---------------------------------------------------------------------------------------------------------------
# Verbatim sources and checksums


@pytest.mark.parametrize("name", TEXT_FIXTURES)
def test_text_formats_are_verbatim(name: str, tmp_path: Path):
    variants = {"as committed": FIXTURES / name}
    crlf = tmp_path / f"crlf-{name}"
    raw = (FIXTURES / name).read_bytes()
    crlf.write_bytes(
        b"\xef\xbb\xbf" + raw.removeprefix(b"\xef\xbb\xbf").replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    )
    variants["bom+crlf"] = crlf
    for path in variants.values():
        batch = parse_file(path)
        data = path.read_bytes()
        assert batch.source_text == data.decode("utf-8")
        assert batch.source_sha256 == hashlib.sha256(data).hexdigest()
        for item in batch.items:
            start, end = item.extra["span"]
            assert batch.source_text[start:end] == item.text
            assert item.text in batch.source_text
            assert item.text == item.text.strip()


@pytest.mark.parametrize("name", sorted(ALL_FIXTURES))
def test_checksum_is_stable(name: str):
    first, second = parse_file(FIXTURES / name), parse_file(FIXTURES / name)
    assert first == second
    assert first.source_sha256 == sha_bytes(FIXTURES / name)


def test_checksum_changes_with_content():
    assert parse_text("Likes tea\n").source_sha256 != parse_text("Likes tea\r\n").source_sha256


# ---------------------------------------------------------------------------------------------------------------
# dsh-memory-connect SQLite


def test_dsh_store_rows(store: Path):
    batch = parse_file(store)
    assert batch.format == "dsh-memory-connect"
    assert batch.source_name == "memory.db"
    assert [i.external_id for i in batch.items] == DSH_ORDER  # ordered by created_at; the blank row skipped
    by_id = {i.external_id: i for i in batch.items}
    decision = by_id["mem-1736812800000-p0q9r8"]
    assert decision.source_ref == "memories row id=mem-1736812800000-p0q9r8"
    assert decision.text == "decided to use PostgreSQL for the shop backend"
    assert decision.kind == "decision" and decision.status == "consolidated"
    assert decision.tags == ["database", "ci-cd"]
    assert decision.created_at == utc(2025, 1, 14, 0, 0, 0)
    assert decision.extra == {
        "session_id": "sess-42",
        "source_event_seq": "7",
        "last_accessed_at": 1736812800000,
        "access_count": 0,
        "relevance_score": 0.5,
        "parent_memory_id": None,
        "content_hash": java_hash(decision.text),
    }
    assert by_id["mem-1737000000000-zz11aa"].text == "项目：智能家居控制面板 🏠"
    assert by_id["mem-1737000000000-zz11aa"].status == "decayed"
    archived = by_id["mem-1737100000000-abc123"]
    assert archived.status == "archived" and archived.tags == []
    assert (
        archived.extra["tags_raw"] == "{not json" and archived.extra["parent_memory_id"] == "mem-1736899200000-k3j9x1"
    )
    assert by_id["mem-1736900000000-skill1"].text == "line one\nline two"
    assert batch.warnings == [
        "memories row id=mem-1736900000000-skill1: tags '[\"tool-result\", 42]' is not a JSON list of strings"
        " — kept in extra as tags_raw",
        "memories row id=mem-1737100000000-abc123: tags '{not json' is not a JSON list of strings"
        " — kept in extra as tags_raw",
        "memories row id=mem-1737200000000-emp000: empty content — skipped",
    ]


def test_dsh_source_text_is_deterministic_json(store: Path):
    first, second = parse_file(store), parse_file(store)
    assert first.source_text == second.source_text and first.source_sha256 == second.source_sha256
    dump = json.loads(first.source_text)
    assert dump["application_id"] == 0x4D454D30 and dump["user_version"] == 1
    assert [row["id"] for row in dump["rows"]] == [*DSH_ORDER, "mem-1737200000000-emp000"]  # every row read
    assert dump["rows"][0]["created_at"] == 1736812800000
    copy = make_store(store.parent / "copy.db")
    assert parse_file(copy).source_sha256 == first.source_sha256  # rows, not file bytes


def test_dsh_store_is_opened_read_only(store: Path, monkeypatch: pytest.MonkeyPatch):
    real_connect = sqlite3.connect
    uris: list[str] = []

    def spying_connect(database: str, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = real_connect(database, *args, **kwargs)
        uris.append(database)
        with pytest.raises(sqlite3.OperationalError, match="readonly"):  # enforced by SQLite, even for root
            conn.execute("CREATE TABLE probe (x)")
        return conn

    before = sha_bytes(store)
    monkeypatch.setattr(sqlite3, "connect", spying_connect)
    parse_file(store)
    detect_format(store)
    monkeypatch.undo()
    assert len(uris) == 2 and all(u.startswith("file:///") and u.endswith("?mode=ro") for u in uris)
    assert sha_bytes(store) == before
    assert not (store.parent / "memory.db-journal").exists()


def test_dsh_store_falls_back_to_immutable_open(store: Path, monkeypatch: pytest.MonkeyPatch):
    real = parsers._connect_ro

    def failing_unless_immutable(file: Path, immutable: bool) -> sqlite3.Connection:
        if not immutable:
            raise sqlite3.OperationalError("unable to open database file")
        return real(file, immutable)

    monkeypatch.setattr(parsers, "_connect_ro", failing_unless_immutable)
    batch = parse_file(store)
    assert [i.external_id for i in batch.items] == DSH_ORDER
    assert batch.warnings[0].startswith("a normal read-only open failed (unable to open database file)")


def test_dsh_store_path_with_uri_characters(tmp_path: Path):
    folder = tmp_path / "a dir?x=1#frag"
    folder.mkdir()
    assert parse_file(make_store(folder / "memory %20.db")).items[0].external_id == DSH_ORDER[0]


def test_dsh_store_in_wal_mode_with_live_writer(tmp_path: Path):
    path = tmp_path / "memory.db"
    writer = sqlite3.connect(path)
    try:
        writer.execute("PRAGMA journal_mode = wal")
        writer.execute("PRAGMA wal_autocheckpoint = 0")
        writer.executescript(DSH_SCHEMA)
        insert_rows(writer, DSH_ROWS[:2])
        writer.commit()
        assert (tmp_path / "memory.db-wal").stat().st_size > 0  # the rows live only in the WAL so far
        batch = parse_file(path)
        assert [i.external_id for i in batch.items] == ["mem-1736899200000-k3j9x1", "mem-1737000000000-zz11aa"]
    finally:
        writer.close()


def test_dsh_store_with_foreign_ids_and_missing_columns_warns(tmp_path: Path):
    path = tmp_path / "other.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA application_id = 42")
    conn.execute("CREATE TABLE memories (id TEXT PRIMARY KEY, content TEXT, created_at)")
    conn.executemany(
        "INSERT INTO memories VALUES (?, ?, ?)",
        [("b", "ISO dated", "2025-01-02T03:04:05Z"), ("a", "ms dated", 1735689600000), ("c", "bad date", "soon")],
    )
    conn.commit()
    conn.close()
    batch = parse_file(path)
    assert texts(batch) == ["ms dated", "ISO dated", "bad date"]  # INTEGER sorts before TEXT in SQLite
    assert [i.created_at for i in batch.items] == [utc(2025, 1, 1), utc(2025, 1, 2, 3, 4, 5), None]
    assert batch.items[2].extra["created_at"] == "soon"
    assert batch.items[0].status is None and batch.items[0].kind is None
    assert batch.warnings[0].startswith("application_id is 0x0000002A, not 0x4D454D30")
    assert batch.warnings[1] == "schema user_version is 0, not 1; read anyway"
    assert batch.warnings[2].startswith("the 'memories' table has no column(s) type, session_id,")


def test_dsh_invalid_utf8_content_is_reported_not_fatal(tmp_path: Path):
    path = tmp_path / "memory.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE memories (id TEXT PRIMARY KEY, content TEXT, created_at INTEGER)")
    conn.execute("INSERT INTO memories VALUES ('good', 'fine', 1)")
    conn.execute("INSERT INTO memories VALUES ('bad', CAST(X'80FF' AS TEXT), 2)")
    conn.commit()
    conn.close()
    batch = parse_file(path)
    assert texts(batch) == ["fine"]
    assert "memories row id=bad: content is a BLOB that is not UTF-8 — skipped" in batch.warnings
    assert json.loads(batch.source_text)["rows"][1]["content"] == "80ff"


# ---------------------------------------------------------------------------------------------------------------
# Errors: always ImportFormatError naming the file


def error_for(path: Path | str, fmt: str | None = None) -> str:
    with pytest.raises(ImportFormatError) as info:
        parse_file(path, fmt)
    message = str(info.value)
    assert message.startswith(f"{path}: ")
    assert isinstance(info.value, ValueError)
    return message


def write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    path = tmp_path / name
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    ("name", "data", "fmt", "expected"),
    [
        ("broken.json", '{"results": [{"memory": "x"}', None, "is not valid JSON: Expecting ',' delimiter at line 1"),
        ("broken.txt", '[{"memory": "x",]', None, "is not valid JSON"),
        ("plain.txt", "just words\n", "mem0", "is not JSON (it does not start with '[' or '{')"),
        ("shape.json", '{"data": {"items": []}}', None, "JSON has the wrong shape: an object with keys 'data'"),
        ("numbers.json", "[1, 2, 3]", None, "JSON has the wrong shape: its entries have no 'memory'"),
        ("shape2.json", '{"foo": 1}', "chatgpt", "JSON has the wrong shape"),
        ("empty-list.json", '{"results": []}', None, "no memory items found (the JSON memory list is empty)"),
        (
            "all-empty.json",
            '[{"memory": ""}, {"memory": "  "}]',
            None,
            "no memory items found (mem0 format) (2 warning",
        ),
        ("empty.md", "", None, "is empty: no memory items to import"),
        ("blank.txt", "\ufeff \r\n\t\n", None, "is empty"),
        ("headings.md", "# Only\n## Headings\n---\n", None, "no memory items found (markdown format)"),
        ("header.txt", "Saved memories\n\n", None, "no memory items found (chatgpt format)"),
        ("code.md", "# Code\n```\nx = 1\n```\n", None, "(1 warning(s): lines 2-4: skipped a fenced code block"),
        ("latin1.txt", "Café crème\n".encode("latin-1"), None, "is not valid UTF-8 (byte 0xe9 at offset 3)"),
        ("utf16.txt", "Likes tea\n".encode("utf-16"), None, "is UTF-16/UTF-32 encoded; re-save it as UTF-8"),
        ("binary.txt", b"abc\x00def\n", None, "contains NUL bytes"),
        ("notes.md", "- fine\n", "dsh-memory-connect", "is not a SQLite database"),
        ("notes.md", "- fine\n", "yaml", "unknown import format 'yaml'; expected one of mem0, chatgpt, markdown"),
        ("junk.db", b"SQLite format 3\x00" + b"\x01" * 200, None, "unreadable SQLite database: "),
    ],
)
def test_bad_input_errors(tmp_path: Path, name: str, data: bytes | str, fmt: str | None, expected: str):
    assert expected in error_for(write(tmp_path, name, data), fmt)


def test_sqlite_error_cases(tmp_path: Path, store: Path):
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE notes (id TEXT, content TEXT)")
    conn.commit()
    conn.close()
    assert "SQLite database has no 'memories' table; not a dsh-memory-connect store" in error_for(other)
    with pytest.raises(ImportFormatError, match="no 'memories' table"):
        detect_format(other)

    lacking = tmp_path / "lacking.db"
    conn = sqlite3.connect(lacking)
    conn.execute("CREATE TABLE memories (id TEXT PRIMARY KEY, body TEXT)")
    conn.commit()
    conn.close()
    assert "the 'memories' table lacks column(s) content, created_at" in error_for(lacking)

    assert "is a SQLite database, not a markdown export" in error_for(store, "markdown")

    empty = make_store(tmp_path / "empty.db", rows=[])
    assert "no memory items found (dsh-memory-connect format)" in error_for(empty)


def test_too_large_is_refused_before_reading(tmp_path: Path):
    path = tmp_path / "huge.txt"
    with path.open("wb") as handle:
        handle.truncate(MAX_IMPORT_BYTES + 1)  # sparse: nothing is written or read
    assert "file is too large (20.0 MiB; the limit is 20.0 MiB)" in error_for(path)
    with pytest.raises(ImportFormatError, match="too large"):
        detect_format(path)
    small = write(tmp_path, "small.txt", "Likes tea\n" * 20)
    with pytest.raises(ImportFormatError, match=r"too large \(0\.0 MiB; the limit is 0\.0 MiB\)"):
        parse_file(small, max_bytes=100)
    with pytest.raises(ImportFormatError, match="text is too large"):
        parse_text("x" * (MAX_IMPORT_BYTES + 1))


def test_missing_and_non_file_paths(tmp_path: Path):
    assert error_for(tmp_path / "nope.json").endswith(": file not found")
    assert error_for(tmp_path).endswith(": is a directory, not a file")


def test_parse_text_errors():
    with pytest.raises(ImportFormatError, match=r"^paste: dsh-memory-connect is a SQLite store"):
        parse_text("x", "dsh-memory-connect", "paste")
    with pytest.raises(ImportFormatError, match="unpaired surrogate"):
        parse_text("bad \ud800 text")
    with pytest.raises(ImportFormatError, match="contains NUL characters"):
        parse_text("a\x00b")
    batch = parse_text('["ok", "\\ud800 lone surrogate escape"]')
    assert texts(batch) == ["ok"]
    assert batch.warnings == ["$[1]: contains an unpaired surrogate escape (not valid Unicode) — skipped"]


def test_per_entry_problems_skip_only_that_entry():
    deep: Any = {"leaf": 1}
    for _ in range(150):
        deep = {"k": deep}
    batch = parse_text(json.dumps([{"memory": "kept"}, {"memory": "too deep", "metadata": deep}]))
    assert texts(batch) == ["kept"]
    assert batch.warnings == [
        "$[1]: cannot be imported (Value error, extra must be plain JSON data: it is nested more than 100 levels"
        " deep) — skipped"
    ]


def test_warnings_are_capped():
    batch = parse_text("-\n" * 300 + "- the only memory\n", "markdown")
    assert texts(batch) == ["the only memory"]
    assert len(batch.warnings) == 201
    assert batch.warnings[0] == "line 1: empty list item skipped"
    assert batch.warnings[-1] == "… and 100 more warning(s)"


def test_detect_refuses_what_parse_refuses(tmp_path: Path):
    with pytest.raises(ImportFormatError, match="is empty"):
        detect_format(write(tmp_path, "empty.txt", "\n\n"))
    with pytest.raises(ImportFormatError, match="is not valid UTF-8"):
        detect_format(write(tmp_path, "latin1.md", "é".encode("latin-1")))
    with pytest.raises(ImportFormatError, match="is not valid JSON"):
        detect_format(write(tmp_path, "x.json", "{nope"))


# ---------------------------------------------------------------------------------------------------------------
# Models


def test_import_item_is_strict():
    item = ImportItem(text="Likes tea", source_ref="line 1", created_at=datetime(2025, 1, 1, 12), tags=[" a", "a", ""])
    assert item.created_at == utc(2025, 1, 1, 12)
    assert item.tags == ["a"]
    with pytest.raises(ValidationError):
        ImportItem(text="  \n", source_ref="line 1")
    with pytest.raises(ValidationError):
        ImportItem(text="x", source_ref="line 1", extra={"bad": object()})
    with pytest.raises(ValidationError):
        ImportItem(text="x", source_ref="line 1", unknown=1)  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        item.text = "changed"  # type: ignore[misc]


def test_import_batch_checks_its_checksum():
    item = ImportItem(text="x", source_ref="line 1")
    with pytest.raises(ValidationError, match="source_sha256 is not the SHA-256 of source_text"):
        ImportBatch(format="text", source_name="a", source_text="x", source_sha256="0" * 64, items=[item])
    with pytest.raises(ValidationError):
        ImportBatch(
            format="text", source_name="a", source_text="", source_sha256=hashlib.sha256(b"").hexdigest(), items=[]
        )


# ---------------------------------------------------------------------------------------------------------------
# Properties

LEADING_BULLETS = "-*+•◦▪‣●·∙–—"
single_line_texts = st.text(
    st.characters(exclude_categories=("Cs",), exclude_characters="\r\n\x00"), min_size=1, max_size=40
).filter(lambda t: t == t.strip() and t != "" and t[0] not in LEADING_BULLETS)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(single_line_texts, min_size=1, max_size=12),
    st.sampled_from(["-", "*", "+"]),
    st.sampled_from(["\n", "\r\n", "\r"]),
    st.booleans(),
)
def test_markdown_bullet_list_round_trips(items: list[str], marker: str, newline: str, trailing: bool):
    rendered = newline.join(f"{marker} {text}" for text in items) + (newline if trailing else "")
    batch = parse_text(rendered, "markdown")
    assert texts(batch) == items
    assert batch.warnings == []
    assert all(item.tags == [] for item in batch.items)


@settings(max_examples=200, deadline=None)
@given(st.lists(single_line_texts, min_size=1, max_size=12), st.sampled_from(["\n", "\r\n"]))
def test_plain_text_lines_round_trip(items: list[str], newline: str):
    batch = parse_text(newline.join(items), "text")
    assert texts(batch) == items
    assert [i.source_ref for i in batch.items] == [f"line {n}" for n in range(1, len(items) + 1)]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300), st.sampled_from([None, "markdown", "chatgpt", "text", "mem0"]))
def test_any_text_parses_or_fails_cleanly(text: str, fmt: str | None):
    try:
        batch = parse_text(text, fmt)
    except ImportFormatError:
        return
    assert batch.items and batch.source_text == text


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
memoryish = st.dictionaries(
    st.sampled_from(["id", "memory", "content", "text", "created_at", "categories", "metadata", "state", "enabled"]),
    json_values,
    max_size=6,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        st.lists(memoryish | json_values, max_size=5),
        st.fixed_dictionaries({"results": st.lists(memoryish, max_size=5)}),
        json_values,
    ),
    st.sampled_from([None, "mem0", "chatgpt"]),
)
def test_any_json_parses_or_fails_cleanly(doc: Any, fmt: str | None):
    try:
        batch = parse_text(json.dumps(doc), fmt)
    except ImportFormatError:
        return
    for item in batch.items:
        json.dumps(item.extra, allow_nan=False)
        assert item.created_at is None or item.created_at.tzinfo is UTC


# ---------------------------------------------------------------------------------------------------------------
# Struck-out Markdown (imports/strike.py): whole items are marked struck_out, partly struck ones keep the rest

STRUCK_CASES = [
    # (markdown line, struck_out, current_text)
    ("~~We use Jest~~ (old)", True, "(old)"),
    ("- ~~item~~", True, ""),
    ("* ~~We use Jest~~ — deprecated, no longer used", True, "— deprecated, no longer used"),
    ("- [x] ~~migrate the CI~~ [done]", True, "[x] [done]"),
    ("- ~~我们用 npm~~（已废弃）", True, "（已废弃）"),
    ("We use ~~npm~~ pnpm", False, "We use pnpm"),
    ("~~We use Jest~~ We use Vitest now", False, "We use Vitest now"),
    ("- Deploy on ~~Fridays~~ Mondays only", False, "Deploy on Mondays only"),
    ("- Use `a ~~b~~ c` in the shell", False, "Use `a ~~b~~ c` in the shell"),  # a code span is not a strike
    ("- about ~5 minutes, ~/.dsh is the home", False, "about ~5 minutes, ~/.dsh is the home"),  # single tildes
    ("- ~~ spaced ~~ is no strike", False, "~~ spaced ~~ is no strike"),
]


@pytest.mark.parametrize(("line", "struck_out", "current"), STRUCK_CASES)
def test_struck_out_markdown_items(line: str, struck_out: bool, current: str):
    [item] = parse_text(f"# Notes\n{line}\n", "markdown").items
    assert item.struck_out is struck_out
    assert item.current_text == current
    assert parse_text(f"# Notes\n{line}\n", "markdown").source_text.count(item.text) == 1  # text stays verbatim
    if not struck_out and "~~" in item.text and "`" not in item.text and "~~ " not in item.text:
        assert item.struck_spans and "~~" not in item.current_text


def test_struck_lines_are_detected_as_markdown_and_spans_point_into_the_text():
    text = "~~We use Jest~~ (old)\nWe use Vitest\n"
    assert detect_text_format(text) == "markdown"
    batch = parse_text(text)
    assert [(i.text, i.struck_out, i.source_ref) for i in batch.items] == [
        ("~~We use Jest~~ (old)", True, "line 1"),
        ("We use Vitest", False, "line 2"),
    ]
    first = batch.items[0]
    assert [first.text[a:b] for a, b in first.struck_spans] == ["~~We use Jest~~"]
    wrapped = parse_text("- Build with ~~webpack and\n  babel~~ esbuild\n", "markdown").items[0]
    assert wrapped.current_text == "Build with esbuild" and not wrapped.struck_out
    assert parse_text("~~a~~\n", "text").items[0].struck_spans == []  # plain text interprets nothing


def test_struck_spans_must_lie_inside_the_text():
    with pytest.raises(ValidationError):
        ImportItem(text="abc", source_ref="line 1", struck_spans=[(0, 9)])
    with pytest.raises(ValidationError):
        ImportItem(text="abc", source_ref="line 1", struck_out=True)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.sampled_from(list("ab ~`()[]-中\t")), min_size=1, max_size=40))
def test_struck_detection_never_crashes_and_current_text_is_a_cut_of_the_item(body: str):
    try:
        batch = parse_text(f"- x{body}\n", "markdown")
    except ImportFormatError:
        return
    for item in batch.items:
        for start, end in item.struck_spans:
            assert item.text[start : start + 2] == "~~" and item.text[end - 2 : end] == "~~"
        if not item.struck_out:
            assert item.current_text.strip()
