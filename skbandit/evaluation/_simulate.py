"""The online loop: a policy against an environment, with exact expected regret."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from dataclasses import dataclass, field
from numbers import Integral
from time import perf_counter
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.base import clone

from skbandit.utils._param_validation import HasMethods, Interval, validate_params

__all__ = ["SimulationResult", "simulate"]


def _clone_for(policy, env):
    """A clone of ``policy`` whose unset ``n_actions`` is the environment's.

    A bare policy's ``n_actions``, or the final step's inside a BanditPipeline.
    """
    policy = clone(policy)
    params = policy.get_params(deep=True) if hasattr(policy, "get_params") else {}
    unset = [
        k for k, v in params.items() if k.split("__")[-1] == "n_actions" and v is None
    ]
    if unset:
        policy.set_params(**dict.fromkeys(unset, env.n_actions))
    return policy


def _axes(ax):
    """``ax``, or a new figure's axes when None (matplotlib imported only to plot)."""
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(6, 4))
    return ax


@dataclass
class SimulationResult:
    """What an online run produced, round by round.

    Parameters
    ----------
    regret : ndarray of shape (n_rounds,)
        Expected regret of each round: the best available expected reward minus
        the expected reward of the chosen arm.
    actions : ndarray of shape (n_rounds,) or (n_rounds, slate_size)
        Chosen arms (slates for slate policies).
    rewards : ndarray of shape (n_rounds,) or (n_rounds, slate_size)
        Realised rewards of the chosen arms.
    expected_rewards : ndarray of shape (n_rounds,)
        Expected rewards of the chosen arms (summed over a slate).
    optimal_rewards : ndarray of shape (n_rounds,)
        Best expected reward among the available arms.
    select_time : ndarray of shape (n_batches,)
        Seconds spent in ``policy.select`` per batch.
    update_time : ndarray of shape (n_batches,)
        Seconds spent in ``policy.partial_fit`` per batch.
    batch_size : int
        Rounds per batch (the last batch may be shorter).
    policy : estimator
        The fitted clone of the policy, in its state after the last round.
    name : str
        Label of the run in tables and plots (the policy's class name by default).

    Examples
    --------
    >>> from skbandit.environments import LinearBandit
    >>> from skbandit.evaluation import simulate
    >>> from skbandit.policies import LinUCB
    >>> res = simulate(LinUCB(), LinearBandit(n_features=3, n_actions=4),
    ...                n_rounds=50, random_state=0)
    >>> res.cumulative_regret.shape
    (50,)
    """

    regret: NDArray
    actions: NDArray
    rewards: NDArray
    expected_rewards: NDArray
    optimal_rewards: NDArray
    select_time: NDArray
    update_time: NDArray
    batch_size: int
    policy: Any = field(repr=False)
    name: str = ""

    @property
    def n_rounds(self) -> int:
        """Number of rounds played."""
        return self.regret.shape[0]

    @property
    def cumulative_regret(self) -> NDArray:
        """Cumulative expected regret after each round, shape (n_rounds,)."""
        return np.cumsum(self.regret)

    @property
    def total_regret(self) -> float:
        """Cumulative expected regret after the last round."""
        return float(self.regret.sum())

    @property
    def mean_reward(self) -> float:
        """Average realised reward (the accuracy on a classification bandit)."""
        if self.rewards.ndim == 2:  # a slate earns the sum of its observed scores
            return float(np.nansum(self.rewards, axis=1).mean())
        return float(self.rewards.mean())

    @property
    def total_time(self) -> float:
        """Seconds spent in the policy (select plus update)."""
        return float(self.select_time.sum() + self.update_time.sum())

    def to_frame(self):
        """One row per round, as a pandas DataFrame.

        Per-batch times are spread evenly over the rounds of the batch.

        Returns
        -------
        frame : pandas.DataFrame
            Columns ``round`` (from 1), ``batch``, ``action``, ``reward``,
            ``expected_reward``, ``optimal_reward``, ``regret``,
            ``cumulative_regret``, ``select_time`` and ``update_time``.
        """
        import pandas as pd

        n = self.n_rounds
        batch = np.arange(n) // self.batch_size
        rows_per_batch = np.bincount(batch)
        return pd.DataFrame(
            {
                "round": np.arange(1, n + 1),
                "batch": batch,
                "action": _column(self.actions),
                "reward": _column(self.rewards),
                "expected_reward": self.expected_rewards,
                "optimal_reward": self.optimal_rewards,
                "regret": self.regret,
                "cumulative_regret": self.cumulative_regret,
                "select_time": (self.select_time / rows_per_batch)[batch],
                "update_time": (self.update_time / rows_per_batch)[batch],
            }
        )

    def plot(self, ax=None, *, label=None, **kwargs):
        """Plot the cumulative expected regret against the round.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Axes to draw on; a new figure's by default.
        label : str, default=None
            Legend label; the run's ``name`` by default.
        **kwargs : dict
            Passed to ``ax.plot``.

        Returns
        -------
        ax : matplotlib Axes
            The axes drawn on.
        """
        ax = _axes(ax)
        rounds = np.arange(1, self.n_rounds + 1)
        (line,) = ax.plot(
            rounds, self.cumulative_regret, label=label or self.name, **kwargs
        )
        # Autoscaling stays on (for further curves) but stops at 0 regret / round 1.
        line.sticky_edges.x[:] = [1, self.n_rounds]
        line.sticky_edges.y[:] = [0.0]
        ax.set_xlabel("Round")
        ax.set_ylabel("Cumulative expected regret")
        ax.grid(True, alpha=0.3)
        ax.legend()
        return ax


@validate_params(
    {
        "policy": [HasMethods(["select", "partial_fit"])],
        "env": [HasMethods(["reset", "contexts", "rewards"])],
        "n_rounds": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "progress": ["boolean"],
        "name": [str, None],
    },
    prefer_skip_nested_validation=True,
)
def simulate(
    policy, env, n_rounds, *, batch_size=1, random_state=None, progress=True, name=None
):
    """Run a policy online against an environment and record its regret.

    Each batch of ``batch_size`` rounds draws contexts from ``env``, lets the policy
    ``select`` an arm for every round, realises the rewards, and then feeds the
    whole batch to ``partial_fit`` at once (delayed feedback: no round of a batch
    learns from another). ``batch_size=1`` is the fully sequential loop.

    The policy passed in is not modified: it is cloned (:func:`sklearn.base.clone`)
    and the clone, fitted on the run, is returned as ``result.policy``; a clone
    with ``n_actions=None`` (or a pipeline whose policy has it) gets the
    environment's ``n_actions``. The clone keeps
    the policy's own ``random_state``; ``random_state`` here seeds the environment
    (:meth:`env.reset <skbandit.environments.BaseEnvironment.reset>`), which is
    reset.

    Parameters
    ----------
    policy : policy estimator
        Any object with ``select(X, action_mask=...)`` and
        ``partial_fit(X, actions, rewards, action_mask=...)``, unfitted.
    env : environment
        A simulator from :mod:`skbandit.environments`.
    n_rounds : int
        Number of rounds.
    batch_size : int, default=1
        Rounds decided before their feedback is learnt from.
    random_state : int, RandomState instance or None, default=None
        Seed of the environment; ``None`` uses the environment's own.
    progress : bool, default=True
        Show a tqdm progress bar. It follows tqdm's ``disable=None`` rule: shown on
        a terminal, left out when stderr goes to a file or a pipe.
    name : str, default=None
        Label of the run; the policy's class name by default.

    Returns
    -------
    result : SimulationResult
        Per-round regret, actions and rewards, per-batch timings and the fitted
        policy.

    Examples
    --------
    >>> from skbandit.environments import LinearBandit
    >>> from skbandit.evaluation import simulate
    >>> from skbandit.policies import LinUCB
    >>> env = LinearBandit(n_actions=10, n_features=5)
    >>> res = simulate(LinUCB(fit_intercept=False), env, 200, random_state=0,
    ...                progress=False)
    >>> res.cumulative_regret.shape
    (200,)
    """
    from tqdm import tqdm

    policy = _clone_for(policy, env)
    name = name or type(policy).__name__
    env.reset(random_state)

    regret = np.empty(n_rounds)
    actions = rewards = None  # (n_rounds,) or, for slates, (n_rounds, slate_size)
    chosen_mean = np.empty(n_rounds)
    best_mean = np.empty(n_rounds)
    n_batches = -(-n_rounds // batch_size)
    select_time = np.empty(n_batches)
    update_time = np.empty(n_batches)

    bar = tqdm(
        total=n_rounds,
        desc=name,
        unit="round",
        disable=None if progress else True,
        leave=True,
        dynamic_ncols=True,
    )
    cum = 0.0
    with bar:
        for b in range(n_batches):
            start = b * batch_size
            stop = min(start + batch_size, n_rounds)
            n = stop - start
            a, r, best, got, select_time[b], update_time[b] = _play_batch(
                policy, env, n
            )
            if actions is None:
                actions = np.empty((n_rounds, *a.shape[1:]), dtype=np.int64)
                rewards = np.empty((n_rounds, *a.shape[1:]))
            actions[start:stop] = a
            rewards[start:stop] = r
            chosen_mean[start:stop] = got
            best_mean[start:stop] = best
            regret[start:stop] = best - got
            if not bar.disable:
                cum += float((best - got).sum())
                bar.update(n)
                if b % 50 == 0 or stop == n_rounds:
                    bar.set_postfix(regret=f"{cum:.1f}", refresh=False)

    return SimulationResult(
        regret=regret,
        actions=actions,
        rewards=rewards,
        expected_rewards=chosen_mean,
        optimal_rewards=best_mean,
        select_time=select_time,
        update_time=update_time,
        batch_size=int(batch_size),
        policy=policy,
        name=name,
    )


def _play_batch(policy, env, n):
    """One batch of ``n`` rounds: contexts, ``select``, rewards, ``partial_fit``.

    Returns the arms, their rewards, the best and the chosen expected rewards, and
    the seconds ``select`` and ``partial_fit`` took.
    """
    X = env.contexts(n)
    mask = env.action_mask
    expected = np.asarray(env.expected_rewards)
    t0 = perf_counter()
    a = np.asarray(policy.select(X, action_mask=mask))
    t1 = perf_counter()
    r = np.asarray(env.rewards(a), dtype=np.float64)
    t2 = perf_counter()
    if mask is None:
        policy.partial_fit(X, a, r)
    else:
        policy.partial_fit(X, a, r, action_mask=mask)
    t3 = perf_counter()
    best, got = _best_and_chosen(expected, mask, a, env)
    return a, r, best, got, t1 - t0, t3 - t2


def _best_and_chosen(expected, mask, actions, env=None):
    """Best available expected reward and the chosen one's, per round.

    A slate (2-D actions) is valued by the environment's ``optimal_value()`` and
    ``slate_value(slates)`` where it has them (the cascade of
    :class:`~skbandit.environments.CascadeBandit`); otherwise it earns the sum of
    its arms' expected scores and the best slate is the top-K of the available ones
    (the additive semi-bandit of :class:`~skbandit.environments.TopKBandit`).
    """
    available = expected if mask is None else np.where(mask, expected, -np.inf)
    rows = np.arange(actions.shape[0])
    if actions.ndim == 1:
        return available.max(axis=1), expected[rows, actions]
    if mask is None and hasattr(env, "slate_value") and hasattr(env, "optimal_value"):
        return np.asarray(env.optimal_value()), np.asarray(env.slate_value(actions))
    K = actions.shape[1]
    best = -np.sort(-available, axis=1)[:, :K].sum(axis=1)
    return best, expected[rows[:, None], actions].sum(axis=1)


def _column(values):
    """A frame column: slates (2-D) become one array per row."""
    return values if values.ndim == 1 else list(values)
