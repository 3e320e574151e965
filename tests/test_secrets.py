"""No secret is ever stored, shown or sent: redaction rules, the sidecar end to end, `stratagate redact --db`."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import model_env, turn
from stratagate.safety import secrets as S
from stratagate.safety.secrets import KINDS, PLACEHOLDER_RE, redact_text, redact_value
from stratagate.storage.db import Database
from support.sidecar import REPO, SidecarClient

CORPUS = json.loads((Path(__file__).parent / "fixtures" / "secrets_corpus.json").read_text(encoding="utf-8"))
ENTRIES: list[dict[str, Any]] = CORPUS["secrets"]
BENIGN: list[str] = CORPUS["benign"]


def _cases() -> list[Any]:
    cases = []
    for i, e in enumerate(ENTRIES):
        cases.append(pytest.param(e, "prose", id=f"{i}-{e['kind']}-prose"))
        if e.get("json") is not None:
            cases.append(pytest.param(e, "json", id=f"{i}-{e['kind']}-json"))
        if e.get("bare"):
            cases.append(pytest.param(e, "bare", id=f"{i}-{e['kind']}-bare"))
    return cases


def test_corpus_is_broad() -> None:
    assert len({e["kind"] for e in ENTRIES}) >= 25
    assert {e["kind"] for e in ENTRIES} <= set(KINDS)


@pytest.mark.parametrize(("entry", "where"), _cases())
def test_each_secret_is_replaced_by_a_placeholder_of_its_kind(entry: dict[str, Any], where: str) -> None:
    secret = entry["secret"]
    if where == "prose":
        out, kind = redact_text(entry["prose"]), entry["kind"]
    elif where == "bare":
        out, kind = redact_text(secret), entry["kind"]
    else:
        out, kind = json.dumps(redact_value(entry["json"]), ensure_ascii=False), entry["json_kind"]
        assert secret not in json.dumps(redact_value(json.loads(json.dumps(entry["json"]))))
    assert secret not in out
    assert f"[secret:{kind}#" in out


@pytest.mark.parametrize("text", BENIGN)
def test_benign_text_is_unchanged(text: str) -> None:
    assert redact_text(text) == text
    assert redact_value({"note": text}) == {"note": text}


def test_same_secret_reads_the_same_and_depends_on_the_key() -> None:
    S.configure_key(S.DEFAULT_KEY)  # an in-process database open elsewhere may have set its own key
    key = "ghp_" + "A1b2C3d4" * 4 + "zZ9y"
    first = redact_text(f"token {key} here")
    second = redact_text(f"and again: {key}.")
    ph = PLACEHOLDER_RE.search(first).group(0)  # type: ignore[union-attr]
    assert ph in second and key not in first
    try:
        S.configure_key(b"\x01" * 32)
        assert ph not in redact_text(key)
    finally:
        S.configure_key(S.DEFAULT_KEY)
    assert ph == redact_text(key)


def test_redact_value_uses_key_context() -> None:
    tree = {
        "max_tokens": 4096,
        "Client-Secret": "plainword",
        "PIN": 4821,
        "password": "",
        "api_key": None,
        "session_token": True,
        "tokens": [1, 2],
        "nested": [{"db_password": "hunter2", "host": "db.internal"}],
        "AKIAIOSFODNN7EXAMPLE": "key used as a key",
    }
    out = redact_value(tree)
    assert out["max_tokens"] == 4096 and out["tokens"] == [1, 2]
    assert out["Client-Secret"].startswith("[secret:client-secret#")
    assert out["PIN"].startswith("[secret:pin#")
    assert out["password"] == "" and out["api_key"] is None and out["session_token"] is True
    assert out["nested"][0]["db_password"].startswith("[secret:password#")
    assert out["nested"][0]["host"] == "db.internal"
    assert "AKIAIOSFODNN7EXAMPLE" not in json.dumps(out)
    assert redact_value(out) == out


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=300))
def test_redact_text_of_any_text_succeeds_and_is_idempotent(text: str) -> None:
    once = redact_text(text)
    assert redact_text(once) == once


@settings(max_examples=200, deadline=None)
@given(
    prefix=st.text(max_size=40),
    entry=st.sampled_from(ENTRIES),
    suffix=st.text(alphabet=st.characters(blacklist_categories=("L", "N")), max_size=20),
)
def test_secrets_inside_arbitrary_text(prefix: str, entry: dict[str, Any], suffix: str) -> None:
    text = prefix + " " + entry["prose"] + suffix
    once = redact_text(text)
    assert entry["secret"] not in once
    assert redact_text(once) == once


_SHORT_SECRET = st.sampled_from([e["prose"] for e in ENTRIES] + [e["secret"] for e in ENTRIES])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=40) | _SHORT_SECRET | st.sampled_from(sorted(S._ALL_TRIGGERS)), max_size=6))
def test_the_trigger_prefilter_and_the_clean_cache_change_no_answer(parts: list[str]) -> None:
    """The shortcut for texts without any trigger word and the memo of short clean texts are only shortcuts: the
    spans found are those of the full rule pass, first call and repeated."""
    text = " ".join(parts)
    fast = S._find(text)
    everything = S.re.compile("")  # matches every text: the prefilter never answers
    original = S._ANY_TRIGGER
    S._ANY_TRIGGER = everything
    try:
        assert S._find(text) == fast
        full = S._redact_once(text)
    finally:
        S._ANY_TRIGGER = original
    assert redact_text(text) == redact_text(text)
    if full == text:
        assert redact_text(text) == text


@settings(max_examples=150, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=30),
                    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=12), kids, max_size=4),
                    max_leaves=12))
def test_redact_value_never_raises_and_is_idempotent(value: Any) -> None:
    once = redact_value(value)
    assert redact_value(once) == once


# ------------------------------------------------------------------------------------- through the sidecar

def _long_secrets() -> list[str]:
    """Secrets long and specific enough that finding their bytes in a database file means they were stored."""
    return [e["secret"] for e in ENTRIES if len(e["secret"]) >= 7 and not e["secret"].isdigit()]


def _markdown_export(path: Path) -> Path:
    lines = ["# Memories", ""]
    lines += [f"- {e['prose']}".replace("\n", " ") for e in ENTRIES[:20]]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


async def _feed(client: SidecarClient, tmp_path: Path) -> dict[str, Any]:
    """Capture turns, remember, import and read back: every text holds secrets from the corpus."""
    shown: dict[str, Any] = {}
    for i, e in enumerate(ENTRIES, start=1):
        tools = [{
            "name": "bash",
            # A bare value only for kinds recognisable bare (a 40-hex key id alone is a git SHA to anyone).
            "arguments": {"command": f"echo {e['secret'] if e['bare'] else 'hi'}", "env": {"API_TOKEN": e["secret"]}},
            "result": {"stdout": e["prose"], "json": e.get("json")},
            "call_id": f"c{i}",
        }]
        await client.call("turn.capture", turn(i, user=e["prose"], assistant=f"Noted: {e['prose']}", tools=tools))
    for e in ENTRIES[:12]:
        await client.tool("proj", "s1", "memory_remember", {"text": e["prose"], "tags": ["creds"]})
    report = await client.call("import.run", {"namespace": "proj", "path": str(_markdown_export(tmp_path / "m.md"))})
    shown["import"] = await client.call("import.get", {"namespace": "proj", "id": report["import_id"]})
    shown["search"] = [
        await client.tool("proj", "s1", "memory_search_raw", {"query": q})
        for q in ("password", "token key", "secret", "private key", "staging db")
    ]
    blocks = (await client.tool("proj", "s1", "memory_get_blocks"))["blocks"]
    shown["blocks"] = [
        await client.tool("proj", "s1", "memory_expand_block", {"id": b["id"], "level": level})
        for b in blocks[:4] for level in (5, 3)
    ]
    return shown


def _db_bytes(db: Path) -> bytes:
    return b"".join(Path(str(db) + s).read_bytes() for s in ("", "-wal", "-shm") if Path(str(db) + s).exists())


async def test_no_secret_is_stored_or_shown_through_the_sidecar(tmp_path: Path, model_server) -> None:
    db = tmp_path / "memory.db"
    client = await SidecarClient.start(db, env=model_env(model_server), args=["--block-turns", "3"])
    try:
        shown = await _feed(client, tmp_path)
    finally:
        await client.close()
    text = json.dumps(shown, ensure_ascii=False)
    raw = _db_bytes(db)
    assert "[secret:" in text
    for secret in _long_secrets():
        assert secret not in text, text[max(0, text.find(secret) - 300):text.find(secret) + 60]
        assert secret.encode() not in raw, f"{secret[:12]}… is in the database files"
    assert b"[secret:" in raw


async def test_debug_logs_carry_no_secret(tmp_path: Path, model_server) -> None:
    client = await SidecarClient.start(
        tmp_path / "memory.db", env=model_env(model_server, STRATAGATE_LOG_LEVEL="DEBUG"), args=["--block-turns", "3"]
    )
    try:
        await _feed(client, tmp_path)
        # An error path too: a bad import path quotes what it was given.
        with pytest.raises(Exception):  # noqa: B017 - any RPC error
            await client.call("import.run", {"namespace": "proj", "path": "/nonexistent/" + ENTRIES[0]["secret"]})
    finally:
        await client.close()
    stderr = "".join(client.stderr_lines)
    assert " DEBUG " in stderr or " INFO " in stderr
    for e in ENTRIES:
        assert e["secret"] not in stderr


# ------------------------------------------------------------------------------------- stratagate redact --db

def _plain_db(path: Path) -> None:
    """A migrated database with secrets written in clear, bypassing capture (as an older version stored them)."""

    async def migrate() -> None:
        db = Database(path)
        await db.open()
        await db.close()

    asyncio.run(migrate())
    conn = sqlite3.connect(path)
    e0, e1, e2 = ENTRIES[0], ENTRIES[4], ENTRIES[20]
    with conn:
        conn.execute("INSERT INTO namespaces(name, created_at) VALUES ('proj', '2026-05-01T00:00:00Z')")
        conn.execute("INSERT INTO sessions(namespace_id, key, created_at) VALUES (1, 's1', '2026-05-01T00:00:00Z')")
        conn.execute(
            "INSERT INTO turns(namespace_id, session_id, seq, receipt, captured_at) VALUES (1, 1, 1, 'r1', 'x')"
        )
        conn.execute(
            "INSERT INTO messages(namespace_id, session_id, turn_id, position, role, content, created_at)"
            " VALUES (1, 1, 1, 0, 'user', ?, '2026-05-01T00:00:00Z')", (e0["prose"],)
        )
        conn.execute(
            "INSERT INTO messages(namespace_id, session_id, turn_id, position, role, content, tool_name,"
            " tool_arguments, tool_result, created_at) VALUES (1, 1, 1, 1, 'tool', '', 'bash', ?, ?, 'x')",
            (json.dumps({"password": e1["secret"]}), json.dumps(e2["json"])),
        )
        conn.execute("INSERT INTO message_fts(rowid, terms) VALUES (1, ?)", (e0["prose"],))
        conn.execute("INSERT INTO message_fts(rowid, terms) VALUES (2, ?)", (e1["secret"],))
        conn.execute(
            "INSERT INTO audit_log(namespace_id, at, actor, action, before, after)"
            " VALUES (1, 'x', 'user', 't', NULL, ?)",
            (json.dumps({"text": e0["prose"]}),),
        )
        conn.execute(
            "INSERT INTO jobs(namespace_id, kind, subject_id, status, attempts, max_attempts, next_run_at, last_error,"
            " created_at, updated_at) VALUES (1, 'block_summary', 1, 'failed', 1, 5, 0, ?, 'x', 'x')",
            (f"model said {e2['prose']}",),
        )
    conn.close()


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATAGATE_")}
    env["PYTHONPATH"] = str(REPO / "sidecar")
    return subprocess.run([sys.executable, "-m", "stratagate", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_redact_cli_scrubs_backs_up_audits_and_is_idempotent(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    _plain_db(db)
    secrets = [ENTRIES[0]["secret"], ENTRIES[4]["secret"], ENTRIES[20]["secret"]]
    assert all(s.encode() in _db_bytes(db) for s in secrets)

    first = _cli("redact", "--db", str(db), "--json")
    assert first.returncode == 0, first.stderr
    summary = json.loads(first.stdout)
    backup = Path(summary["backup"])
    assert backup.exists() and stat.S_IMODE(backup.stat().st_mode) == 0o600
    assert backup.name.startswith("old.db.pre-redact-") and backup.suffix == ".bak"
    assert summary["rows_changed"]["messages"] == 2 and summary["rows_changed"]["jobs"] == 1
    assert summary["rows_changed"]["audit_log"] == 1

    conn = sqlite3.connect(db)
    try:
        dump = "\n".join(conn.iterdump())
        assert not any(s in dump for s in secrets)
        terms = [r[0] for r in conn.execute("SELECT terms FROM message_fts ORDER BY rowid")]
        assert all(ENTRIES[4]["secret"].lower() not in t.lower() for t in terms) and len(terms) == 2
        rows = conn.execute(
            "SELECT actor, after FROM audit_log WHERE action = 'secrets.redacted'"
        ).fetchall()
        assert len(rows) == 1 and rows[0][0] == "user"
        after = json.loads(rows[0][1])
        assert "messages" in after["tables"] and not any(s in rows[0][1] for s in secrets)
        assert conn.execute("SELECT COUNT(*) FROM privileged_writes").fetchone()[0] == 0
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute("UPDATE messages SET content = 'x' WHERE id = 1")
    finally:
        conn.close()
    # The backup keeps the original (that is its point); it is private to the user.
    assert ENTRIES[0]["secret"].encode() in backup.read_bytes()
    # The scrubbed database holds no secret in any byte (free pages, old FTS segments and the WAL included).
    assert not [s for s in secrets if s.encode() in _db_bytes(db)]

    before = "\n".join(sqlite3.connect(db).iterdump())
    second = _cli("redact", "--db", str(db), "--json")
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["rows_changed"] == {}
    assert "\n".join(sqlite3.connect(db).iterdump()) == before


@pytest.mark.parametrize("kind", ["missing", "directory", "not-sqlite"])
def test_redact_cli_refuses_what_is_not_a_database(tmp_path: Path, kind: str) -> None:
    path = {"missing": tmp_path / "nope.db", "directory": tmp_path, "not-sqlite": tmp_path / "notes.txt"}[kind]
    if kind == "not-sqlite":
        path.write_text("hello, not a database\n")
    result = _cli("redact", "--db", str(path))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


# Secrets written as code literals stay caught while the code around them is left alone.
CODE_LITERALS = [
    ('password = "hunter2"', "hunter2", "password"),
    ('self.password = "S3cr3t!x"', "S3cr3t!x", "password"),
    ("PASSWORD=hunter2", "hunter2", "password"),
    ("password: sekrit", "sekrit", "password"),
    ('const cfg = {password: "hunter2"};', "hunter2", "password"),
    ('conn = connect(host, password="Xy7$kq!9")', "Xy7$kq!9", "password"),
    ('db.connect(user="app", passwd="Tr0ub4dor&3")', "Tr0ub4dor&3", "password"),
    ("token: tlxm87vSRwUCZvxEslBF1WruUxF5p8IJ", "tlxm87vSRwUCZvxEslBF1WruUxF5p8IJ", "token"),
    ('auth_token = "a8f7Kq2mZx9LpQ4r"', "a8f7Kq2mZx9LpQ4r", "token"),
    ("client_secret=Zx9LpQ4rA8f7Kq2m", "Zx9LpQ4rA8f7Kq2m", "client-secret"),
    ("PIN=4821", "4821", "pin"),
]


@pytest.mark.parametrize(("text", "secret", "kind"), CODE_LITERALS)
def test_secret_literals_in_code_are_replaced(text: str, secret: str, kind: str) -> None:
    out = redact_text(text)
    assert secret not in out and f"[secret:{kind}#" in out


# What a secret-ish name holds in code: a call, subscript, attribute, keyword or another name, never a secret.
CODE_REFERENCES = [
    "for token, token_id in enumerate(vocab):",
    "token = current_place.set(place)",
    "password = getpass.getpass('Password: ')",
    "self.user, self.password = user, password",
    'authorization = self.headers.get("authorization")',
    "api_key = os.environ['OPENAI_API_KEY']",
    "secret = self.token",
    "passwd = passwd or ''",
    "conn = Client(address, authkey=self._authkey)",
    "if token == 'lambda':",
    "const token = await getToken(req.headers.authorization ?? '');",
    "const apiKey = process.env.OPENAI_API_KEY;",
    "password_mgr = HTTPPasswordMgr()",
    "exports.Credentials$ = Credentials$;",
    "const token = `/${desc.name} `;",
    '"hlToken": "uV2eYG_hlToken",',
    "token = line[start:pos]",
    "LPINT = PINT = ctypes.POINTER(INT)",
    "r_name_mapping = _compat_pickle.REVERSE_NAME_MAPPING",
    "SERVER_AUTH = '1.3.6.1.5.5.7.3.1'",
    "privateKey: tString,",
    "the token type (see token.py)",
]


@pytest.mark.parametrize("text", CODE_REFERENCES)
def test_code_that_names_secrets_is_left_alone(text: str) -> None:
    assert redact_text(text) == text


# Credentials stated in prose without "is" or ":" between the key word and the value.
PROSE_CREDENTIALS = [
    ("log in as alice with password hunter2-Blue!", "hunter2-Blue", "password"),
    ("user admin / pass Xy7$kq!", "Xy7$kq", "password"),
    ("the Wi-Fi key is 8f3kQ9zL", "8f3kQ9zL", "password"),
    ("connect using password Tr0ub4dor&3 please", "Tr0ub4dor&3", "password"),
    ("the guest wifi password is Sunny-Day-42", "Sunny-Day-42", "password"),
    ("ssh bob@build-01, password Gx8#pLm2", "Gx8#pLm2", "password"),
    ("we changed the password Qz9!tr7Wx yesterday", "Qz9!tr7Wx", "password"),
    ('sign in with password "correct horse"', "correct horse", "password"),
]


@pytest.mark.parametrize(("text", "secret", "kind"), PROSE_CREDENTIALS)
def test_credentials_in_prose_are_replaced(text: str, secret: str, kind: str) -> None:
    out = redact_text(text)
    assert secret not in out and f"[secret:{kind}#" in out
    assert redact_text(out) == out


@pytest.mark.parametrize("text", [
    "tests pass 3/4", "please reset your password with password reset link", "with password hashing enabled",
    "and password /etc/secret.txt", "hash_password(password, salt)", "log in with password authentication",
])
def test_prose_about_passwords_is_left_alone(text: str) -> None:
    assert redact_text(text) == text


@settings(max_examples=300, deadline=None)
@given(
    prefix=st.text(alphabet="!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~ \t\n", max_size=4),
    entry=st.sampled_from(ENTRIES),
    suffix=st.text(alphabet="!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~ \t", max_size=8),
)
def test_code_punctuation_around_a_secret_does_not_make_it_code(
    prefix: str, entry: dict[str, Any], suffix: str
) -> None:
    # The rules that keep code intact (calls, subscripts, minified JS, chained assignments) must not read a secret
    # followed by brackets, operators or quotes as code.
    assert entry["secret"] not in redact_text(prefix + " " + entry["prose"] + suffix)
