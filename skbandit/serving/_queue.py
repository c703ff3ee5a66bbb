"""Transactions, and the background writer of ``durability="batch"``.

With ``durability="batch"`` a decision is queued in memory and the call returns; a
thread of the log writes the queue in one transaction when it holds ``flush_every``
decisions or ``flush_interval`` seconds have passed, on a SQLite connection of its
own, so that the caller does not wait for SQLite (whose C code runs without
Python's global lock). A crash loses what is still queued: at most
``flush_interval`` seconds or ``flush_every`` decisions.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import threading

from skbandit.serving._schema import connect

__all__ = ["INSERT_EVENT", "BatchWriter", "Transaction"]

INSERT_EVENT = (
    "INSERT INTO events (event_id, time, policy_version, context_format, "
    "context_shape, context, context_indices, n_actions, mask, actions, "
    "propensities, is_slate, learn, mode, policy_actions, policy_propensities) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


class Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``, or ``ROLLBACK`` when the body raises."""

    def __init__(self, con):
        self._con = con

    def __enter__(self):
        self._con.execute("BEGIN IMMEDIATE")
        return self._con

    def __exit__(self, exc_type, exc, tb):
        self._con.execute("ROLLBACK" if exc_type is not None else "COMMIT")
        return False


class BatchWriter:
    """Queued decisions, written by a thread on a connection of its own."""

    def __init__(self, path, synchronous: str, flush_every: int, interval: float):
        self._path, self._synchronous = path, synchronous
        self.flush_every, self.interval = flush_every, interval
        self._rows: list[tuple] = []
        self._ids: set[str] = set()  # queued or being written: not yet in the table
        self._lock = threading.Lock()  # guards _rows and _ids
        self._write_lock = threading.Lock()  # one write at a time
        self._wake = threading.Event()
        self._closed = False
        self._con = None
        self._thread = None
        self.error = None

    def holds(self, event_id: str) -> bool:
        """Whether the event is queued or being written."""
        with self._lock:
            return event_id in self._ids

    def put(self, event_id: str, row: tuple) -> None:
        """Queue one decision's row; wake the writer when the queue is full."""
        with self._lock:
            self._rows.append(row)
            self._ids.add(event_id)
            full = len(self._rows) >= self.flush_every
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, daemon=True, name="skbandit-log-writer"
            )
            self._thread.start()
        if full:
            self._wake.set()

    def flush(self) -> None:
        """Write every queued decision now, in one transaction."""
        with self._write_lock:
            with self._lock:
                rows, self._rows = self._rows, []
            if not rows:
                return
            if self._con is None:
                self._con = connect(self._path, self._synchronous)
            try:
                with Transaction(self._con):
                    self._con.executemany(INSERT_EVENT, rows)
            except BaseException:
                with self._lock:  # not written: queued again, in order
                    self._rows[:0] = rows
                raise
            with self._lock:
                self._ids.difference_update(row[0] for row in rows)

    def _run(self) -> None:
        while not self._closed:
            self._wake.wait(self.interval)
            self._wake.clear()
            try:
                self.flush()
                self.error = None
            except Exception as exc:  # kept queued; reported by the next flush()
                self.error = exc

    def close(self) -> None:
        """Stop the thread, write what is queued, close the connection."""
        self._closed = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
        self.flush()
        if self._con is not None:
            self._con.close()
            self._con = None
