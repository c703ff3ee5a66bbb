"""Several policies against one environment, over several seeds, in parallel."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import copy
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from numbers import Integral

import numpy as np
from joblib import Parallel, delayed
from numpy.typing import NDArray
from sklearn.base import clone
from sklearn.utils import check_random_state
from threadpoolctl import threadpool_limits

from skbandit.evaluation._simulate import SimulationResult, _axes, simulate
from skbandit.utils._param_validation import HasMethods, Interval, validate_params

__all__ = ["ComparisonResult", "compare"]


@dataclass
class ComparisonResult:
    """The runs of :func:`compare`: every policy on every seed.

    Parameters
    ----------
    results : list of SimulationResult
        One run per policy and seed, policy by policy (in the order of the dict
        given to :func:`compare`), seed by seed within a policy; each run's
        ``name`` is its policy's key.
    policies : list of str
        Keys of the policies, in order.
    n_runs : int
        Runs (seeds) per policy.
    env_seeds : ndarray of shape (n_runs,)
        Environment seed of each run, shared by all policies (common random
        numbers).
    policy_seeds : ndarray of shape (n_runs,)
        ``random_state`` given to the policies, per run: to every
        ``random_state`` parameter of the policy, nested ones (the steps of a
        pipeline) included.

    Examples
    --------
    >>> from skbandit.environments import LinearBandit
    >>> from skbandit.evaluation import compare
    >>> from skbandit.policies import LinUCB, RandomPolicy
    >>> result = compare({"LinUCB": LinUCB(), "random": RandomPolicy()},
    ...                  LinearBandit(n_features=3, n_actions=4), n_rounds=30, n_runs=2)
    >>> result.cumulative_regret("LinUCB").shape
    (2, 30)
    """

    results: list[SimulationResult]
    policies: list[str]
    n_runs: int
    env_seeds: NDArray = field(repr=False)
    policy_seeds: NDArray = field(repr=False)

    def _runs(self, policy: str) -> list[SimulationResult]:
        i = self.policies.index(policy)
        return self.results[i * self.n_runs : (i + 1) * self.n_runs]

    def cumulative_regret(self, policy: str) -> NDArray:
        """Cumulative regret of each run of a policy.

        Parameters
        ----------
        policy : str
            The policy's label.

        Returns
        -------
        regret : ndarray of shape (n_runs, n_rounds)
            One row per run.
        """
        return np.stack([res.cumulative_regret for res in self._runs(policy)])

    def to_frame(self):
        """One row per policy, run and round, as a tidy pandas DataFrame.

        Returns
        -------
        frame : pandas.DataFrame
            Columns ``policy``, ``run`` (from 0), ``round`` (from 1), ``regret``
            and ``cumulative_regret``.
        """
        import pandas as pd

        frames = []
        for k, res in enumerate(self.results):
            n = res.n_rounds
            frames.append(
                pd.DataFrame(
                    {
                        "policy": self.policies[k // self.n_runs],
                        "run": k % self.n_runs,
                        "round": np.arange(1, n + 1),
                        "regret": res.regret,
                        "cumulative_regret": res.cumulative_regret,
                    }
                )
            )
        return pd.concat(frames, ignore_index=True)

    def summary(self):
        """Final cumulative regret and time of each policy, over its runs.

        Returns
        -------
        table : pandas.DataFrame
            Indexed by ``policy``, with columns ``regret_mean``, ``regret_std``
            (sample standard deviation, NaN for one run), ``regret_se``
            (standard error of the mean) and ``time_mean`` (seconds in the
            policy per run).
        """
        import pandas as pd

        rows = []
        for policy in self.policies:
            runs = self._runs(policy)
            final = np.array([res.total_regret for res in runs])
            times = np.array([res.total_time for res in runs])
            std = final.std(ddof=1) if final.size > 1 else np.nan
            rows.append(
                {
                    "policy": policy,
                    "regret_mean": final.mean(),
                    "regret_std": std,
                    "regret_se": std / np.sqrt(final.size),
                    "time_mean": times.mean(),
                }
            )
        return pd.DataFrame(rows).set_index("policy")

    def plot(self, ax=None):
        """Plot each policy's mean cumulative regret, with a standard-error band.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Axes to draw on; a new figure's by default.

        Returns
        -------
        ax : matplotlib Axes
            The axes drawn on.
        """
        ax = _axes(ax)
        for policy in self.policies:
            curves = self.cumulative_regret(policy)
            mean = curves.mean(axis=0)
            if curves.shape[0] > 1:
                se = curves.std(axis=0, ddof=1) / np.sqrt(curves.shape[0])
            else:
                se = np.zeros_like(mean)
            rounds = np.arange(1, mean.size + 1)
            (line,) = ax.plot(rounds, mean, label=policy)
            ax.fill_between(
                rounds, mean - se, mean + se, color=line.get_color(), alpha=0.2
            )
        ax.set_xlabel("Round")
        ax.set_ylabel("Cumulative expected regret")
        ax.grid(True, alpha=0.3)
        ax.legend()
        return ax


@contextmanager
def _fixed_threads(n_threads):
    """Run the block with ``n_threads`` torch and BLAS/OpenMP threads, then restore.

    Float32 matrix products (MKL, oneDNN) split their sums by thread count, so a
    network trained on 2 threads ends a few ulps away from one trained on 8, and
    a bandit run amplifies that into different arms. torch is set only when the
    process has already imported it (a neural policy has): evaluation does not
    depend on torch.
    """
    if n_threads is None:
        yield
        return
    torch = sys.modules.get("torch")
    before = None if torch is None else torch.get_num_threads()
    with threadpool_limits(limits=n_threads):
        if torch is not None:
            torch.set_num_threads(n_threads)
        try:
            yield
        finally:
            if torch is not None:
                torch.set_num_threads(before)


def _seed_policy(policy, seed):
    """Set every ``random_state`` of ``policy``, nested ones included, to ``seed``.

    A policy inside a :class:`~skbandit.pipeline.BanditPipeline` has its
    ``random_state`` under ``<step>__random_state``; a pipeline left with ``None``
    there would draw fresh seeds from the OS in every run.
    """
    params = policy.get_params(deep=True) if hasattr(policy, "get_params") else {}
    keys = [k for k in params if k.rsplit("__", 1)[-1] == "random_state"]
    if keys:
        policy.set_params(**dict.fromkeys(keys, seed))
    return policy


def _run_one(policy, env, n_rounds, batch_size, env_seed, policy_seed, name, n_threads):
    """One run, on private copies: threads of a worker never share state."""
    policy = _seed_policy(clone(policy), policy_seed)
    # Set here too: in a worker process the caller's limits do not apply.
    with _fixed_threads(n_threads):
        return simulate(
            policy,
            copy.deepcopy(env),
            n_rounds,
            batch_size=batch_size,
            random_state=env_seed,
            progress=False,
            name=name,
        )


@validate_params(
    {
        "policies": [dict],
        "env": [HasMethods(["reset", "contexts", "rewards"])],
        "n_rounds": [Interval(Integral, 1, None, closed="left")],
        "n_runs": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "n_jobs": [Integral, None],
        "n_threads": [Interval(Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
        "progress": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def compare(
    policies,
    env,
    n_rounds,
    *,
    n_runs=8,
    batch_size=1,
    n_jobs=None,
    n_threads=1,
    random_state=None,
    progress=False,
):
    """Run several policies against an environment over several seeds.

    Every policy plays ``n_runs`` runs of :func:`simulate`. Run ``i`` seeds the
    environment with the ``i``-th seed drawn from ``random_state``, the same for
    all policies (common random numbers), and sets every ``random_state`` of the
    policy (its own, or its step's in a pipeline) to the ``i``-th of a second
    series of seeds. Every run computes with ``n_threads`` threads wherever it
    runs, so the result depends on ``random_state`` only, not on ``n_jobs`` or
    the backend (nor on the core count of machines of one kind). The runs are
    :func:`joblib.Parallel` tasks: under ``joblib.parallel_config(backend="dask")``
    they spread over a Dask cluster unchanged.

    Parameters
    ----------
    policies : dict of str to policy estimator
        Policies to compare, by label; they are cloned, not modified.
    env : environment
        A simulator from :mod:`skbandit.environments`; each run uses a copy.
    n_rounds : int
        Rounds per run.
    n_runs : int, default=8
        Runs (seeds) per policy.
    batch_size : int, default=1
        Rounds decided before their feedback is learnt from.
    n_jobs : int, default=None
        Parallel jobs, as in :class:`joblib.Parallel`; ``None`` means 1 unless in a
        :func:`joblib.parallel_config` context (under the ``"dask"`` backend, the
        cluster's threads; a cluster of one thread runs the tasks inline).
    n_threads : int or None, default=1
        Torch and BLAS/OpenMP threads of each run, set in whichever process runs
        it and restored afterwards. Float32 network training sums in an order
        that depends on the thread count, so a fixed count is what makes neural
        runs identical across ``n_jobs`` and machines; parallelism comes from
        ``n_jobs``. ``None`` leaves the threads as each process has them (the
        caller's for ``n_jobs=1``, ``cpu_count // n_jobs`` in loky workers): faster
        for one large network run serially, but neural results may then change
        with ``n_jobs``.
    random_state : int, RandomState instance or None, default=None
        Seeds the environment and policy seeds of the runs.
    progress : bool, default=False
        Show a tqdm progress bar over the runs.

    Returns
    -------
    result : ComparisonResult
        The runs, with ``to_frame()``, ``summary()`` and ``plot()``.

    Examples
    --------
    >>> from skbandit.environments import LinearBandit
    >>> from skbandit.evaluation import compare
    >>> from skbandit.policies import LinTS, LinUCB
    >>> env = LinearBandit(n_actions=10, n_features=5)
    >>> res = compare({"LinUCB": LinUCB(fit_intercept=False),
    ...                "LinTS": LinTS(fit_intercept=False)},
    ...               env, n_rounds=100, n_runs=2, random_state=0)
    >>> res.summary().shape
    (2, 4)
    """
    if not policies:
        raise ValueError("policies must hold at least one policy.")
    names = [str(name) for name in policies]
    rng = check_random_state(random_state)
    seeds = rng.randint(np.iinfo(np.int32).max, size=(2, n_runs))
    env_seeds, policy_seeds = seeds[0], seeds[1]
    tasks = [
        delayed(_run_one)(
            policy,
            env,
            n_rounds,
            batch_size,
            int(env_seeds[i]),
            int(policy_seeds[i]),
            name,
            n_threads,
        )
        for name, policy in zip(names, policies.values(), strict=True)
        for i in range(n_runs)
    ]
    # Held over the whole call too, so that runs on threads of this process
    # (n_jobs=1, the threading backend) all restore to the same count.
    with _fixed_threads(n_threads):
        if progress:
            from tqdm import tqdm

            out = Parallel(n_jobs=n_jobs, return_as="generator")(tasks)
            results = list(tqdm(out, total=len(tasks), desc="compare", unit="run"))
        else:
            results = Parallel(n_jobs=n_jobs)(tasks)
    return ComparisonResult(
        results=list(results),
        policies=names,
        n_runs=int(n_runs),
        env_seeds=env_seeds,
        policy_seeds=policy_seeds,
    )
