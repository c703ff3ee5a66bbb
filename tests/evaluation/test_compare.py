"""Tests of skbandit.evaluation.compare and the replay scorer."""
# SPDX-License-Identifier: BSD-3-Clause

import threading

import matplotlib
import numpy as np
import pytest
import sklearn
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.model_selection import GridSearchCV, KFold

from skbandit.environments import LinearBandit
from skbandit.evaluation import (
    ComparisonResult,
    compare,
    make_ope_scorer,
    replay_value,
    simulate,
)
from skbandit.policies import LinUCB, RandomPolicy

matplotlib.use("Agg")

N_ROUNDS, N_RUNS = 30, 3


def _setup():
    env = LinearBandit(n_actions=5, n_features=3)
    policies = {
        "ucb": LinUCB(fit_intercept=False),
        "random": RandomPolicy(random_state=123),
    }
    return env, policies


def _compare(**kwargs):
    env, policies = _setup()
    return compare(policies, env, N_ROUNDS, n_runs=N_RUNS, random_state=0, **kwargs)


def _regrets(res):
    return np.stack([r.regret for r in res.results])


def test_compare_matches_manual_simulate():
    env, policies = _setup()
    res = _compare()
    assert isinstance(res, ComparisonResult)
    assert res.policies == ["ucb", "random"] and len(res.results) == 2 * N_RUNS

    summary = res.summary()
    assert summary.shape == (2, 4)
    assert list(summary.index) == ["ucb", "random"]
    # Each run plays on a copy: the environment given is not touched.
    assert not hasattr(env, "_rng")
    for name, policy in policies.items():
        finals = []
        for i in range(N_RUNS):
            p = policy
            if "random_state" in policy.get_params():
                p = sklearn.clone(policy).set_params(
                    random_state=int(res.policy_seeds[i])
                )
            manual = simulate(
                p, env, N_ROUNDS, random_state=int(res.env_seeds[i]), progress=False
            )
            run = res.results[res.policies.index(name) * N_RUNS + i]
            assert_array_equal(run.regret, manual.regret)
            assert_array_equal(run.actions, manual.actions)
            finals.append(manual.total_regret)
        finals = np.array(finals)
        row = summary.loc[name]
        assert row["regret_mean"] == pytest.approx(finals.mean())
        assert row["regret_std"] == pytest.approx(finals.std(ddof=1))
        assert row["regret_se"] == pytest.approx(finals.std(ddof=1) / np.sqrt(N_RUNS))
        times = [r.total_time for r in res.results[res.policies.index(name) * N_RUNS :]]
        assert row["time_mean"] == pytest.approx(np.mean(times[:N_RUNS]))
        assert 0 < row["time_mean"]  # the runs took time: it was measured


def test_compare_is_reproducible_and_seeds_differ():
    from joblib import parallel_config

    a = _compare()
    # Threads share the policy and environment objects given: each run copies them.
    with parallel_config(backend="threading"):
        b = _compare(n_jobs=2)
    assert_array_equal(_regrets(a), _regrets(b))
    assert len(set(a.env_seeds.tolist())) == N_RUNS
    # Different seeds give different runs of the random policy.
    assert not np.array_equal(a.results[N_RUNS].actions, a.results[N_RUNS + 1].actions)


def test_to_frame_and_plot():
    res = _compare(progress=True)
    frame = res.to_frame()
    assert list(frame.columns) == [
        "policy",
        "run",
        "round",
        "regret",
        "cumulative_regret",
    ]
    assert len(frame) == 2 * N_RUNS * N_ROUNDS
    last = frame[frame["round"] == N_ROUNDS].groupby("policy", sort=False)
    assert_allclose(
        last["cumulative_regret"].mean().to_numpy(),
        res.summary()["regret_mean"].to_numpy(),
    )
    ax = res.plot()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["ucb", "random"]
    assert len(ax.lines) == 2 and len(ax.collections) == 2


def test_compare_rejects_empty_policies():
    with pytest.raises(ValueError, match="at least one"):
        compare({}, LinearBandit(), 10)


class _ThreadRecorder(LinUCB):
    """LinUCB that remembers the thread it learnt in."""

    def partial_fit(self, X, actions, rewards=None, **kwargs):
        self.thread_ = threading.current_thread().name
        return super().partial_fit(X, actions, rewards, **kwargs)


def test_compare_on_dask_matches_sequential():
    pytest.importorskip("dask")
    distributed = pytest.importorskip("distributed")
    from joblib import parallel_config

    env, policies = _setup()
    policies["recorder"] = _ThreadRecorder(fit_intercept=False)
    kwargs = dict(n_runs=N_RUNS, random_state=0)
    expected = compare(policies, env, N_ROUNDS, **kwargs)
    # Two threads: with one, joblib's effective n_jobs is 1 and it runs inline.
    cluster = distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    )
    with cluster, distributed.Client(cluster):
        with parallel_config(backend="dask"):
            got = compare(policies, env, N_ROUNDS, **kwargs)
    assert_array_equal(_regrets(got), _regrets(expected))
    threads = {r.policy.thread_ for r in got.results if r.name == "recorder"}
    assert all("Dask" in t for t in threads), threads
    assert_array_equal(got.summary()["regret_mean"], expected.summary()["regret_mean"])


def test_replay_scorer_in_grid_search(shared_data):
    d = shared_data
    with sklearn.config_context(enable_metadata_routing=True):
        policy = LinUCB(n_actions=3).set_fit_request(rewards=True)
        scorer = make_ope_scorer("replay")
        search = GridSearchCV(policy, {"beta": [0.0, 2.0]}, cv=KFold(3), scoring=scorer)
        search.fit(d.X, d.actions, rewards=d.rewards, propensities=d.propensities)
        scores = search.cv_results_["mean_test_score"]
        assert scores.shape == (2,) and np.all(np.isfinite(scores))
        # One fold by hand.
        train, test = next(KFold(3).split(d.X))
        fitted = LinUCB(n_actions=3, beta=0.0).fit(
            d.X[train], d.actions[train], d.rewards[train]
        )
        expected = replay_value(
            fitted.predict_action_proba(d.X[test]),
            d.actions[test],
            rewards=d.rewards[test],
        )
        assert search.cv_results_["split0_test_score"][0] == pytest.approx(expected)
