"""tests/support/postgres.py and conftest's postgres_server / team_dsn: a real PostgreSQL server for team memory."""

from __future__ import annotations

import asyncpg
import pytest

from support.postgres import PostgresServer


async def test_a_query_runs_on_the_team_database(team_dsn: str) -> None:
    conn = await asyncpg.connect(team_dsn, timeout=10)
    try:
        assert await conn.fetchval("SELECT current_database()") == team_dsn.rsplit("/", 1)[1]
        assert await conn.fetchval("SELECT $1::int + 1", 41) == 42
        assert await conn.fetchval("SELECT current_user") == "stratagate"
    finally:
        await conn.close()


async def test_team_databases_are_distinct(team_dsn: str, postgres_server: PostgresServer) -> None:
    with postgres_server.database() as other_dsn:
        assert other_dsn != team_dsn
        first = await asyncpg.connect(team_dsn, timeout=10)
        second = await asyncpg.connect(other_dsn, timeout=10)
        try:
            await first.execute("CREATE TABLE notes (body text)")
            await first.execute("INSERT INTO notes VALUES ('only in the first')")
            assert await first.fetchval("SELECT count(*) FROM notes") == 1
            assert await second.fetchval("SELECT to_regclass('notes')") is None
        finally:
            await first.close()
            await second.close()
    other_name = other_dsn.rsplit("/", 1)[1]
    assert postgres_server.psql(f"SELECT count(*) FROM pg_database WHERE datname = '{other_name}'").strip() == "0"


async def test_restart_keeps_data_and_refuses_connections_while_stopped(
    team_dsn: str, postgres_server: PostgresServer
) -> None:
    conn = await asyncpg.connect(team_dsn, timeout=10)
    try:
        await conn.execute("CREATE TABLE facts (id int PRIMARY KEY, body text)")
        await conn.executemany("INSERT INTO facts VALUES ($1, $2)", [(1, "one"), (2, "two")])
    finally:
        await conn.close()
    port = postgres_server.port

    postgres_server.stop()  # returns once the server process exited
    assert not postgres_server.running
    with pytest.raises(OSError):  # ConnectionRefusedError: nothing listens on the port any more
        await asyncpg.connect(team_dsn, timeout=5)

    postgres_server.start()
    assert postgres_server.port == port and postgres_server.dsn("x").endswith(f":{port}/x")
    conn = await asyncpg.connect(team_dsn, timeout=10)
    try:
        rows = await conn.fetch("SELECT id, body FROM facts ORDER BY id")
        assert [tuple(r) for r in rows] == [(1, "one"), (2, "two")]
    finally:
        await conn.close()

    postgres_server.restart()  # stop and start in one call: same port, same data
    conn = await asyncpg.connect(team_dsn, timeout=10)
    try:
        assert await conn.fetchval("SELECT count(*) FROM facts") == 2
    finally:
        await conn.close()


async def test_an_open_connection_is_ended_by_a_restart(team_dsn: str, postgres_server: PostgresServer) -> None:
    # Fast shutdown: open sessions do not hold the stop up; their next query fails and a new connection works.
    conn = await asyncpg.connect(team_dsn, timeout=10)
    try:
        postgres_server.restart()
        with pytest.raises((asyncpg.PostgresError, asyncpg.InterfaceError, OSError)):
            await conn.fetchval("SELECT 1")
    finally:
        await conn.close(timeout=5)
    fresh = await asyncpg.connect(team_dsn, timeout=10)
    try:
        assert await fresh.fetchval("SELECT 1") == 1
    finally:
        await fresh.close()
