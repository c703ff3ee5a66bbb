"""Learning from the decision log, each closed event exactly once.

The policy lives in memory, the log in SQLite: one commit cannot cover both. So the
learner makes the database the single source of truth for both. After it learns a
batch of events, it writes **the policy's pickle and the watermark (the ``seq`` of
the last event learned) in one SQLite transaction** (a checkpoint). A learner that
starts on a log with a checkpoint first restores the policy from it, then learns
the events after its watermark.

Whatever dies when, the policy that serves next is a checkpoint, and a checkpoint's
policy has learned exactly the events up to its own watermark:

- killed before the checkpoint commits: the in-memory updates die with the
  process; the restart restores the previous checkpoint and learns those events
  again, for the first time as far as that policy is concerned;
- killed after it commits: the restart restores this checkpoint and goes on from
  its watermark.

The cost is one pickle of the policy per :meth:`Learner.step` that learned
something (the log keeps the last two checkpoints).
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import hashlib
import pickle
import threading
from datetime import timedelta

from skbandit.serving._events import seconds

__all__ = ["Learner"]


def _restore_into(policy, restored) -> None:
    """Make ``policy`` the checkpoint's policy, in place (its callers keep it)."""
    if type(restored) is not type(policy):
        raise TypeError(
            f"The log's checkpoint holds a {type(restored).__name__}, but the learner "
            f"was given a {type(policy).__name__}: serve the policy the log learned, "
            "or start a new log."
        )
    state = vars(restored)
    vars(policy).clear()
    vars(policy).update(state)


class Learner:
    """Learns the closed events of a :class:`DecisionLog`, in event order, once each.

    Read more in the :ref:`User Guide <running_the_loop>`.

    Parameters
    ----------
    policy : policy or BanditPipeline
        The policy that serves and learns. On a log that holds a checkpoint, it is
        restored in place from the latest one (its type must match), so the object
        the caller serves is the one that learned.
    log : DecisionLog
        The log to learn from.
    wait : float or datetime.timedelta, default=timedelta(minutes=10)
        The reward wait: an event closes this long after its decision, with the
        sum of the rewards that came in time, or ``default_reward``.
    default_reward : float, default=0.0
        The reward of an event that got none within ``wait``.
    batch_size : int, default=256
        Events per ``partial_fit`` call (one delayed-feedback update).
    lock : threading.RLock, default=None
        Held while the policy learns; pass the lock that guards the policy's
        ``select`` when it serves in other threads. A new lock when None.

    Attributes
    ----------
    n_learned_ : int
        Events learned from this log since its first checkpoint, across restarts.
    watermark_ : int
        ``seq`` of the last event learned (0: none).

    See Also
    --------
    DecisionLog : Where the decisions and rewards are written.

    Examples
    --------
    >>> import tempfile, os
    >>> import numpy as np
    >>> from skbandit.policies import LinUCB
    >>> from skbandit.serving import DecisionLog, Learner
    >>> policy = LinUCB(n_actions=2, random_state=0)
    >>> log = DecisionLog(os.path.join(tempfile.mkdtemp(), "d.sqlite"))
    >>> events = [log.decide(policy, np.array([1.0, x])) for x in (0.0, 1.0)]
    >>> learner = Learner(policy, log, wait=0.0)
    >>> learner.step()
    2
    >>> int(policy.n_samples_seen_)
    2
    """

    def __init__(
        self,
        policy,
        log,
        *,
        wait=timedelta(minutes=10),
        default_reward=0.0,
        batch_size=256,
        lock=None,
    ):
        if int(batch_size) < 1:
            raise ValueError(f"batch_size must be at least 1; got {batch_size!r}.")
        self.policy = policy
        self.log = log
        self.wait = wait
        self.default_reward = default_reward
        self.batch_size = int(batch_size)
        self.lock = threading.RLock() if lock is None else lock
        seconds(wait)  # a bad wait fails here, not in the first step
        checkpoint = log._latest_checkpoint()
        with self.lock:
            if checkpoint is None:
                self.watermark_, self.n_learned_ = 0, 0
            else:
                self.watermark_, self.n_learned_, version, blob = checkpoint
                _restore_into(policy, pickle.loads(blob))
                log._remember_version(policy, version)

    def step(self) -> int:
        """Close the events whose wait has passed and learn every closed one.

        Returns
        -------
        n_learned : int
            Events learned by this call (closed events logged with ``learn=False``
            and never activated are passed over, not learned).
        """
        with self.lock:
            self.log.close(self.wait, self.default_reward)
            watermark, learned = self.watermark_, 0
            try:
                while True:
                    last, batch = self.log._closed_batch(watermark, self.batch_size)
                    if last == watermark:
                        break
                    if batch is not None:
                        self.policy.partial_fit(
                            batch.X,
                            batch.actions,
                            batch.rewards,
                            action_mask=batch.action_mask,
                        )
                        learned += len(batch.seq)
                    watermark = last
            finally:  # what was learned before a failure is checkpointed too
                if watermark != self.watermark_:
                    self._checkpoint(watermark, self.n_learned_ + learned, "learn")
            return learned

    def install(self, policy, *, promotion=None) -> None:
        """Serve and learn with another policy from the current watermark on.

        The new policy is checkpointed with the current watermark (and, when given,
        the promotion's figures) in one transaction, then restored in place into
        the served object. Used by :meth:`Gate.promote`.

        Parameters
        ----------
        policy : policy or BanditPipeline
            The new policy, of the served policy's type.
        promotion : dict, default=None
            The gate's figures, recorded in the same transaction.
        """
        with self.lock:
            if type(policy) is not type(self.policy):
                _restore_into(self.policy, policy)  # raises the type error
            blob = pickle.dumps(policy, protocol=pickle.HIGHEST_PROTOCOL)
            version = self._write(
                blob, self.watermark_, self.n_learned_, "promotion", promotion
            )
            _restore_into(self.policy, pickle.loads(blob))
            self.log._remember_version(self.policy, version)

    def _checkpoint(self, watermark: int, n_learned: int, reason: str) -> None:
        blob = pickle.dumps(self.policy, protocol=pickle.HIGHEST_PROTOCOL)
        self._write(blob, watermark, n_learned, reason, None)

    def _write(self, blob, watermark, n_learned, reason, promotion) -> str:
        version = hashlib.sha256(blob).hexdigest()[:16]
        self.log._write_checkpoint(
            watermark, n_learned, blob, version, reason, promotion
        )
        self.watermark_, self.n_learned_ = int(watermark), int(n_learned)
        self.log._remember_version(self.policy, version)
        return version

    def __repr__(self) -> str:
        return (
            f"Learner({type(self.policy).__name__}, {self.log.path.name!r}, "
            f"wait={seconds(self.wait):g}s, n_learned_={self.n_learned_}, "
            f"watermark_={self.watermark_})"
        )
