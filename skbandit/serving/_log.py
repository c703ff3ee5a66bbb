"""The decision log: every decision and every reward, joined by event id, in SQLite.

:meth:`DecisionLog.decide` asks the policy for an arm (or a slate) with its
propensity and writes one row; :meth:`DecisionLog.reward` appends a reward, joined
later by event id; :meth:`DecisionLog.close` closes the events whose reward wait
has passed, writing the default reward where none came. The learner, the gate and
the reports read the closed events back (:mod:`skbandit.serving._export`).
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import hashlib
import math
import pickle
import threading
import time
import uuid
import weakref
from itertools import count
from pathlib import Path

import numpy as np

from skbandit.serving import _export
from skbandit.serving._codec import encode_context, encode_mask
from skbandit.serving._events import (
    DuplicateEventError,
    Event,
    UnknownEventError,
    check_caller_choice,
    check_reward,
    final_step,
    first,
    one_round,
    seconds,
)
from skbandit.serving._queue import INSERT_EVENT, BatchWriter, Transaction
from skbandit.serving._schema import connect

__all__ = ["DecisionLog"]

_MAX_EVENT_ID = 256


class DecisionLog:
    """Decisions and their rewards, joined by event id, in one SQLite file.

    Read more in the :ref:`User Guide <running_the_loop>`.

    Parameters
    ----------
    path : str or path-like
        The SQLite file, created if missing, opened in write-ahead-log mode.
    durability : {"commit", "batch"}, default="commit"
        ``"commit"``: every decision and reward is committed before the call
        returns, so whatever was acknowledged survives a crash of the process.
        ``"batch"``: decisions are queued and the call returns; a thread of the
        log writes the queue in one transaction every ``flush_interval`` seconds
        or ``flush_every`` decisions (and before any reward, close, export or
        :meth:`flush`). Faster, but a crash loses the queued decisions.
    flush_every : int, default=256
        Queue length that wakes the writer with ``durability="batch"``.
    flush_interval : float, default=0.1
        Longest time, in seconds, a decision stays queued with
        ``durability="batch"``.
    synchronous : {"NORMAL", "FULL", "OFF", "EXTRA"}, default="NORMAL"
        SQLite's ``synchronous`` pragma: ``NORMAL`` survives a crash of the
        process, ``FULL`` also a power loss.
    clock : callable, default=time.time
        Returns the current time in seconds; decisions, rewards and the reward
        wait use it (a test passes a fake clock).

    Attributes
    ----------
    path : pathlib.Path
        The SQLite file.

    See Also
    --------
    Learner : Learns the log's closed events, exactly once.

    Examples
    --------
    >>> import tempfile, os
    >>> import numpy as np
    >>> from skbandit.policies import LinUCB
    >>> from skbandit.serving import DecisionLog
    >>> policy = LinUCB(n_actions=3, random_state=0)
    >>> path = os.path.join(tempfile.mkdtemp(), "decisions.sqlite")
    >>> with DecisionLog(path) as log:
    ...     event = log.decide(policy, np.array([0.5, -1.0]), event_id="e1")
    ...     log.reward("e1", 1.0)
    ...     log.status()["n_events"]
    False
    1
    """

    def __init__(
        self,
        path,
        *,
        durability="commit",
        flush_every=256,
        flush_interval=0.1,
        synchronous="NORMAL",
        clock=time.time,
    ):
        if durability not in ("commit", "batch"):
            raise ValueError(
                f"durability must be 'commit' or 'batch'; got {durability!r}."
            )
        if int(flush_every) < 1:
            raise ValueError(f"flush_every must be at least 1; got {flush_every!r}.")
        self.path = Path(path)
        self.durability = durability
        self.flush_every = int(flush_every)
        self.clock = clock
        self._con = connect(self.path, synchronous)
        self._lock = threading.RLock()
        self._writer = (
            BatchWriter(self.path, synchronous, self.flush_every, float(flush_interval))
            if durability == "batch"
            else None
        )
        self._versions: dict[int, tuple] = {}
        # Generated event ids: a random 64-bit prefix per opened log, then a counter
        # (unique across restarts, cheaper than a uuid4 per decision).
        self._id_prefix = uuid.uuid4().hex[:16]
        self._id_counter = count()

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close_connection()

    def close_connection(self) -> None:
        """Write the queued decisions and close the SQLite connection."""
        with self._lock:
            if self._writer is not None:
                self._writer.close()
            if self._con is not None:
                self._con.close()
                self._con = None

    def flush(self) -> None:
        """Write the queued decisions (``durability="batch"``) in one transaction."""
        if self._writer is not None:
            self._writer.flush()

    def _transaction(self):
        return Transaction(self._con)

    # ------------------------------------------------------------------- deciding
    def policy_version(self, policy) -> str:
        """Content hash of the policy's pickle (16 hex digits), cached per state.

        The hash is taken the first time the log sees a policy object after it
        learned (its final step's ``n_samples_seen_`` changed), not per decision: a
        decision only advances the random state, and the version names the model.
        """
        key = getattr(final_step(policy), "n_samples_seen_", None)
        cached = self._versions.get(id(policy))
        if cached is not None and cached[0]() is policy and cached[1] == key:
            return cached[2]
        blob = pickle.dumps(policy, protocol=pickle.HIGHEST_PROTOCOL)
        return self._remember_version(policy, hashlib.sha256(blob).hexdigest()[:16])

    def _remember_version(self, policy, version: str) -> str:
        key = getattr(final_step(policy), "n_samples_seen_", None)
        self._versions[id(policy)] = (weakref.ref(policy), key, version)
        return version

    def _new_event_id(self, event_id) -> str:
        if event_id is None:
            return f"{self._id_prefix}{next(self._id_counter):016x}"
        if not isinstance(event_id, str) or not 0 < len(event_id) <= _MAX_EVENT_ID:
            raise ValueError(
                f"event_id must be a string of 1 to {_MAX_EVENT_ID} characters; got "
                f"{event_id!r:.80}."
            )
        if not event_id.isprintable():
            raise ValueError(f"event_id must be printable; got {event_id!r:.80}.")
        if (
            self._writer is not None
            and self._writer.holds(event_id)
            or self._con.execute(
                "SELECT 1 FROM events WHERE event_id = ?", (event_id,)
            ).fetchone()
        ):
            raise DuplicateEventError(
                f"event_id {event_id!r} is already in the log: each decision needs "
                "its own event id."
            )
        return event_id

    def decide(self, policy, x, *, event_id=None, mask=None, learn=True) -> Event:
        """Let the policy choose for one round and log the decision.

        Calls ``policy.select(x[None], action_mask=mask[None],
        return_propensities=True)`` and writes one row: the event id, the time, the
        policy's version, the context, the mask, the chosen arm (or slate) and its
        propensity. The policy may be a policy or a pipeline ending in one. A call
        that raises logs nothing.

        Parameters
        ----------
        policy : policy or BanditPipeline
            Decides; its random state advances as ``select`` advances it.
        x : array-like of shape (n_features,) or (n_actions, n_features), or a \
                sparse matrix with one row
            The round's context (shared, or one vector per arm).
        event_id : str, default=None
            The id rewards will name; generated when not given. An id already in
            the log raises :class:`DuplicateEventError`.
        mask : array-like of bool of shape (n_actions,), default=None
            Arms available in this round.
        learn : bool, default=True
            ``False`` logs the event without learning from it until
            :meth:`activate` is called (deferred activation).

        Returns
        -------
        event : Event
            The logged decision.
        """
        with self._lock:
            event_id = self._new_event_id(event_id)
            X, mask2d = one_round(x, mask)
            actions, propensities = policy.select(
                X, action_mask=mask2d, return_propensities=True
            )
            return self._log(
                policy,
                X,
                mask,
                actions[0],
                propensities[0],
                event_id,
                learn,
                "policy",
                None,
                None,
            )

    def apprentice(
        self,
        policy,
        x,
        action,
        *,
        propensity=None,
        event_id=None,
        mask=None,
        learn=True,
    ) -> Event:
        """Log the caller's own choice, and the policy's choice beside it.

        Apprentice mode: the caller's arm (or slate) is what was played, so it is
        what the learner learns from, with the caller's propensity (1, a
        deterministic choice, when not given). The policy still chooses, and its
        choice and propensity are logged beside, for :func:`apprentice_report`.

        Parameters
        ----------
        policy : policy or BanditPipeline
            The apprentice.
        x : array-like of shape (n_features,) or (n_actions, n_features), or a \
                sparse matrix with one row
            The round's context.
        action : int or array-like of shape (slate_size,)
            The arm (slate) the caller played.
        propensity : float or array-like of shape (slate_size,), default=None
            The caller's probability of playing it, in ``(0, 1]``; 1 when None.
        event_id : str, default=None
            As in :meth:`decide`.
        mask : array-like of bool of shape (n_actions,), default=None
            Arms available; the caller's arm must be one of them.
        learn : bool, default=True
            As in :meth:`decide`.

        Returns
        -------
        event : Event
            ``action`` and ``propensity`` are the caller's; ``policy_action`` and
            ``policy_propensity`` the policy's.
        """
        with self._lock:
            event_id = self._new_event_id(event_id)
            X, mask2d = one_round(x, mask)
            chosen, props = check_caller_choice(policy, action, propensity, mask)
            policy_actions, policy_props = policy.select(
                X, action_mask=mask2d, return_propensities=True
            )
            return self._log(
                policy,
                X,
                mask,
                chosen,
                props,
                event_id,
                learn,
                "apprentice",
                policy_actions[0],
                policy_props[0],
            )

    def _log(
        self,
        policy,
        X,
        mask,
        actions,
        props,
        event_id,
        learn,
        mode,
        policy_actions,
        policy_props,
    ) -> Event:
        """Write one decision (or queue it) and return its :class:`Event`."""
        version = self.policy_version(policy)
        now = self.clock()
        fmt, shape, values, indices = encode_context(
            X[0] if type(X) is np.ndarray else X
        )
        actions = np.asarray(actions, dtype=np.int64)
        props = np.asarray(props, dtype=np.float64)
        row = (
            event_id,
            now,
            version,
            fmt,
            shape,
            values,
            indices,
            int(final_step(policy).n_actions_),
            encode_mask(mask),
            actions.tobytes(),
            props.tobytes(),
            int(actions.ndim == 1),
            int(bool(learn)),
            mode,
            None
            if policy_actions is None
            else np.asarray(policy_actions, dtype=np.int64).tobytes(),
            None
            if policy_props is None
            else np.asarray(policy_props, dtype=np.float64).tobytes(),
        )
        if self.durability == "batch":
            self._writer.put(event_id, row)
        else:
            with self._transaction():
                self._con.execute(INSERT_EVENT, row)
        return Event(
            event_id,
            now,
            version,
            first(actions),
            first(props),
            None if policy_actions is None else first(policy_actions),
            None if policy_props is None else first(policy_props),
        )

    # ------------------------------------------------------------------ rewards
    def reward(self, event_id, value) -> bool:
        """Join a reward to its decision; rewards of one event add up.

        Parameters
        ----------
        event_id : str
            The decision's event id; an id the log has never seen raises
            :class:`UnknownEventError`.
        value : float or array-like of shape (slate_size,)
            The reward (finite). A slate's: one entry per slate position, ``nan``
            where this call says nothing about that position.

        Returns
        -------
        late : bool
            True when the event had already closed: the reward is kept and counted
            (:meth:`status`, the Parquet export) but not learned.
        """
        with self._lock:
            self.flush()
            row = self._con.execute(
                "SELECT closed_time, is_slate, length(actions) FROM events "
                "WHERE event_id = ?",
                (event_id,),
            ).fetchone()
            if row is None:
                raise UnknownEventError(
                    f"No decision with event_id {event_id!r:.80} in the log: a reward "
                    "must name the event id its decision returned."
                )
            closed_time, is_slate, n_bytes = row
            total, vector = check_reward(value, bool(is_slate), n_bytes // 8)
            late = closed_time is not None
            with self._transaction():
                self._con.execute(
                    "INSERT INTO rewards (event_id, time, value, slate_values, late) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (event_id, self.clock(), total, vector, int(late)),
                )
            return late

    def activate(self, event_id) -> None:
        """Let the learner learn an event logged with ``learn=False``.

        Deferred activation: an event whose arm was not shown after all is never
        activated, so it is never learned. Only an open event can be activated.

        Parameters
        ----------
        event_id : str
            The event's id.
        """
        with self._lock:
            self.flush()
            row = self._con.execute(
                "SELECT closed_time FROM events WHERE event_id = ?", (event_id,)
            ).fetchone()
            if row is None:
                raise UnknownEventError(f"No decision with event_id {event_id!r:.80}.")
            if row[0] is not None:
                raise ValueError(
                    f"Event {event_id!r} is closed: it must be activated within its "
                    "reward wait."
                )
            with self._transaction():
                self._con.execute(
                    "UPDATE events SET learn = 1 WHERE event_id = ?", (event_id,)
                )

    def close(self, wait, default_reward=0.0) -> int:
        """Close every open event older than ``wait``; return how many were closed.

        An event's reward is the sum of the rewards that came within ``wait`` of
        its decision; with none, ``default_reward`` (a slate: per position). A
        reward that came later is marked late: kept and counted, not learned.

        Parameters
        ----------
        wait : float or datetime.timedelta
            The reward wait, in seconds.
        default_reward : float, default=0.0
            The reward of an event (a slate position) that got none in time.

        Returns
        -------
        n_closed : int
            Events closed by this call.
        """
        wait_seconds = seconds(wait)
        if not math.isfinite(default_reward):
            raise ValueError(f"default_reward must be finite; got {default_reward!r}.")
        with self._lock:
            self.flush()
            with self._transaction():
                return _export.close_events(
                    self._con, self.clock(), wait_seconds, float(default_reward)
                )

    # ------------------------------------------------------------------ reading
    def status(self) -> dict:
        """Counts of the log: events, open events, rewards, late rewards, learning.

        Returns
        -------
        status : dict
            ``n_events``, ``n_open`` (pending), ``n_closed``, ``n_learnable``
            (closed events to learn from), ``n_defaulted``, ``mean_reward`` (over
            closed learnable events, None when there are none), ``n_rewards``,
            ``n_late_rewards``, ``late_reward_sum``, ``n_learned`` and
            ``watermark`` (the learner's last checkpoint), ``last_promotion``.
        """
        with self._lock:
            self.flush()
            return _export.status(self._con)

    def to_arrays(self, *, start=None, stop=None, learnable=True):
        """Closed events as the arrays the offline tools take.

        Parameters
        ----------
        start, stop : int, default=None
            Bounds on the events' ``seq`` (their order in the log), ``start <= seq
            < stop``.
        learnable : bool, default=True
            Only events to learn from (activated); False: every closed event.

        Returns
        -------
        data : sklearn.utils.Bunch
            ``X``, ``actions``, ``rewards``, ``propensities``, ``action_mask``,
            ``event_ids``, ``seq``, ``policy_actions`` (apprentice events: the
            policy's own choice; else the logged arm), ``policy_versions``,
            ``learn``, ``apprentice`` (which events were logged in apprentice mode)
            and ``n_actions``.
        """
        with self._lock:
            self.flush()
            return _export.closed_arrays(self._con, start, stop, learnable)

    def to_parquet(self, path) -> Path:
        """Write every event with its joined reward to a Parquet file (pyarrow).

        One row per event; the context as a list of floats (sparse: its values
        and indices), the arms and propensities as lists, the reward columns
        (``reward``, ``n_rewards``, ``defaulted``, ``late_reward_sum``,
        ``n_late_rewards``). DuckDB reads it with ``read_parquet(path)``.

        Parameters
        ----------
        path : str or path-like
            The file to write.

        Returns
        -------
        path : pathlib.Path
            The file written.
        """
        with self._lock:
            self.flush()
            return _export.write_parquet(self._con, Path(path))

    # -------------------------------------------------- for the learner and gate
    def _closed_batch(self, after_seq: int, limit: int):
        with self._lock:
            self.flush()
            return _export.closed_batch(self._con, after_seq, limit)

    def _latest_checkpoint(self):
        with self._lock:
            return self._con.execute(
                "SELECT watermark, n_learned, policy_version, policy FROM checkpoints "
                "ORDER BY id DESC LIMIT 1"
            ).fetchone()

    def _record_promotion(self, figures: dict) -> None:
        with self._lock, self._transaction():
            _export.record_promotion(self._con, self.clock(), figures)

    def _write_checkpoint(
        self, watermark, n_learned, blob, version, reason, promotion=None, keep=2
    ) -> None:
        """Policy pickle + watermark (+ the promotion's row) in one transaction."""
        with self._lock, self._transaction():
            self._con.execute(
                "INSERT INTO checkpoints (time, watermark, n_learned, policy_version, "
                "policy, reason) VALUES (?, ?, ?, ?, ?, ?)",
                (self.clock(), watermark, n_learned, version, blob, reason),
            )
            self._con.execute(
                "DELETE FROM checkpoints WHERE id NOT IN (SELECT id FROM checkpoints "
                "ORDER BY id DESC LIMIT ?)",
                (keep,),
            )
            if promotion is not None:
                _export.record_promotion(self._con, self.clock(), promotion)
