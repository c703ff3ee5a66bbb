"""Policies on any scikit-learn regressor: SquareCB, FALCON, BootstrappedTS."""
# SPDX-License-Identifier: BSD-3-Clause

import math

import joblib
import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import sparse
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.linear_model import Ridge, SGDRegressor
from sklearn.tree import DecisionTreeRegressor

from skbandit.policies import (
    FALCON,
    BootstrappedTS,
    EpsilonGreedy,
    LinUCB,
    RandomPolicy,
    SquareCB,
)
from skbandit.policies._core._online_ridge import OnlineRidge
from skbandit.policies._estimator._base import inverse_gap_weights

K, D = 3, 4


def _logs(seed, n, n_arms=K):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, D))
    return X, rng.integers(n_arms, size=n), rng.random(n)


class RecordingRegressor(RegressorMixin, BaseEstimator):
    """Predicts 0 and records the weights of its ``partial_fit`` calls."""

    def partial_fit(self, X, y, sample_weight=None):
        self.weights_ = [*getattr(self, "weights_", []), sample_weight]
        return self

    def fit(self, X, y, sample_weight=None):
        self.weights_ = [sample_weight]
        return self

    def predict(self, X):
        return np.zeros(X.shape[0])


class FailingRegressor(RegressorMixin, BaseEstimator):
    """Learns the mean reward, and raises on a reward above ``limit``."""

    def __init__(self, limit=10.0):
        self.limit = limit

    def partial_fit(self, X, y, sample_weight=None):
        if np.max(y) > self.limit:
            raise ValueError("reward above the limit")
        self.total_ = getattr(self, "total_", 0.0) + float(np.sum(y))
        self.count_ = getattr(self, "count_", 0) + len(y)
        return self

    def fit(self, X, y, sample_weight=None):
        return self.partial_fit(X, y)

    def predict(self, X):
        return np.full(X.shape[0], self.total_ / self.count_)


# ----------------------------------------------------------- inverse-gap weighting
def test_inverse_gap_weights_match_the_hand_derivation():
    # scores (1, 0.5, 0), K = 3, gamma = 4: arm 1 gets 1 / (3 + 4 * 0.5) = 1/5,
    # arm 2 gets 1 / (3 + 4 * 1) = 1/7, the best arm the rest, 1 - 1/5 - 1/7.
    proba = inverse_gap_weights(np.array([[1.0, 0.5, 0.0]]), 4.0)
    assert_allclose(proba, [[1 - 1 / 5 - 1 / 7, 1 / 5, 1 / 7]], rtol=1e-12)
    # Two arms tied at the best share the rest: arm 2 gets 1 / (3 + 2) = 1/5.
    proba = inverse_gap_weights(np.array([[1.0, 1.0, 0.0]]), 2.0)
    assert_allclose(proba, [[0.4, 0.4, 0.2]], rtol=1e-12)
    # A mask removes arm 0, the best: K = 2 arms, arm 2 gets 1 / (2 + 4 * 0.5).
    proba = inverse_gap_weights(
        np.array([[1.0, 0.5, 0.0]]), 4.0, np.array([[False, True, True]])
    )
    assert_allclose(proba, [[0.0, 0.75, 0.25]], rtol=1e-12)
    # gamma = 0 is uniform over the available arms.
    assert_allclose(inverse_gap_weights(np.array([[3.0, 0.0]]), 0.0), [[0.5, 0.5]])


def test_squarecb_plays_the_inverse_gap_weights_of_its_predictions():
    X, actions, rewards = _logs(0, 50)
    policy = SquareCB(estimator=Ridge(), random_state=0).fit(X, actions, rewards)
    # gamma_t = 10 sqrt(t), t = 51 the next round (Vowpal Wabbit's defaults)
    assert policy.gamma_ == pytest.approx(10 * math.sqrt(51), rel=1e-12)
    scores = policy.predict_scores(X[:5])
    gap = scores.max(axis=1, keepdims=True) - scores
    expected = 1 / (K + policy.gamma_ * gap)
    best = scores.argmax(axis=1)
    expected[np.arange(5), best] = 0.0
    expected[np.arange(5), best] = 1 - expected.sum(axis=1)
    # float64 arithmetic on the same numbers in another order: 1e-12 is ample
    assert_allclose(policy.predict_action_proba(X[:5]), expected, rtol=1e-12)


#: Policies whose select must draw from their predict_action_proba. BootstrappedTS
#: with 8 replicas: with 4, its law on a context was often one arm (every replica
#: agreeing), which a select that ignores the law also draws.
LAW_POLICIES = [
    SquareCB(estimator=Ridge(), gamma_scale=0.5),
    FALCON(estimator=DecisionTreeRegressor(max_depth=2)),
    BootstrappedTS(n_models=8),
]
#: Draws of each of the two contexts.
N_LAW_DRAWS = 4000


def _assert_select_follows_the_law(policy, X, masked_arm):
    """select's arm frequencies on two contexts match predict_action_proba.

    The two contexts ``X[:2]`` alternate in one batch of ``2 * N_LAW_DRAWS`` rows, so a
    select that draws a row from another row's law fails; with and without a mask
    on ``masked_arm``. Margin: 5 binomial standard errors of each frequency, floored
    at one draw in ``N_LAW_DRAWS`` (arms of probability 0 or 1).
    """
    n = N_LAW_DRAWS
    x = np.tile(X[:2], (n, 1))  # rows 0, 2, 4, ... context 0; 1, 3, ... context 1
    mask = np.ones((2 * n, K), dtype=bool)
    mask[:, masked_arm] = False
    for m in (None, mask):
        proba = policy.predict_action_proba(
            X[:2], action_mask=None if m is None else m[:2]
        )
        arms = policy.select(x, action_mask=m)
        for row in (0, 1):
            freq = np.bincount(arms[row::2], minlength=K) / n
            p = proba[row]
            margin = 5 * np.sqrt(np.maximum(p * (1 - p), 1 / n) / n)
            assert np.all(np.abs(freq - p) <= margin), (row, m is None, freq, p)


def _fitted_for_the_law(policy, seed):
    X, actions, rewards = _logs(seed, 60)
    policy = clone(policy).set_params(n_actions=K, random_state=seed)
    policy.fit(X, actions, rewards)
    # Two contexts whose laws differ most, so that a row drawn from the other
    # row's law shows; mask the arm the first plays most, so that ignoring the
    # mask shows.
    proba = policy.predict_action_proba(X)
    other = int(np.abs(proba - proba[0]).sum(axis=1).argmax())
    return policy, X[[0, other]], int(proba[0].argmax())


@pytest.mark.parametrize("policy", LAW_POLICIES, ids=lambda p: type(p).__name__)
def test_select_draws_from_the_exact_law(policy, global_random_seed):
    _assert_select_follows_the_law(*_fitted_for_the_law(policy, global_random_seed))


def _greedy_select(self, X, *, action_mask=None, **_):
    scores = self.predict_scores(X)
    if action_mask is not None:
        scores = np.where(action_mask, scores, -np.inf)
    return scores.argmax(axis=1)


def _mask_ignoring_select(self, X, *, action_mask=None, **kw):
    return type(self).__mro__[1].select(self, X, **kw)


def _first_row_select(self, X, *, action_mask=None, **kw):
    n = X.shape[0]
    mask = None if action_mask is None else np.repeat(action_mask[:1], n, axis=0)
    unbroken = type(self).__mro__[1].select
    return unbroken(self, np.repeat(X[:1], n, axis=0), action_mask=mask, **kw)


@pytest.mark.parametrize("policy", LAW_POLICIES, ids=lambda p: type(p).__name__)
@pytest.mark.parametrize(
    "broken_select", [_greedy_select, _mask_ignoring_select, _first_row_select]
)
def test_the_law_check_fails_a_select_off_the_law(policy, broken_select):
    # The check above can fail: a select that plays the best predicted arm, ignores
    # the mask, or draws every row from the first row's law is caught (seed 0).
    Broken = type("Broken", (type(policy),), {"select": broken_select})
    broken, X, masked_arm = _fitted_for_the_law(
        Broken(**policy.get_params(deep=False)), 0
    )
    with pytest.raises(AssertionError):
        _assert_select_follows_the_law(broken, X, masked_arm)


# ------------------------------------------------------------------------ FALCON
def test_falcon_refits_at_the_start_of_doubling_epochs():
    X, actions, rewards = _logs(1, 40)
    policy = FALCON(estimator=Ridge(), n_actions=K, random_state=0)
    refits, epochs = [], []
    previous = policy.select(X[:1]) is not None and policy.predict_scores(X)
    for t in range(40):
        policy.partial_fit(X[t : t + 1], actions[t : t + 1], rewards[t : t + 1])
        scores = policy.predict_scores(X)
        if not np.array_equal(scores, previous):
            refits.append(t + 1)
        previous = scores
        epochs.append(policy.epoch_)
    # tau_m = 2^m: refits after rounds 2, 4, 8, 16, 32 (line 3 of algorithm 1)
    assert refits == [2, 4, 8, 16, 32]
    assert epochs[:9] == [1, 2, 2, 3, 3, 3, 3, 4, 4]


def test_falcon_gamma_follows_the_papers_formula():
    X, actions, rewards = _logs(2, 8)
    policy = FALCON(n_actions=K, gamma_scale=2.0, delta=0.1, random_state=0)
    policy.partial_fit(X[:1], actions[:1], rewards[:1])
    assert policy.gamma_ == 1.0  # gamma_1 = 1
    policy.partial_fit(X[1:8], actions[1:8], rewards[1:8])
    # epoch 4 (8 < t <= 16): tau_3 = 8, gamma = 2 sqrt(3 * 8 / log(8 / 0.1))
    assert policy.epoch_ == 4
    assert policy.gamma_ == pytest.approx(2 * math.sqrt(24 / math.log(80)), rel=1e-12)
    assert policy.gamma_ == pytest.approx(4.6806, abs=1e-4)  # by hand: 2 sqrt(5.477)


@pytest.mark.parametrize("refit_on, first_row", [("all", 0), ("last_epoch", 4)])
def test_falcon_fits_on_all_rounds_or_on_the_last_epoch(refit_on, first_row):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((8, K, D))
    actions, rewards = rng.integers(K, size=8), rng.random(8)
    policy = FALCON(estimator=Ridge(alpha=0.5), refit_on=refit_on, random_state=0)
    policy.partial_fit(X[:4], actions[:4], rewards[:4])
    policy.partial_fit(X[4:], actions[4:], rewards[4:])
    # per-arm contexts: one model on the pulled arms' rows of the chosen rounds
    rows = X[np.arange(8), actions][first_row:]
    oracle = Ridge(alpha=0.5).fit(rows, rewards[first_row:])
    expected = oracle.predict(X[:3].reshape(-1, D)).reshape(3, K)
    # the same Ridge solve on the same rows: float64 round-off only
    assert_allclose(policy.predict_scores(X[:3]), expected, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- BootstrappedTS
def _assert_bootstrap_weights(weights, bootstrap):
    """Four replicas' weights of 3000 rows follow the bootstrap law, independently.

    Poisson(1) counts: the frequency of each count 0, 1, 2, 3 and of 4 or more
    within 5 binomial standard errors of its probability (0.368, 0.368, 0.184,
    0.061, 0.019; a standard error of 0.0044 at most over 12000 draws). Bernoulli:
    the values 0 and 2, each with frequency 1/2 (standard error 0.0046). Then the
    mean 1 (standard error 0.01) and uncorrelated replicas (0.018 for 3000 rows).
    """
    assert weights.shape == (4, 3000)
    if bootstrap == "poisson":
        assert_array_equal(weights, np.round(weights))  # counts
        counts = np.minimum(weights, 4).astype(int).ravel()
        freq = np.bincount(counts, minlength=5) / counts.size
        pmf = np.exp(-1) / np.array([math.factorial(k) for k in range(4)])
        law = np.append(pmf, 1 - pmf.sum())
    else:
        assert set(np.unique(weights)) <= {0.0, 2.0}
        freq = np.array([np.mean(weights == 0), np.mean(weights == 2)])
        law = np.array([0.5, 0.5])
    margin = 5 * np.sqrt(law * (1 - law) / weights.size)
    assert np.all(np.abs(freq - law) <= margin), (freq, law)
    assert abs(weights.mean() - 1.0) < 0.05
    assert abs(np.corrcoef(weights[0], weights[1])[0, 1]) < 0.1


@pytest.mark.parametrize("bootstrap", ["poisson", "bernoulli"])
def test_bootstrap_weights_of_online_replicas(bootstrap):
    X, _, rewards = _logs(4, 3000, n_arms=1)
    policy = BootstrappedTS(
        n_actions=1,
        estimator=RecordingRegressor(),
        n_models=4,
        bootstrap=bootstrap,
        random_state=0,
    )
    policy.fit(X, np.zeros(3000, dtype=int), rewards)
    weights = np.array([models[0].weights_[0] for models in policy._models.models])
    _assert_bootstrap_weights(weights, bootstrap)


def test_the_bootstrap_weight_check_fails_other_laws():
    # The check above can fail: {0, 2} weights (mean 1 and variance 1, as
    # Poisson(1)'s) are not Poisson; Poisson counts are not Bernoulli; replicas
    # that share their weights are not independent.
    rng = np.random.default_rng(0)
    coin = 2.0 * rng.integers(2, size=(4, 3000))
    poisson = rng.poisson(1.0, size=(4, 3000)).astype(float)
    _assert_bootstrap_weights(coin, "bernoulli")
    _assert_bootstrap_weights(poisson, "poisson")
    for weights, law in [
        (coin, "poisson"),
        (poisson, "bernoulli"),
        (np.repeat(coin[:1], 4, axis=0), "bernoulli"),
    ]:
        with pytest.raises(AssertionError):
            _assert_bootstrap_weights(weights, law)


def test_bootstrapped_ts_proba_is_the_replicas_mean_greedy_choice():
    X, actions, rewards = _logs(5, 60)
    # a linear model on the contexts as given: the replicas' predictions by hand
    policy = BootstrappedTS(
        n_actions=K, estimator=OnlineRidge(), n_models=5, random_state=0
    )
    policy.fit(X, actions, rewards)
    replicas = [
        np.column_stack([models[k].predict(X[:4]) for k in range(K)])
        for models in policy._models.models
    ]
    greedy = [np.eye(K)[r.argmax(axis=1)] for r in replicas]
    # exact: the mean of 5 one-hot rows (no ties among continuous predictions)
    assert_allclose(policy.predict_action_proba(X[:4]), np.mean(greedy, axis=0))
    mean, std = policy.predict_scores(X[:4], return_std=True)
    assert_allclose(mean, np.mean(replicas, axis=0), rtol=1e-12)
    assert_allclose(std, np.std(replicas, axis=0), rtol=1e-10, atol=1e-14)


def test_bootstrapped_ts_refits_resample_each_replica():
    X, actions, rewards = _logs(6, 64)
    # an estimator without partial_fit: refit on the doubling schedule
    policy = BootstrappedTS(n_actions=K, estimator=Ridge(), n_models=3, random_state=0)
    policy.fit(X, actions, rewards)
    coefs = [models[0].coef_ for models in policy._models.models]
    assert not np.allclose(coefs[0], coefs[1])  # different bootstrap samples
    full = Ridge().fit(X[actions == 0], rewards[actions == 0]).coef_
    assert all(not np.allclose(c, full) for c in coefs)


# ----------------------------------------------------------------- the contract
POLICIES = [
    SquareCB(estimator=SGDRegressor()),
    FALCON(estimator=DecisionTreeRegressor(max_depth=3)),
    BootstrappedTS(estimator=SGDRegressor(), n_models=3),
    EpsilonGreedy(estimator=Ridge()),
]


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: type(p).__name__)
def test_the_estimator_is_never_modified(policy):
    X, actions, rewards = _logs(7, 40)
    before = joblib.hash(policy.estimator)
    policy.set_params(n_actions=K, random_state=0).fit(X, actions, rewards)
    policy.partial_fit(X[:5], actions[:5], rewards[:5])
    policy.select(X)
    assert joblib.hash(policy.estimator) == before
    assert not hasattr(policy.estimator, "n_features_in_")


def test_a_failing_estimator_leaves_the_policy_unchanged():
    from skbandit.utils.estimator_checks import _state

    X, actions, rewards = _logs(8, 20)
    policy = SquareCB(n_actions=K, estimator=FailingRegressor(), random_state=0)
    policy.fit(X, actions, rewards)
    before = _state(policy)
    with pytest.raises(ValueError, match="above the limit"):
        policy.partial_fit(X[:3], actions[:3], [0.0, 11.0, 0.0])
    assert _state(policy) == before


def test_estimator_parameters_reach_grid_search():
    sklearn = pytest.importorskip("sklearn")
    from sklearn.model_selection import GridSearchCV

    policy = FALCON(estimator=DecisionTreeRegressor(), random_state=0)
    assert policy.get_params()["estimator__max_depth"] is None
    assert policy.set_params(estimator__max_depth=2).estimator.max_depth == 2
    rng = np.random.default_rng(9)
    n = 240
    X = rng.standard_normal((n, D))
    actions = rng.integers(K, size=n)
    # Arm 0 pays on an exclusive or of two features, arm 1 on its negation: one
    # split cannot tell them apart, two can.
    xor = (X[:, 0] > 0) != (X[:, 1] > 0)
    rewards = np.select([actions == 0, actions == 1], [xor, ~xor], 0.2).astype(float)
    with sklearn.config_context(enable_metadata_routing=True):
        policy = policy.set_fit_request(rewards=True).set_score_request(
            rewards=True, propensities=True
        )
        search = GridSearchCV(policy, {"estimator__max_depth": [1, 4]}, cv=3)
        search.fit(X, actions, rewards=rewards, propensities=np.full(n, 1 / K))
    scores = search.cv_results_["mean_test_score"]
    # Had the depth not reached the fitted trees, both candidates would fit the
    # same trees (one seed) and score alike; depth 4 scores 0.64 here, depth 1
    # 0.52 (at data seeds 0-5: 0.49-0.71 against 0.41-0.57).
    assert scores[1] > scores[0] + 0.05, scores
    best = search.best_estimator_
    assert search.best_params_ == {"estimator__max_depth": 4}
    trees = [m for models in best._models.models for m in models if m is not None]
    assert all(tree.max_depth == 4 for tree in trees)
    assert max(tree.get_depth() for tree in trees) > 1


def test_a_pickled_pipeline_ending_in_falcon_continues_in_a_fresh_process(
    tmp_path, fresh_process_env
):
    import subprocess
    import sys

    from sklearn.preprocessing import StandardScaler

    from skbandit.pipeline import make_bandit_pipeline

    X, actions, rewards = _logs(10, 50)
    pipe = make_bandit_pipeline(
        StandardScaler(),
        FALCON(n_actions=K, estimator=DecisionTreeRegressor(), random_state=0),
    )
    pipe.partial_fit(X, actions, rewards)
    pipe.select(X[:5])  # mid-stream: the RNG has moved
    path = tmp_path / "pipe.joblib"
    joblib.dump(pipe, path)
    np.save(tmp_path / "X.npy", X)
    here = pipe.select(X)
    script = (
        "import joblib, numpy as np, sys\n"
        f"pipe = joblib.load({str(path)!r})\n"
        f"X = np.load({str(tmp_path / 'X.npy')!r})\n"
        "sys.stdout.write(','.join(map(str, pipe.select(X))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True,
        env=fresh_process_env(), check=True,
    )  # fmt: skip
    assert out.stdout == ",".join(map(str, here))


# ---------------------------------------------------------------- sparse contexts
def test_sparse_contexts_give_the_dense_models():
    X, actions, rewards = _logs(11, 40)
    X[np.abs(X) < 0.7] = 0.0  # about half zeros
    dense = FALCON(
        n_actions=K,
        estimator=Ridge(solver="cholesky", fit_intercept=False),
        random_state=0,
    )
    sparse_policy = FALCON(
        n_actions=K,
        estimator=Ridge(solver="cholesky", fit_intercept=False),
        random_state=0,
    )
    dense.fit(X, actions, rewards)
    sparse_policy.fit(sparse.csr_matrix(X), actions, rewards)
    # two Ridge solves of the same normal equations: float64 round-off only
    assert_allclose(
        sparse_policy.predict_scores(sparse.csr_matrix(X)),
        dense.predict_scores(X),
        rtol=1e-8,
        atol=1e-10,
    )
    assert_array_equal(sparse_policy.select(sparse.csr_matrix(X)), dense.select(X))


def _scores_of_clones(policy, Xs, actions, rewards):
    """Each arm's scores from unfitted clones of the policy's models (same
    parameters and seeds), each given its ``partial_fit`` on the same sparse rows
    here: per-arm models on their arm's rows, one shared model on
    ``[x, one_hot(arm)]``."""

    def encoded(arms):
        return sparse.hstack([Xs, np.eye(K)[arms]], format="csr")

    blocks = policy._models.models[0]
    if len(blocks) == 1:
        model = clone(blocks[0]).partial_fit(encoded(actions), rewards)
        return np.column_stack(
            [model.predict(encoded(np.full(Xs.shape[0], k))) for k in range(K)]
        )
    return np.column_stack(
        [
            clone(blocks[k])
            .partial_fit(Xs[actions == k], rewards[actions == k])
            .predict(Xs)
            for k in range(K)
        ]
    )


@pytest.mark.parametrize(
    "policy, reference",
    [
        (SquareCB(n_actions=K, random_state=0), "clones"),
        (
            # a linear model on the contexts as given (sparse ones are never
            # standardised, dense ones would be by the default model)
            BootstrappedTS(
                n_actions=K, estimator=OnlineRidge(), n_models=2, random_state=0
            ),
            "dense",
        ),
        (
            EpsilonGreedy(n_actions=K, estimator=SGDRegressor(), random_state=0),
            "clones",
        ),
        (SquareCB(n_actions=K, arm_models="shared", random_state=0), "clones"),
    ],
    ids=["SquareCB", "BootstrappedTS", "EpsilonGreedy-SGD", "SquareCB-shared"],
)
def test_sparse_contexts_are_accepted_online(policy, reference):
    X, actions, rewards = _logs(12, 30)
    dense = np.where(np.abs(X) < 0.7, 0.0, X)  # about half zeros
    Xs = sparse.csr_matrix(dense)
    twin = clone(policy)
    policy.partial_fit(Xs, actions, rewards)
    assert policy.select(Xs).shape == (30,)
    scores = policy.predict_scores(Xs)
    # A sparse batch scores as its dense copy: the same models, the same products
    # in another storage (float64 round-off; measured 1e-16).
    assert_allclose(scores, policy.predict_scores(dense), rtol=1e-10, atol=1e-12)
    assert_allclose(
        policy.predict_action_proba(Xs), policy.predict_action_proba(dense),
        rtol=1e-10, atol=1e-12,
    )  # fmt: skip
    # What was learnt from the sparse rows. SGD learns its intercept 100 times
    # slower from sparse rows (scikit-learn's sparse intercept decay), so its
    # reference is the same partial_fit calls on the same sparse rows; Ridge
    # refits solve the same normal equations from either storage (measured 1e-15).
    if reference == "clones":
        expected = _scores_of_clones(policy, Xs, actions, rewards)
    else:
        expected = twin.partial_fit(dense, actions, rewards).predict_scores(dense)
    assert_allclose(scores, expected, rtol=1e-10, atol=1e-12)
    assert np.ptp(scores, axis=0).min() > 0  # the scores depend on the contexts


def test_other_policies_refuse_sparse_contexts_and_name_the_ones_that_take_them():
    X, actions, rewards = _logs(13, 10)
    for policy in (LinUCB(n_actions=K), EpsilonGreedy(n_actions=K)):
        with pytest.raises(TypeError, match="SquareCB.*FALCON.*BootstrappedTS"):
            policy.fit(sparse.csr_matrix(X), actions, rewards)


# ----------------------------------------------------------------------- arms
def test_a_new_arm_gets_an_unfitted_model_and_the_old_ones_are_kept():
    X, actions, rewards = _logs(14, 40)
    policy = SquareCB(n_actions=K, estimator=Ridge(), random_state=0)
    policy.fit(X, actions, rewards)
    before = policy.predict_scores(X)
    policy.set_params(n_actions=K + 1)
    after = policy.predict_scores(X)
    assert_array_equal(after[:, :K], before)
    assert_array_equal(after[:, K], 0.0)  # no data yet: predicts 0
    policy.partial_fit(X[:4], np.full(4, K), np.ones(4))
    assert policy.action_counts_[K] == 4


def test_one_model_of_shared_contexts_cannot_grow_and_says_why():
    X, actions, rewards = _logs(15, 20)
    policy = SquareCB(n_actions=K, arm_models="shared", random_state=0)
    policy.fit(X, actions, rewards)
    policy.set_params(n_actions=K + 1)
    with pytest.raises(ValueError, match="arm_models='per_arm'"):
        policy.select(X[:1])
    assert policy.n_actions_ == K


# ------------------------------------------------------------ defaults learn (39c)
def _regret(policy, seed, *, nonlinear=False, n=600, batch=10, noise=1.0):
    # Linear: arm k's mean reward is x^T theta_k. Nonlinear: |x_k|, which no linear
    # model learns (its best linear fit has slope 0) and trees learn from few rows.
    rng = np.random.RandomState(seed)
    theta = rng.normal(size=(4, 5))
    X = rng.normal(size=(n, 5))
    means = np.abs(X[:, :4]) if nonlinear else X @ theta.T
    regret = 0.0
    for t in range(0, n, batch):
        a = policy.select(X[t : t + batch])
        chosen = means[t : t + batch][np.arange(batch), a]
        policy.partial_fit(X[t : t + batch], a, chosen + noise * rng.normal(size=batch))
        regret += (means[t : t + batch].max(axis=1) - chosen).sum()
    return regret


@pytest.mark.parametrize("Policy", [SquareCB, FALCON, BootstrappedTS])
def test_defaults_learn_on_a_linear_problem(Policy, global_random_seed):
    # With only n_actions given, regret over 600 noisy rounds (batches of 10) is
    # far below the random policy's: below 0.4 of it on seeds 0-11 (on the
    # random-feature default, FALCON 0.17-0.36 and BootstrappedTS 0.17-0.34;
    # FALCON at gamma_scale=10 locks onto a wrong arm on seed 0, 0.60, as it did
    # on its former Ridge() at 0.55: these rewards span several units).
    seed = global_random_seed
    regret = _regret(Policy(n_actions=4, random_state=seed), seed)
    random = _regret(RandomPolicy(n_actions=4, random_state=0), seed)
    assert regret < 0.4 * random, (regret, random)


@pytest.mark.slow
@pytest.mark.parametrize(
    "policy",
    [
        SquareCB(n_actions=4, estimator=SGDRegressor()),
        EpsilonGreedy(n_actions=4, estimator=SGDRegressor()),
        BootstrappedTS(n_actions=4, estimator=SGDRegressor()),
    ],
    ids=lambda p: type(p).__name__,
)
def test_sgd_at_its_defaults_learns_online(policy):
    # SGDRegressor() as scikit-learn ships it, one partial_fit per batch.
    regret = _regret(policy.set_params(random_state=0), 0)
    random = _regret(RandomPolicy(n_actions=4, random_state=0), 0)
    assert regret < 0.4 * random, (regret, random)


@pytest.mark.slow
@pytest.mark.parametrize(
    "policy",
    [SquareCB(n_actions=4), FALCON(n_actions=4, gamma_scale=10.0)],
    ids=lambda p: type(p).__name__,
)
def test_gradient_boosting_learns_what_a_linear_model_cannot(policy):
    # |x_k| rewards with noise 0.3: HistGradientBoostingRegressor, refit on the
    # doubling schedule, beats the random policy (648) and LinUCB (427, whose
    # linear fits cannot see |x|). FALCON at gamma_scale=10 made 325; at 1 it
    # explored more here (404, 0.62 of random), hence the setting.
    problem = {"nonlinear": True, "n": 1000, "noise": 0.3}
    hgb = HistGradientBoostingRegressor(max_iter=50)
    policy.set_params(estimator=hgb, random_state=0)
    regret = _regret(policy, 0, **problem)
    random = _regret(RandomPolicy(n_actions=4, random_state=0), 0, **problem)
    linear = _regret(LinUCB(n_actions=4, random_state=0), 0, **problem)
    assert regret < 0.6 * random, (regret, random)
    assert regret < 0.8 * linear, (regret, linear)
