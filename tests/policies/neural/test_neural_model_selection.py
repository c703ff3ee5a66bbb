"""Tuning the neural policies with GridSearchCV on logged data (API.md §5).

The search fits each candidate on logged rounds (one ``fit`` is one delayed update:
``n_steps`` gradient steps over the training fold) and scores it off-policy on the
held-out rounds, with the policy's own ``score`` (SNIPS) or a ``make_ope_scorer``.
Networks are tiny (one hidden layer of 16) so that the whole file runs in seconds.
"""
# SPDX-License-Identifier: BSD-3-Clause

import joblib
import numpy as np
import pytest
import sklearn
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold, ParameterGrid
from sklearn.utils import Bunch
from sklearn.utils.validation import check_is_fitted

from skbandit.evaluation import ips_value, make_ope_scorer, snips_value
from skbandit.pipeline import make_bandit_pipeline
from skbandit.policies import NeuralTS, NeuralUCB
from skbandit.preprocessing import MirrorNormalizer

#: Small and fast; learning_rate=0.05 is stable for unit-norm contexts at m = 16.
SMALL = {"hidden_layer_sizes": (16,), "n_steps": 50}
#: A grid point that cannot learn (the network stays at theta_0) next to ones that can.
TS_GRID = {"nu": [1e-5, 0.1], "alpha": [0.1, 1.0], "learning_rate": [0.0, 0.05]}
N_TRAIN, N_HELD_OUT, N_ACTIONS = 240, 1000, 3


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture
def with_routing():
    """Metadata routing on for one test only (config_context: it does not leak)."""
    with sklearn.config_context(enable_metadata_routing=True):
        yield


def _argmax_bandit(seed, n=N_TRAIN + N_HELD_OUT, d=3, K=N_ACTIONS, raw=False):
    """Uniformly logged rounds where the best arm depends on the context.

    Arm ``argmax_k w_k . x`` pays 1 with probability 0.9, the others 0.1, so a
    policy that ignores the context is worth 0.9/3 + 0.1 * 2/3 = 0.367 and the best
    policy 0.9. Contexts are mirrored to unit norm (Assumption 3.4 of Zhang, Zhou, Li,
    Gu, "Neural Thompson Sampling", ICLR 2021), so ``f(x; theta_0) = 0``: a network
    that does not train ties every arm.
    """
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, d))
    W = rng.normal(size=(K, d))
    best = np.argmax(X @ W.T, axis=1)
    expected = np.where(np.arange(K) == best[:, None], 0.9, 0.1)
    actions = rng.randint(K, size=n)
    rewards = (rng.random_sample(n) < expected[np.arange(n), actions]).astype(float)
    return Bunch(
        X=X if raw else MirrorNormalizer().fit_transform(X),
        actions=actions,
        rewards=rewards,
        propensities=np.full(n, 1.0 / K),
        expected_rewards=expected,
    )


def _train(d, n=N_TRAIN):
    return d.X[:n], d.actions[:n], d.rewards[:n], d.propensities[:n]


def _routed(policy):
    return policy.set_fit_request(rewards=True).set_score_request(
        rewards=True, propensities=True
    )


def _fold_values(policy, value, X, actions, rewards, propensities, cv):
    """A hand-made cross-validation: ``value`` of each refitted clone on its fold."""
    folds = []
    for train, test in cv.split(X):
        fitted = clone(policy).fit(X[train], actions[train], rewards[train])
        folds.append(
            value(
                fitted.predict_action_proba(X[test]),
                actions[test],
                rewards=rewards[test],
                propensities=propensities[test],
            )
        )
    return np.array(folds)


def _true_value(policy, d):
    """Exact expected reward of the policy on the held-out contexts."""
    proba = policy.predict_action_proba(d.X[N_TRAIN:])
    return float(np.mean(np.sum(proba * d.expected_rewards[N_TRAIN:], axis=1)))


@pytest.fixture
def searched(global_random_seed):
    """A fitted NeuralTS search over ``TS_GRID`` and its data (fitted per test)."""
    d = _argmax_bandit(global_random_seed)
    X, actions, rewards, propensities = _train(d)
    with sklearn.config_context(enable_metadata_routing=True):
        policy = _routed(NeuralTS(n_actions=3, random_state=0, **SMALL))
        search = GridSearchCV(policy, TS_GRID, cv=3, error_score="raise")
        search.fit(X, actions, rewards=rewards, propensities=propensities)
    return search, d


@pytest.mark.parametrize("n_actions", [3, None])
def test_api_recipe_grid_search_neural_ts(with_routing, global_random_seed, n_actions):
    # API.md §5 with NeuralTS's nu (lambda's companion), alpha (lambda) and
    # learning_rate (eta): 2 x 2 x 2 candidates, 3 folds, then a refit on everything.
    d = _argmax_bandit(global_random_seed)
    X, actions, rewards, propensities = _train(d)
    policy = _routed(NeuralTS(n_actions=n_actions, random_state=0, **SMALL))
    search = GridSearchCV(policy, TS_GRID, cv=3, error_score="raise")
    search.fit(X, actions, rewards=rewards, propensities=propensities)

    candidates = list(ParameterGrid(TS_GRID))
    assert len(search.cv_results_["params"]) == len(candidates) == 8
    assert sorted(map(repr, search.cv_results_["params"])) == sorted(
        map(repr, candidates)
    )
    for key in ("mean_test_score", "std_test_score", "rank_test_score"):
        assert search.cv_results_[key].shape == (8,)
    # A learning network wins (learning_rate=0 keeps f = 0 and ties every arm; see
    # test_a_network_that_cannot_learn_does_not_win for the margins over seeds).
    assert search.best_params_["learning_rate"] == 0.05
    # SNIPS of rewards in {0, 1} is a weighted mean of them: in [0, 1].
    scores = search.cv_results_["mean_test_score"]
    assert np.all((scores >= 0.0) & (scores <= 1.0))
    # The winning cell is a hand-made 3-fold SNIPS cross-validation of its params.
    unrouted = NeuralTS(n_actions=n_actions, random_state=0, **SMALL)
    expected = _fold_values(
        unrouted.set_params(**search.best_params_),
        snips_value,
        X,
        actions,
        rewards,
        propensities,
        KFold(3),
    )
    assert search.best_score_ == pytest.approx(expected.mean(), rel=1e-6)

    best = search.best_estimator_
    check_is_fitted(best)
    assert best is not policy and not hasattr(policy, "n_actions_")
    assert {k: best.get_params()[k] for k in TS_GRID} == search.best_params_
    assert best.n_actions_ == 3 and best.n_samples_seen_ == X.shape[0]
    assert best.n_trainings_ == 1  # one fit = one update of n_steps steps
    chosen = best.select(d.X[N_TRAIN : N_TRAIN + 20])
    assert chosen.shape == (20,) and chosen.dtype.kind == "i"
    assert np.all((chosen >= 0) & (chosen < 3))
    assert search.predict(X[:5]).shape == (5,)
    assert search.score(
        X, actions, rewards=rewards, propensities=propensities
    ) == pytest.approx(best.score(X, actions, rewards, propensities=propensities))


def test_a_network_that_cannot_learn_does_not_win(searched):
    # learning_rate=0 keeps theta_0, where f = 0 on mirrored contexts, and nu=1e-5
    # leaves no exploration to speak of: its action distribution is near uniform,
    # worth about 0.367 on this problem, while 50 steps at learning_rate=0.05 find
    # the context-dependent best arm. Over seeds 0-99: frozen cross-validated SNIPS
    # values <= 0.45, the gap to the learning ones >= 0.22, the refit winner's true
    # value >= 0.65 and the frozen network's 0.35-0.38.
    search, d = searched
    results = search.cv_results_
    scores = {
        (p["learning_rate"], p["nu"], p["alpha"]): s
        for p, s in zip(results["params"], results["mean_test_score"], strict=True)
    }
    frozen = [s for (lr, nu, _), s in scores.items() if lr == 0.0 and nu == 1e-5]
    learning = [s for (lr, nu, _), s in scores.items() if lr == 0.05 and nu == 1e-5]
    assert max(frozen) < 0.52
    assert min(learning) > max(frozen) + 0.12
    assert search.best_params_["learning_rate"] == 0.05
    # Every learning candidate outranks every frozen one (true on seeds 0-99).
    learns = np.array([p["learning_rate"] > 0 for p in results["params"]])
    ranks = results["rank_test_score"]
    assert ranks[learns].max() < ranks[~learns].min()

    # The refit winner is good on fresh contexts, by the exact expected reward;
    # the frozen network is no better than guessing (0.367).
    best_value = _true_value(search.best_estimator_, d)
    frozen_policy = clone(search.estimator).set_params(learning_rate=0.0, nu=1e-5)
    frozen_value = _true_value(frozen_policy.fit(*_train(d)[:3]), d)
    assert abs(frozen_value - 0.367) < 0.05
    assert best_value > frozen_value + 0.15


def test_neural_ucb_grid_search_with_an_ope_scorer(with_routing, global_random_seed):
    # NeuralUCB's beta (gamma) and eta, scored by IPS: NeuralUCB is deterministic
    # given random_state, so each cell equals a hand-made cross-validation.
    d = _argmax_bandit(global_random_seed)
    X, actions, rewards, propensities = _train(d, n=150)
    grid = {"beta": [0.0, 1.0], "learning_rate": [0.0, 0.05]}
    cv = KFold(3)
    policy = NeuralUCB(n_actions=3, random_state=0, **SMALL).set_fit_request(
        rewards=True
    )
    search = GridSearchCV(
        policy, grid, cv=cv, scoring=make_ope_scorer("ips"), error_score="raise"
    )
    search.fit(X, actions, rewards=rewards, propensities=propensities)

    assert len(search.cv_results_["params"]) == 4
    expected = [
        _fold_values(
            NeuralUCB(n_actions=3, random_state=0, **SMALL, **params),
            ips_value,
            X,
            actions,
            rewards,
            propensities,
            cv,
        ).mean()
        for params in search.cv_results_["params"]
    ]
    assert_allclose(search.cv_results_["mean_test_score"], expected, rtol=1e-6)
    # The winner is the first best hand-made mean (sklearn's tie rule), and learns.
    assert search.best_params_ == search.cv_results_["params"][np.argmax(expected)]
    assert search.best_params_["learning_rate"] == 0.05
    best = search.best_estimator_
    check_is_fitted(best)
    assert best.select(d.X[N_TRAIN : N_TRAIN + 7]).shape == (7,)


def test_grid_search_over_a_mirrored_pipeline(with_routing, global_random_seed):
    # The paper's preprocessing as a pipeline step, tuned through step__param names.
    d = _argmax_bandit(global_random_seed, raw=True)
    X, actions, rewards, propensities = _train(d, n=150)
    pipe = make_bandit_pipeline(
        MirrorNormalizer(), _routed(NeuralTS(n_actions=3, random_state=0, **SMALL))
    )
    grid = {"neuralts__learning_rate": [0.0, 0.05], "neuralts__nu": [1e-5]}
    search = GridSearchCV(pipe, grid, cv=3, error_score="raise")
    search.fit(X, actions, rewards=rewards, propensities=propensities)
    assert search.best_params_["neuralts__learning_rate"] == 0.05
    assert search.best_estimator_.select(d.X[N_TRAIN : N_TRAIN + 4]).shape == (4,)
    assert search.best_estimator_[-1].n_features_in_ == 6  # mirrored: 2 d


def test_clone_keeps_params_and_routing(with_routing, searched):
    search, d = searched
    best = search.best_estimator_
    params = best.get_params()
    cloned = clone(best)
    assert not hasattr(cloned, "n_actions_") and not hasattr(cloned, "net_")
    assert cloned.get_params() == params
    assert cloned.hidden_layer_sizes == (16,)
    for name in TS_GRID:
        assert getattr(cloned, name) == search.best_params_[name]
    routing = cloned.get_metadata_routing()
    assert routing.fit.requests["rewards"] is True
    assert routing.score.requests["propensities"] is True

    # A clone refits to the very same network as the search's refit, and set_params
    # then changes only what it names.
    X, actions, rewards, _ = _train(d)
    refit = cloned.fit(X, actions, rewards)
    assert_allclose(refit.predict_scores(d.X[:30]), best.predict_scores(d.X[:30]))
    assert_allclose(refit.theta0_, best.theta0_)
    other = clone(best).set_params(nu=0.5)
    assert other.get_params() == {**params, "nu": 0.5}
    other.fit(X, actions, rewards)
    assert_allclose(other.predict_scores(d.X[:30]), best.predict_scores(d.X[:30]))


def test_joblib_round_trip_of_the_best_estimator(searched, tmp_path):
    search, d = searched
    best = search.best_estimator_
    path = tmp_path / "best.joblib"
    joblib.dump(best, path)
    loaded = joblib.load(path)

    X_new = d.X[N_TRAIN : N_TRAIN + 40]
    assert loaded.get_params() == best.get_params()
    assert_array_equal(loaded.theta0_, best.theta0_)
    assert_array_equal(loaded.covariance_, best.covariance_)
    assert_allclose(loaded.predict_scores(X_new), best.predict_scores(X_new))
    assert_allclose(
        loaded.predict_action_proba(X_new), best.predict_action_proba(X_new)
    )
    # The random state travels too: the same select sequence, then the same update.
    for _ in range(2):
        assert_array_equal(loaded.select(X_new), best.select(X_new))
    more = slice(N_TRAIN + 40, N_TRAIN + 80)
    a = best.select(d.X[more])
    assert_array_equal(loaded.select(d.X[more]), a)
    r = d.rewards[more]
    loaded.partial_fit(d.X[more], a, r)
    best.partial_fit(d.X[more], a, r)
    assert loaded.n_samples_seen_ == best.n_samples_seen_ == N_TRAIN + 40
    assert_allclose(loaded.predict_scores(X_new), best.predict_scores(X_new))
    assert_array_equal(loaded.select(X_new), best.select(X_new))
