"""The decision log's tables, and how its SQLite file is opened.

One file, in write-ahead-log mode: readers (an export, a report, another process)
never block the writer, and a committed transaction survives the death of the
process that wrote it. ``synchronous=NORMAL`` (the default here) makes a commit
durable against a crash of the process; ``FULL`` also against a power loss, at the
cost of an ``fsync`` per commit.

Tables
------
``events``
    One row per decision, in event order (``seq``). The context, mask, arms and
    propensities as bytes (:mod:`skbandit.serving._codec`); ``learn`` (deferred
    activation: 0 until activated); ``mode`` (``"policy"`` or ``"apprentice"``,
    whose ``policy_actions`` / ``policy_propensities`` hold the policy's own
    choice beside the caller's); and, once the event is closed, ``closed_time``,
    the joined ``reward`` (a slate's rewards in ``slate_rewards``), the number of
    rewards joined and whether the default reward was written.
``rewards``
    Every reward call, append-only: a reward is never lost, also when it comes
    after its event closed (``late = 1``: kept, counted and reported, not learned).
``checkpoints``
    The learner's policy pickle with its watermark (the last event ``seq`` it
    learned) and its count of learned events, written in one transaction.
``promotions``
    Every gate decision with its figures, promoted or not.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import sqlite3

__all__ = ["SCHEMA_VERSION", "connect"]

SCHEMA_VERSION = 1

_TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id TEXT NOT NULL UNIQUE,
    time REAL NOT NULL,
    policy_version TEXT NOT NULL,
    context_format TEXT NOT NULL,
    context_shape TEXT NOT NULL,
    context BLOB NOT NULL,
    context_indices BLOB,
    n_actions INTEGER NOT NULL,
    mask BLOB,
    actions BLOB NOT NULL,
    propensities BLOB NOT NULL,
    is_slate INTEGER NOT NULL,
    learn INTEGER NOT NULL,
    mode TEXT NOT NULL,
    policy_actions BLOB,
    policy_propensities BLOB,
    closed_time REAL,
    reward REAL,
    slate_rewards BLOB,
    n_rewards INTEGER,
    defaulted INTEGER
);
CREATE TABLE IF NOT EXISTS rewards (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id TEXT NOT NULL REFERENCES events (event_id),
    time REAL NOT NULL,
    value REAL NOT NULL,
    slate_values BLOB,
    late INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS rewards_event ON rewards (event_id);
CREATE TABLE IF NOT EXISTS checkpoints (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time REAL NOT NULL,
    watermark INTEGER NOT NULL,
    n_learned INTEGER NOT NULL,
    policy_version TEXT NOT NULL,
    policy BLOB NOT NULL,
    reason TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS promotions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time REAL NOT NULL,
    champion_version TEXT NOT NULL,
    candidate_version TEXT NOT NULL,
    method TEXT NOT NULL,
    reward_model TEXT NOT NULL,
    n_samples INTEGER NOT NULL,
    first_seq INTEGER,
    last_seq INTEGER,
    champion_value REAL NOT NULL,
    champion_ci_low REAL NOT NULL,
    champion_ci_high REAL NOT NULL,
    candidate_value REAL NOT NULL,
    candidate_ci_low REAL NOT NULL,
    candidate_ci_high REAL NOT NULL,
    promoted INTEGER NOT NULL
);
"""

_SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")


def connect(path, synchronous: str = "NORMAL") -> sqlite3.Connection:
    """Open (creating if needed) the log's SQLite file in WAL mode.

    The connection is in autocommit mode (``isolation_level=None``): every
    transaction is an explicit ``BEGIN IMMEDIATE`` ... ``COMMIT`` of the caller, so
    what is acknowledged is exactly what was committed. It may be used from several
    threads; the :class:`~skbandit.serving.DecisionLog` serialises them.
    """
    if str(synchronous).upper() not in _SYNCHRONOUS:
        raise ValueError(
            f"synchronous must be one of {_SYNCHRONOUS}; got {synchronous!r}."
        )
    con = sqlite3.connect(
        str(path), isolation_level=None, check_same_thread=False, timeout=30.0
    )
    mode = con.execute("PRAGMA journal_mode=WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        con.close()
        raise ValueError(f"{path}: SQLite refused WAL mode (got {mode!r}).")
    con.execute(f"PRAGMA synchronous={str(synchronous).upper()}")
    con.execute("PRAGMA foreign_keys=ON")
    # executescript commits on its own; every statement is idempotent.
    con.executescript(_TABLES)
    row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is None:
        con.execute(
            "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)",
            (str(SCHEMA_VERSION),),
        )
    elif int(row[0]) != SCHEMA_VERSION:
        con.close()
        raise ValueError(
            f"{path} holds a decision log of schema version {row[0]}; this skbandit "
            f"reads version {SCHEMA_VERSION}."
        )
    return con
