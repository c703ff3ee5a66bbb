"""Off-policy learners on Dask with models that have ``partial_fit``.

The reference is written out here, in memory: each partition's rows built as the
in-memory learners build them (each arm's rows in order, or ``[x, one_hot(a)]``
arm by arm; the targets ``G``; the weighted multiclass rows), fed to seeded clones
of the model by ``partial_fit``, partition after partition. The same calls on the
same rows give the same bits; see each test for the one place a sum differs.
"""
# SPDX-License-Identifier: BSD-3-Clause

import pickle

import joblib
import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.linear_model import Ridge, SGDClassifier, SGDRegressor
from sklearn.tree import DecisionTreeRegressor

da = pytest.importorskip("dask.array")

from skbandit.offpolicy import DMLearner, DRLearner, IPWLearner  # noqa: E402
from skbandit.offpolicy._base import importance_weights  # noqa: E402
from skbandit.offpolicy._models import fit_reward_model, seeded_clone  # noqa: E402
from skbandit.offpolicy._reductions import (  # noqa: E402
    classification_rows,
    cost_sensitive_targets,
)

N, D, K, ROWS = 2000, 3, 3, 450  # five partitions, the last of 200 rows
SEED = 0
CLASSIFIER = SGDClassifier(loss="log_loss")


@pytest.fixture(scope="module")
def logs():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(N, D))
    actions = rng.integers(K - 1, size=N)
    actions[1234] = K - 1  # one row of the last arm: the mean-reward fallback
    rewards = X[:, 0] * (actions - 0.5) + 0.1 * rng.normal(size=N)
    propensities = rng.uniform(0.3, 0.7, size=N)
    weights = rng.uniform(0.5, 1.5, size=N)
    return X, actions, rewards, propensities, weights


def _partitions(*arrays):
    for start in range(0, N, ROWS):
        yield [a[start : start + ROWS] for a in arrays]


def _dask(arr):
    return da.from_array(arr, chunks=(ROWS, *arr.shape[1:]))


def _fit_dask(learner, X, actions, rewards, propensities, weights):
    return learner.fit(
        _dask(X), _dask(actions), _dask(rewards), _dask(propensities),
        sample_weight=weights,
    )  # fmt: skip


def _reward_models(estimator, arrays, *, shared=False, importance=False):
    """Reference: each arm's model partial_fit on its rows, partition by partition."""
    models = [seeded_clone(estimator, SEED) for _ in range(1 if shared else K)]
    for X, a, r, p, w in _partitions(*arrays):
        if importance:
            w = importance_weights(p, w, None)
        rows = [np.flatnonzero(a == k) for k in range(K)]
        if shared:
            design = np.vstack(
                [np.hstack([X[i], np.eye(K)[np.full(i.size, k)]]) for k, i in
                 enumerate(rows)]
            )  # fmt: skip
            target = np.concatenate([r[i] for i in rows])
            weight = np.concatenate([w[i] for i in rows])
            models[0].partial_fit(design, target, sample_weight=weight)
            continue
        for model, i in zip(models, rows, strict=True):
            if i.size:
                model.partial_fit(X[i], r[i], sample_weight=w[i])
    return models


@pytest.mark.parametrize("importance", [False, True])
def test_dm_per_arm_models_learn_partition_after_partition(
    dask_client, logs, importance, tmp_path
):
    X, actions, rewards, propensities, weights = logs
    learner = DMLearner(
        SGDRegressor(), importance_weighted=importance, random_state=SEED
    )
    got = _fit_dask(learner, *logs)
    models = _reward_models(SGDRegressor(), logs, importance=importance)
    fitted = got.reward_model_.models_
    for k in range(K - 1):  # the same partial_fit calls: the same bits
        assert_array_equal(fitted[k].coef_, models[k].coef_)
        assert_array_equal(fitted[k].intercept_, models[k].intercept_)
    # One row of the last arm, as in memory: its reward (fewer than two rows).
    assert_array_equal(fitted[K - 1].predict(X[:2]), rewards[actions == K - 1][0])
    assert got.n_samples_seen_ == N and got.action_counts_[K - 1] == 1
    joblib.dump(got, tmp_path / "learner.joblib")  # the ordinary fitted learner
    loaded = joblib.load(tmp_path / "learner.joblib")
    assert_array_equal(loaded.predict(X), got.predict(X))


def test_dm_shared_model_reads_the_arm_as_features(dask_client, logs):
    learner = DMLearner(SGDRegressor(), arm_models="shared", random_state=SEED)
    got = _fit_dask(learner, *logs)
    (model,) = _reward_models(SGDRegressor(), logs, shared=True)
    assert_array_equal(got.reward_model_.models_[0].coef_, model.coef_)


def _regression_reduction(arrays, q_models=None, low_high=None, scale=None):
    """Reference: each arm's regressor partial_fit on every row's ``G[:, k]``."""
    models = [seeded_clone(SGDRegressor(), SEED) for _ in range(K)]
    for X, a, r, p, w in _partitions(*arrays):
        u = importance_weights(p, w, None)
        if scale is not None:
            u = u * scale[a]
        q = None
        if q_models is not None:
            q = np.column_stack([m.predict(X) for m in q_models])
            q = np.clip(q, *low_high)
        G = cost_sensitive_targets(a, r, u, K, q)
        for k, model in enumerate(models):
            model.partial_fit(X, G[:, k])
    return models


def test_ipw_regression_with_self_normalisation(dask_client, logs):
    X, actions, rewards, propensities, weights = logs
    learner = IPWLearner(
        SGDRegressor(), reduction="regression", self_normalize=True, random_state=SEED
    )
    got = _fit_dask(learner, *logs)
    u = importance_weights(propensities, weights, None)
    scale = N / np.bincount(actions, u, minlength=K)
    models = _regression_reduction(logs, scale=scale)
    # The per-arm scale n / sum u: the Dask fit sums per-partition sums, numpy
    # sums all rows pairwise, ~1e-16 relative apart; SGD's 2,000 steps per arm
    # carry that to the coefficients' last digits (measured 2e-16): 1e-12.
    for fitted, model in zip(got.policy_model_.models_, models, strict=True):
        assert_allclose(fitted.coef_, model.coef_, rtol=1e-12)


class _Mean:
    def __init__(self, values):
        self.value = values.mean()

    def predict(self, Z):
        return np.full(Z.shape[0], self.value)


def test_dr_streams_both_models_and_selects_by_value(dask_client, logs):
    X, actions, rewards, propensities, weights = logs
    learner = DRLearner(
        SGDRegressor(),
        reward_model=SGDRegressor(),
        reduction="regression",
        cv=None,
        random_state=SEED,
    )  # select_by_value=True: the IPW targets' policy too, and the higher value
    got = _fit_dask(learner, *logs)
    q_models = _reward_models(SGDRegressor(), logs)
    q_models[K - 1] = _Mean(rewards[actions == K - 1])  # a one-row arm: its reward
    low_high = (rewards.min(), rewards.max())
    candidates = {
        "dr": _regression_reduction(logs, q_models=q_models, low_high=low_high),
        "ipw": _regression_reduction(logs),
    }
    q_hat = np.clip(np.column_stack([m.predict(X) for m in q_models]), *low_high)
    u = importance_weights(propensities, weights, None)
    dr_targets = cost_sensitive_targets(actions, rewards, u, K, q_hat)
    for name, models in candidates.items():
        greedy = np.column_stack([m.predict(X) for m in models]).argmax(axis=1)
        value = np.average(dr_targets[np.arange(N), greedy], weights=weights)
        # A weighted sum of partition sums against numpy's: ~1e-16 relative.
        assert got.dr_values_[name] == pytest.approx(value, rel=1e-12)
    selected = max(got.dr_values_, key=got.dr_values_.get)
    assert got.selected_targets_ == selected
    models = candidates[selected]
    for fitted, model in zip(got.policy_model_.models_, models, strict=True):
        assert_array_equal(fitted.coef_, model.coef_)


def _classification_reference(arrays, q_hat=None, classifier=CLASSIFIER):
    """Reference: SGDClassifier partial_fit on each partition's multiclass rows,
    the weights rescaled by their mean over all partitions.

    The mean is the sum of the partitions' sums, in partition order, over the rows'
    number: the Dask fit's (one merge of up to eight partitions adds them in
    order). ``np.mean`` of all weights (a pairwise sum) differs in the last bit,
    and SGD's first, large steps at the default learning rate amplify that bit
    to percents (measured: 7 % on a coefficient).
    """
    parts = []
    for start in range(0, N, ROWS):
        X, a, r, p, w = (x[start : start + ROWS] for x in arrays)
        q = None if q_hat is None else q_hat[start : start + ROWS]
        u = importance_weights(p, w, None)
        rows, labels, cw = classification_rows(cost_sensitive_targets(a, r, u, K, q))
        parts.append((X[rows], labels, cw))
    total = 0.0
    for _, _, cw in parts:
        total = total + cw.sum()
    mean = total / sum(cw.size for _, _, cw in parts)
    classes = np.unique(np.concatenate([labels for _, labels, _ in parts]))
    model = seeded_clone(classifier, SEED)
    for Z, labels, cw in parts:
        model.partial_fit(Z, labels, classes=classes, sample_weight=cw / mean)
    return model


def test_ipw_classification_reduction(dask_client, logs):
    X, actions, rewards, propensities, weights = logs
    learner = IPWLearner(CLASSIFIER, random_state=SEED)
    got = _fit_dask(learner, *logs)
    model = _classification_reference(logs)
    # The same calls on the same rows, the weights' mean summed alike: 1e-12
    # leaves room for a different libm only.
    assert_allclose(got.policy_model_.coef_, model.coef_, rtol=1e-12)
    assert_array_equal(got.policy_model_.classes_, model.classes_)
    scores = got.predict_scores(X)
    assert_array_equal(pickle.loads(pickle.dumps(got)).predict_scores(X), scores)


def test_dr_classification_with_a_ridge_reward_model(dask_client, logs):
    X, actions, rewards, propensities, weights = logs
    # Small constant steps: SGD then moves nearby inputs to nearby coefficients.
    # At the default schedule its first, large steps amplify a last-bit change of
    # the targets to percents, which would hide the check below.
    classifier = SGDClassifier(loss="log_loss", learning_rate="constant", eta0=0.01)
    learner = DRLearner(classifier, cv=None, select_by_value=False, random_state=SEED)
    got = _fit_dask(learner, *logs)
    q = fit_reward_model(Ridge(), X, actions, rewards, weights, K, "per_arm", SEED)
    q_hat = np.clip(q.predict(X), rewards.min(), rewards.max())
    model = _classification_reference(logs, q_hat, classifier)
    # The Ridge q is solved from summed moments, the in-memory fit's to ~1e-15
    # relative (its own tests hold 1e-9); the targets move by as much, and the
    # contracting steps carry it through: 1e-9.
    assert_allclose(got.policy_model_.coef_, model.coef_, rtol=1e-9)


def test_one_label_or_none_is_the_in_memory_constant(dask_client, logs):
    X, actions, rewards, propensities, weights = logs
    positive = np.where(actions == 1, np.abs(rewards), 0.0)  # only arm 1 ever wins
    for r in (np.zeros(N), positive):
        want = IPWLearner(CLASSIFIER).fit(X, actions, r, propensities)
        got = _fit_dask(IPWLearner(CLASSIFIER), X, actions, r, propensities, None)
        assert isinstance(got.policy_model_, np.ndarray)  # no classifier to fit
        assert_array_equal(got.policy_model_, want.policy_model_)


class _Unweighted(RegressorMixin, BaseEstimator):
    """A regressor whose partial_fit takes no sample_weight."""

    def fit(self, X, y):
        return self

    def partial_fit(self, X, y):
        return self

    def predict(self, X):
        return np.zeros(X.shape[0])


@pytest.mark.parametrize(
    ("learner", "match"),
    [
        (DMLearner(DecisionTreeRegressor()), "partial_fit.*is neither"),
        (DMLearner(_Unweighted()), "takes none"),
        (IPWLearner(SGDRegressor()), "SGDClassifier"),  # a regressor as classifier
    ],
)
def test_models_without_an_out_of_core_path_are_clear_errors(
    dask_client, logs, learner, match
):
    X, actions, rewards, propensities, weights = logs
    with pytest.raises(TypeError, match=match):
        _fit_dask(learner, *logs)


def test_a_failed_fit_leaves_the_learner_unchanged(dask_client, logs):
    X, actions, rewards, propensities, weights = logs
    learner = DMLearner(SGDRegressor(), random_state=SEED)
    learner.fit(X[:100], actions[:100], rewards[:100])
    before = pickle.dumps(learner)
    bad = rewards.copy()
    bad[3 * ROWS + 1] = np.inf
    with pytest.raises(ValueError, match="rewards"):
        _fit_dask(learner, X, actions, bad, propensities, weights)
    assert pickle.dumps(learner) == before
