"""Reading the decision log back: closing events, counts, arrays and Parquet.

Functions of an open connection, called by :class:`~skbandit.serving.DecisionLog`
under its lock (and, for the writes, inside its transaction).
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
from sklearn.utils import Bunch

from skbandit.serving._codec import (
    decode_context,
    decode_floats,
    decode_ints,
    decode_mask,
    stack_contexts,
)

__all__ = [
    "close_events",
    "closed_arrays",
    "closed_batch",
    "record_promotion",
    "status",
    "write_parquet",
]

_COLUMNS = (
    "seq, event_id, time, policy_version, context_format, context_shape, context, "
    "context_indices, n_actions, mask, actions, propensities, is_slate, learn, mode, "
    "policy_actions, policy_propensities, closed_time, reward, slate_rewards, "
    "n_rewards, defaulted"
)
_NAMES = [c.strip() for c in _COLUMNS.split(",")]

PROMOTION_FIELDS = (
    "champion_version",
    "candidate_version",
    "method",
    "reward_model",
    "n_samples",
    "first_seq",
    "last_seq",
    "champion_value",
    "champion_ci_low",
    "champion_ci_high",
    "candidate_value",
    "candidate_ci_low",
    "candidate_ci_high",
    "promoted",
)


# ---------------------------------------------------------------------- closing
def _joined_slate(values: list, size: int, default: float):
    """Per-position sums of a slate's rewards; unobserved positions get the default."""
    total = np.full(size, np.nan)
    for blob in values:
        v = np.frombuffer(blob, dtype=np.float64)
        seen = ~np.isnan(v)
        total[seen] = np.nan_to_num(total[seen]) + v[seen]
    missing = np.isnan(total)
    total[missing] = default
    return total, bool(missing.any())


def _first_open(con) -> int:
    """The ``seq`` below which every event is closed, as the last close left it.

    Kept in ``meta`` instead of an index on the open events: an index is one more
    page written by every decision's commit (a quarter of a committed decision's
    cost, measured); this is one row written per close. Open events are a suffix of
    the log but for the few a clock's step back leaves behind, which the scan from
    here still finds."""
    row = con.execute("SELECT value FROM meta WHERE key = 'first_open_seq'").fetchone()
    return int(row[0]) if row else 0


def close_events(con, now: float, wait: float, default: float) -> int:
    """Close the open events decided at or before ``now - wait``; return the count."""
    deadline = now - wait
    first = _first_open(con)
    events = con.execute(
        "SELECT seq, event_id, time, is_slate, length(actions) FROM events "
        "WHERE seq >= ? AND closed_time IS NULL AND time <= ? ORDER BY seq",
        (first, deadline),
    ).fetchall()
    if not events:
        return 0
    rewards = defaultdict(list)
    for seq, event_id, time, value, slate_values in con.execute(
        "SELECT r.seq, r.event_id, r.time, r.value, r.slate_values FROM events e "
        "JOIN rewards r ON r.event_id = e.event_id "
        "WHERE e.seq >= ? AND e.closed_time IS NULL AND e.time <= ?",
        (first, deadline),
    ):
        rewards[event_id].append((seq, time, value, slate_values))
    updates, late = [], []
    for seq, event_id, time, is_slate, n_bytes in events:
        on_time = [r for r in rewards[event_id] if r[1] <= time + wait]
        late += [(r[0],) for r in rewards[event_id] if r[1] > time + wait]
        if is_slate:
            vector, defaulted = _joined_slate(
                [r[3] for r in on_time], n_bytes // 8, default
            )
            total, slate = float(vector.sum()), vector.tobytes()
        else:
            defaulted = not on_time
            total = default if defaulted else float(sum(r[2] for r in on_time))
            slate = None
        updates.append((now, total, slate, len(on_time), int(defaulted), seq))
    con.executemany(
        "UPDATE events SET closed_time = ?, reward = ?, slate_rewards = ?, "
        "n_rewards = ?, defaulted = ? WHERE seq = ?",
        updates,
    )
    con.executemany("UPDATE rewards SET late = 1 WHERE seq = ?", late)
    still_open = con.execute(
        "SELECT MIN(seq) FROM events WHERE seq >= ? AND closed_time IS NULL", (first,)
    ).fetchone()[0]
    if still_open is None:  # every event is closed: the next one is the first open
        still_open = con.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM events")
        still_open = still_open.fetchone()[0]
    con.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES ('first_open_seq', ?)",
        (str(still_open),),
    )
    return len(updates)


# ---------------------------------------------------------------------- reading
def _arrays(rows: list) -> Bunch:
    """Decode event rows (in ``_COLUMNS`` order) into the offline tools' arrays."""
    r = [dict(zip(_NAMES, row, strict=True)) for row in rows]
    n_actions = max((e["n_actions"] for e in r), default=0)

    def mask(e):  # arms added later were not available to earlier events
        m = np.zeros(n_actions, dtype=bool)
        m[: e["n_actions"]] = decode_mask(e["mask"], e["n_actions"])
        return m

    slate = bool(r) and bool(r[0]["is_slate"])
    if any(bool(e["is_slate"]) != slate for e in r):
        raise ValueError("The log mixes single-arm and slate events.")

    def vectors(key, decode):
        values = [decode(e[key]) for e in r]
        return (
            np.stack(values)
            if slate
            else np.concatenate(values)
            if r
            else (np.empty(0))
        )

    return Bunch(
        X=stack_contexts(
            [
                decode_context(
                    e["context_format"],
                    e["context_shape"],
                    e["context"],
                    e["context_indices"],
                )
                for e in r
            ]
        ),
        actions=vectors("actions", decode_ints).astype(np.int64),
        rewards=(
            np.stack([decode_floats(e["slate_rewards"]) for e in r])
            if slate
            else np.array([e["reward"] for e in r], dtype=np.float64)
        ),
        propensities=vectors("propensities", decode_floats),
        action_mask=(
            np.stack([mask(e) for e in r]) if any(e["mask"] for e in r) else None
        ),
        policy_actions=np.stack(
            [decode_ints(e["policy_actions"] or e["actions"]) for e in r]
        ).reshape((len(r), -1) if slate else (len(r),))
        if r
        else np.empty(0, int),
        event_ids=np.array([e["event_id"] for e in r], dtype=object),
        seq=np.array([e["seq"] for e in r], dtype=np.int64),
        policy_versions=np.array([e["policy_version"] for e in r], dtype=object),
        learn=np.array([bool(e["learn"]) for e in r], dtype=bool),
        apprentice=np.array([e["mode"] == "apprentice" for e in r], dtype=bool),
        n_actions=n_actions,
    )


def closed_arrays(con, start, stop, learnable: bool) -> Bunch:
    """Every closed event with ``start <= seq < stop`` as arrays."""
    where = ["closed_time IS NOT NULL"]
    args = []
    if learnable:
        where.append("learn = 1")
    if start is not None:
        where.append("seq >= ?")
        args.append(int(start))
    if stop is not None:
        where.append("seq < ?")
        args.append(int(stop))
    rows = con.execute(
        f"SELECT {_COLUMNS} FROM events WHERE {' AND '.join(where)} ORDER BY seq",
        args,
    ).fetchall()
    return _arrays(rows)


def closed_batch(con, after_seq: int, limit: int):
    """``(last_seq, arrays of its learnable events)`` of the next closed events.

    The events after ``after_seq`` in event order, up to ``limit`` of them, stopping
    before the first open one: the learner's watermark only ever covers a closed
    prefix of the log. ``(after_seq, None)`` when there is nothing to learn yet.
    """
    rows = con.execute(
        f"SELECT {_COLUMNS} FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
        (int(after_seq), int(limit)),
    ).fetchall()
    closed = []
    for row in rows:
        if row[_NAMES.index("closed_time")] is None:
            break
        closed.append(row)
    if not closed:
        return after_seq, None
    learnable = [row for row in closed if row[_NAMES.index("learn")]]
    return closed[-1][0], _arrays(learnable) if learnable else None


def status(con) -> dict:
    """The log's counts, the learner's progress and the last promotion."""
    n, n_open, n_closed, n_learnable, n_defaulted, mean = con.execute(
        "SELECT COUNT(*), COUNT(*) - COUNT(closed_time), COUNT(closed_time), "
        "COALESCE(SUM(closed_time IS NOT NULL AND learn = 1), 0), "
        "COALESCE(SUM(defaulted), 0), "
        "AVG(CASE WHEN closed_time IS NOT NULL AND learn = 1 THEN reward END) "
        "FROM events"
    ).fetchone()
    n_rewards, n_late, late_sum = con.execute(
        "SELECT COUNT(*), COALESCE(SUM(late), 0), "
        "COALESCE(SUM(CASE WHEN late = 1 THEN value END), 0.0) FROM rewards"
    ).fetchone()
    checkpoint = con.execute(
        "SELECT watermark, n_learned, policy_version FROM checkpoints "
        "ORDER BY id DESC LIMIT 1"
    ).fetchone()
    promotion = con.execute(
        f"SELECT time, {', '.join(PROMOTION_FIELDS)} FROM promotions "
        "WHERE promoted = 1 ORDER BY id DESC LIMIT 1"
    ).fetchone()
    return {
        "n_events": n,
        "n_open": n_open,
        "n_closed": n_closed,
        "n_learnable": n_learnable,
        "n_defaulted": n_defaulted,
        "mean_reward": mean,
        "n_rewards": n_rewards,
        "n_late_rewards": n_late,
        "late_reward_sum": late_sum,
        "watermark": checkpoint[0] if checkpoint else 0,
        "n_learned": checkpoint[1] if checkpoint else 0,
        "learned_version": checkpoint[2] if checkpoint else None,
        "last_promotion": (
            dict(zip(("time", *PROMOTION_FIELDS), promotion, strict=True))
            if promotion
            else None
        ),
    }


def record_promotion(con, now: float, figures: dict) -> None:
    """One row of ``promotions`` (promoted or not) with the gate's figures."""
    con.execute(
        f"INSERT INTO promotions (time, {', '.join(PROMOTION_FIELDS)}) "
        f"VALUES (?{', ?' * len(PROMOTION_FIELDS)})",
        (now, *(figures[k] for k in PROMOTION_FIELDS)),
    )


# ---------------------------------------------------------------------- parquet
def _list(blob, decode):
    return None if blob is None else decode(blob).tolist()


#: Columns copied as they are stored, with their Parquet types.
_PLAIN_COLUMNS = (
    ("seq", "int64"),
    ("event_id", "string"),
    ("time", "float64"),
    ("policy_version", "string"),
    ("context_format", "string"),
    ("context_shape", "string"),
    ("n_actions", "int64"),
    ("mode", "string"),
    ("reward", "float64"),
    ("n_rewards", "int64"),
)
#: Columns stored as bytes, written as lists: (name, decoder, item type).
_LIST_COLUMNS = (
    ("context", decode_floats, "float64"),
    ("context_indices", decode_ints, "int64"),
    ("actions", decode_ints, "int64"),
    ("propensities", decode_floats, "float64"),
    ("policy_actions", decode_ints, "int64"),
    ("slate_rewards", decode_floats, "float64"),
)


def _parquet_columns(rows: list, late: dict) -> dict:
    """The Parquet file's columns (pyarrow arrays) from the events' rows."""
    import pyarrow as pa

    def first(e, key, decode):  # a single-arm event's arm or propensity; a slate: null
        return None if e["is_slate"] else decode(e[key])[0].item()

    columns = {
        name: pa.array([e[name] for e in rows], getattr(pa, kind)())
        for name, kind in _PLAIN_COLUMNS
    }
    columns |= {
        name: pa.array(
            [_list(e[name], decode) for e in rows], pa.list_(getattr(pa, kind)())
        )
        for name, decode, kind in _LIST_COLUMNS
    }
    columns |= {
        "mask": pa.array(
            [
                None if e["mask"] is None else decode_mask(e["mask"], 0).tolist()
                for e in rows
            ],
            pa.list_(pa.bool_()),
        ),
        "action": pa.array(
            [first(e, "actions", decode_ints) for e in rows], pa.int64()
        ),
        "propensity": pa.array(
            [first(e, "propensities", decode_floats) for e in rows], pa.float64()
        ),
        "learn": pa.array([bool(e["learn"]) for e in rows], pa.bool_()),
        "closed": pa.array([e["closed_time"] is not None for e in rows], pa.bool_()),
        "defaulted": pa.array(
            [None if e["defaulted"] is None else bool(e["defaulted"]) for e in rows],
            pa.bool_(),
        ),
        "n_late_rewards": pa.array(
            [late.get(e["event_id"], (0, 0.0))[0] for e in rows], pa.int64()
        ),
        "late_reward_sum": pa.array(
            [late.get(e["event_id"], (0, 0.0))[1] for e in rows], pa.float64()
        ),
    }
    return columns


def write_parquet(con, path: Path) -> Path:
    """Every event, its joined reward and its late rewards, as one Parquet file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    late = {
        event_id: (n, total)
        for event_id, n, total in con.execute(
            "SELECT event_id, COUNT(*), SUM(value) FROM rewards WHERE late = 1 "
            "GROUP BY event_id"
        )
    }
    rows = [
        dict(zip(_NAMES, row, strict=True))
        for row in con.execute(f"SELECT {_COLUMNS} FROM events ORDER BY seq")
    ]
    pq.write_table(pa.table(_parquet_columns(rows, late)), path)
    return path
