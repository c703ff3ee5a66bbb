"""BanditPipeline: transformers in front of a policy, with the bandit verbs."""
# SPDX-License-Identifier: BSD-3-Clause

import joblib
import numpy as np
import pytest
import sklearn
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.decomposition import PCA, IncrementalPCA
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import Ridge
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    MinMaxScaler,
    PolynomialFeatures,
    SplineTransformer,
    StandardScaler,
)

from skbandit.pipeline import BanditPipeline, make_bandit_pipeline
from skbandit.policies import LinTS, LinUCB


def _manual_stream(X, actions, rewards, chunks):
    scaler, policy = StandardScaler(), LinUCB(n_actions=3)
    for chunk in chunks:
        scaler.partial_fit(X[chunk])
        policy.partial_fit(scaler.transform(X[chunk]), actions[chunk], rewards[chunk])
    return scaler, policy


def test_make_bandit_pipeline_names_steps():
    pipe = make_bandit_pipeline(StandardScaler(), LinUCB(n_actions=3), verbose=False)
    assert isinstance(pipe, BanditPipeline) and isinstance(pipe, Pipeline)
    assert [name for name, _ in pipe.steps] == ["standardscaler", "linucb"]
    assert pipe.get_params()["linucb__beta"] == 1.0
    assert clone(pipe).get_params()["linucb__n_actions"] == 3


def test_partial_fit_streams_like_the_steps(shared_data):
    X, actions, rewards = shared_data.X, shared_data.actions, shared_data.rewards
    chunks = np.array_split(np.arange(X.shape[0]), 5)
    pipe = make_bandit_pipeline(StandardScaler(), LinUCB(n_actions=3))
    for chunk in chunks:
        assert pipe.partial_fit(X[chunk], actions[chunk], rewards[chunk]) is pipe
    scaler, policy = _manual_stream(X, actions, rewards, chunks)
    assert pipe[0].n_samples_seen_ == X.shape[0]
    assert pipe[-1].n_samples_seen_ == X.shape[0]
    assert_allclose(pipe[0].mean_, scaler.mean_)
    assert_allclose(
        pipe.predict_scores(X), policy.predict_scores(scaler.transform(X)), rtol=1e-12
    )


def test_fit_routes_rewards_to_the_policy(shared_data):
    X, actions, rewards = shared_data.X, shared_data.actions, shared_data.rewards
    pipe = make_bandit_pipeline(StandardScaler(), LinUCB(n_actions=3))
    assert pipe.fit(X, actions, rewards) is pipe
    policy = LinUCB(n_actions=3).fit(
        StandardScaler().fit_transform(X), actions, rewards
    )
    Xt = pipe[0].transform(X)
    assert_allclose(pipe.predict_scores(X), policy.predict_scores(Xt), rtol=1e-12)
    assert_array_equal(pipe.predict(X), policy.predict(Xt))
    # fit resets, like the policy's own fit
    pipe.fit(X[:10], actions[:10], rewards[:10])
    assert pipe[-1].n_samples_seen_ == 10


def test_fit_with_step_params_with_and_without_routing(shared_data):
    X, actions, rewards = shared_data.X, shared_data.actions, shared_data.rewards
    weights = np.linspace(0.5, 2.0, X.shape[0])
    expected = LinUCB(n_actions=3).fit(X, actions, rewards, sample_weight=weights)
    pipe = make_bandit_pipeline("passthrough", LinUCB(n_actions=3))
    pipe.fit(X, actions, rewards, linucb__sample_weight=weights)
    assert_allclose(pipe.predict_scores(X), expected.predict_scores(X), rtol=1e-12)
    with sklearn.config_context(enable_metadata_routing=True):
        policy = LinUCB(n_actions=3).set_fit_request(sample_weight=True)
        pipe = make_bandit_pipeline(FunctionTransformer(), policy)
        pipe.fit(X, actions, rewards, sample_weight=weights)
    assert_allclose(pipe.predict_scores(X), expected.predict_scores(X), rtol=1e-12)


def test_deciding_verbs_transform_then_call_the_policy(shared_data):
    X, actions, rewards = shared_data.X, shared_data.actions, shared_data.rewards
    pipe = make_bandit_pipeline(StandardScaler(), LinTS(n_actions=3, random_state=0))
    pipe.fit(X, actions, rewards)
    twin = LinTS(n_actions=3, random_state=0).fit(
        pipe[0].transform(X), actions, rewards
    )
    Xt = pipe[0].transform(X)
    mean, std = pipe.predict_scores(X, return_std=True)
    twin_mean, twin_std = twin.predict_scores(Xt, return_std=True)
    assert_allclose(mean, twin_mean, rtol=1e-12)
    assert_allclose(std, twin_std, rtol=1e-12)
    assert_allclose(pipe.predict_action_proba(X), twin.predict_action_proba(Xt))
    assert_array_equal(pipe.select(X), twin.select(Xt))
    mask = np.ones((X.shape[0], 3), dtype=bool)
    mask[:, 1] = False
    chosen = pipe.select(X, action_mask=mask)
    assert chosen.dtype == np.int64 and not np.any(chosen == 1)
    assert np.all(pipe.predict_action_proba(X, action_mask=mask)[:, 1] == 0)


def test_score_is_the_policys_off_policy_value(shared_data):
    d = shared_data
    pipe = make_bandit_pipeline(StandardScaler(), LinUCB(n_actions=3))
    pipe.fit(d.X, d.actions, d.rewards)
    expected = pipe[-1].score(
        pipe[0].transform(d.X), d.actions, d.rewards, propensities=d.propensities
    )
    value = pipe.score(d.X, d.actions, d.rewards, propensities=d.propensities)
    assert value == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="propensities"):
        pipe.score(d.X, d.actions)


def test_a_transformer_that_learns_the_shape_alone_is_fitted_by_the_first_batch(
    shared_data,
):
    # PolynomialFeatures' fit records the number of features and nothing of the
    # values: streamed without a prior fit, the pipeline equals the steps by hand
    # with the transformer fitted on the first batch (any batch would do), exactly.
    X, actions, rewards = shared_data.X, shared_data.actions, shared_data.rewards
    chunks = np.array_split(np.arange(X.shape[0]), 4)
    pipe = make_bandit_pipeline(
        PolynomialFeatures(2), LinUCB(n_actions=3, random_state=0)
    )
    cold = pipe.select(X[:3])  # before any feedback: a throw-away copy is fitted
    assert not hasattr(pipe[0], "n_output_features_")
    poly = PolynomialFeatures(2).fit(X[chunks[0]])
    policy = LinUCB(n_actions=3, random_state=0)
    assert_array_equal(cold, policy.select(poly.transform(X[:3])))
    for chunk in chunks:
        pipe.partial_fit(X[chunk], actions[chunk], rewards[chunk])
        policy.partial_fit(poly.transform(X[chunk]), actions[chunk], rewards[chunk])
    assert pipe[0].n_output_features_ == poly.n_output_features_ == 10  # 1 + 3 + 6
    assert_array_equal(pipe.predict_scores(X), policy.predict_scores(poly.transform(X)))


@pytest.mark.parametrize(
    "learns_values",
    [PCA(n_components=2), PCA(), SplineTransformer(n_knots=3)],
    ids=["PCA-2", "PCA", "SplineTransformer"],
)
def test_a_transformer_that_learns_the_values_still_needs_a_fit(
    shared_data, learns_values
):
    # Fitting these on the first batch alone would freeze that batch's statistics;
    # the probe's second copy, fitted on other rows, transforms X differently (or
    # refuses it), so the pipeline refuses with the hint and stays unfitted.
    X, actions, rewards = shared_data.X, shared_data.actions, shared_data.rewards
    pipe = make_bandit_pipeline(learns_values, LinUCB(n_actions=3))
    for verb in (lambda: pipe.partial_fit(X, actions, rewards), lambda: pipe.select(X)):
        with pytest.raises(NotFittedError, match="learns from the rows' values"):
            verb()
    assert not hasattr(pipe[-1], "n_actions_")
    assert not hasattr(pipe[0], "n_features_in_")


def test_a_rejected_first_batch_leaves_the_shape_transformer_unfitted(shared_data):
    X, actions, rewards = shared_data.X, shared_data.actions, shared_data.rewards
    pipe = make_bandit_pipeline(PolynomialFeatures(2), LinUCB(n_actions=3))
    with pytest.raises(ValueError):
        pipe.partial_fit(X, actions + 7, rewards)  # arms out of range: rejected
    assert not hasattr(pipe[0], "n_output_features_")
    assert not hasattr(pipe[-1], "n_actions_")


def test_partial_fit_needs_fitted_or_incremental_transformers(shared_data):
    X, actions, rewards = shared_data.X, shared_data.actions, shared_data.rewards
    pipe = make_bandit_pipeline(PCA(n_components=2), LinUCB(n_actions=3))
    with pytest.raises(NotFittedError, match=r"'pca' \(PCA\) has no partial_fit"):
        pipe.partial_fit(X, actions, rewards)
    assert not hasattr(pipe[-1], "n_actions_")
    # a fitted transformer without partial_fit is used as is
    pca = PCA(n_components=2).fit(X)
    pipe = make_bandit_pipeline(pca, LinUCB(n_actions=3))
    pipe.partial_fit(X, actions, rewards)
    assert_allclose(pipe[0].components_, pca.components_)
    assert pipe[-1].n_features_in_ == 2
    # stateless transformers need no fitting
    pipe = make_bandit_pipeline(FunctionTransformer(np.tanh), LinUCB(n_actions=3))
    pipe.partial_fit(X, actions, rewards)
    policy = LinUCB(n_actions=3).partial_fit(np.tanh(X), actions, rewards)
    assert_allclose(pipe.predict_scores(X), policy.predict_scores(np.tanh(X)))


def test_select_before_feedback_with_stateless_steps(shared_data):
    pipe = make_bandit_pipeline(FunctionTransformer(), LinUCB(n_actions=3))
    chosen = pipe.select(shared_data.X)
    assert chosen.shape == (shared_data.X.shape[0],)


def test_bandit_verbs_only_with_a_policy_at_the_end(shared_data):
    pipe = BanditPipeline([("scale", StandardScaler()), ("ridge", Ridge())])
    for verb in ("select", "predict_scores", "predict_action_proba", "partial_fit"):
        assert not hasattr(pipe, verb)
    # a plain final estimator fits and scores as in sklearn's Pipeline
    y = shared_data.rewards
    pipe.fit(shared_data.X, y)
    assert pipe.score(shared_data.X, y) == pytest.approx(
        Pipeline(pipe.steps).score(shared_data.X, y)
    )


def test_joblib_round_trip_continues_select(shared_data, tmp_path):
    X, actions, rewards = shared_data.X, shared_data.actions, shared_data.rewards
    pipe = make_bandit_pipeline(StandardScaler(), LinTS(n_actions=3, random_state=0))
    pipe.partial_fit(X, actions, rewards)
    pipe.select(X[:3])
    joblib.dump(pipe, tmp_path / "pipe.joblib")
    loaded = joblib.load(tmp_path / "pipe.joblib")
    assert isinstance(loaded, BanditPipeline)
    for start in range(0, 20, 5):
        assert_array_equal(
            loaded.select(X[start : start + 5]), pipe.select(X[start : start + 5])
        )
    loaded.partial_fit(X[:5], actions[:5], rewards[:5])
    pipe.partial_fit(X[:5], actions[:5], rewards[:5])
    assert_allclose(loaded.predict_scores(X), pipe.predict_scores(X), rtol=1e-12)


def test_failed_partial_fit_leaves_the_policy_unchanged(shared_data):
    X, actions, rewards = shared_data.X, shared_data.actions, shared_data.rewards
    pipe = make_bandit_pipeline(FunctionTransformer(), LinUCB(n_actions=3))
    pipe.partial_fit(X, actions, rewards)
    before = joblib.hash(pipe[-1])
    bad = actions.copy()
    bad[0] = 7
    with pytest.raises(ValueError, match="actions"):
        pipe.partial_fit(X, bad, rewards)
    assert joblib.hash(pipe[-1]) == before


def test_stateless_mirror_normalizer_lets_a_pipeline_select_from_the_prior():
    from skbandit.policies import NeuralTS
    from skbandit.preprocessing import MirrorNormalizer

    X = np.random.default_rng(0).normal(size=(6, 3))
    pipe = make_bandit_pipeline(
        MirrorNormalizer(), NeuralTS(n_actions=2, hidden_layer_sizes=(4,), n_steps=1)
    )
    assert pipe.select(X).shape == (6,)  # nothing fitted yet
    pipe.partial_fit(X, np.zeros(6, dtype=int), np.ones(6))
    assert pipe.steps[0][1].n_features_in_ == 3
    assert pipe.steps[-1][1].n_features_in_ == 6  # the policy sees [x; x]
    with pytest.raises(ValueError, match="features"):
        pipe.select(X[:, :2])


# -- cold start, rollback, scikit-learn's own Pipeline (issue 11) ------------------


def test_select_from_cold_start_decides_as_partial_fit_will_learn(shared_data):
    X = shared_data.X[:4]
    pipe = make_bandit_pipeline(StandardScaler(), LinTS(n_actions=3, random_state=0))
    chosen = pipe.select(X)  # neither step has seen feedback
    assert not hasattr(pipe[0], "n_samples_seen_")  # select taught the scaler nothing
    # The scaler transforms X as its first batch: what partial_fit gives the policy.
    first = StandardScaler().fit_transform(X)
    twin = LinTS(n_actions=3, random_state=0)
    assert_array_equal(chosen, twin.select(first))
    assert_allclose(pipe.predict_scores(X), twin.predict_scores(first), atol=1e-12)
    pipe.partial_fit(X, chosen, np.ones(4))
    twin.partial_fit(first, chosen, np.ones(4))
    assert_allclose(pipe.predict_scores(X), twin.predict_scores(first), rtol=1e-12)


@pytest.mark.parametrize("transformer", [StandardScaler(), MinMaxScaler()])
def test_online_loop_over_an_online_transformer_from_cold_start(
    shared_data, transformer
):
    X, rewards = shared_data.X, shared_data.rewards
    pipe = make_bandit_pipeline(transformer, LinUCB(n_actions=3, random_state=0))
    for t in range(30):
        x = X[t : t + 1]
        pipe.partial_fit(x, pipe.select(x), rewards[t : t + 1])
    assert pipe[0].n_samples_seen_ == 30 and pipe[-1].n_samples_seen_ == 30
    assert pipe.predict_action_proba(X).shape == (X.shape[0], 3)


def test_cold_transformer_that_cannot_learn_one_row_says_so(shared_data):
    pipe = make_bandit_pipeline(IncrementalPCA(n_components=2), LinUCB(n_actions=3))
    with pytest.raises(
        NotFittedError, match="cannot learn from these contexts alone.*n_components=2"
    ):
        pipe.select(shared_data.X[:1])
    assert pipe.select(shared_data.X[:3]).shape == (3,)
    with pytest.raises(NotFittedError, match=r"'pca' \(PCA\) has no partial_fit"):
        make_bandit_pipeline(PCA(n_components=2), LinUCB(n_actions=3)).select(
            shared_data.X
        )


def test_rejected_partial_fit_leaves_the_whole_pipeline_unchanged(shared_data):
    X, actions, rewards = shared_data.X, shared_data.actions, shared_data.rewards
    pipe = make_bandit_pipeline(StandardScaler(), LinUCB(n_actions=3))
    pipe.partial_fit(X[:50], actions[:50], rewards[:50])
    greedy = pipe.predict(X)  # predict may cache a factorisation: hash after it
    scaler, before = pipe[0], joblib.hash(pipe)
    with pytest.raises(ValueError, match="actions contains 7"):
        pipe.partial_fit(X[50:51], [7], rewards[50:51])
    assert pipe[0] is scaler and scaler.n_samples_seen_ == 50
    assert joblib.hash(pipe) == before
    assert_array_equal(pipe.predict(X), greedy)


def test_a_failing_second_transformer_rolls_the_first_back(shared_data):
    X, actions, rewards = shared_data.X, shared_data.actions, shared_data.rewards
    pipe = make_bandit_pipeline(
        StandardScaler(), IncrementalPCA(n_components=3), LinUCB(n_actions=3)
    )
    with pytest.raises(ValueError, match="n_components=3"):
        pipe.partial_fit(X[:2], actions[:2], rewards[:2])
    assert not hasattr(pipe[0], "n_samples_seen_")
    pipe.partial_fit(X[:5], actions[:5], rewards[:5])
    assert pipe[0].n_samples_seen_ == 5


def test_rejected_fit_leaves_the_whole_pipeline_unchanged(shared_data):
    X, actions, rewards = shared_data.X, shared_data.actions, shared_data.rewards
    pipe = make_bandit_pipeline(StandardScaler(), LinUCB(n_actions=3))
    pipe.fit(X, actions, rewards)
    before = joblib.hash(pipe)
    with pytest.raises(ValueError, match="rewards"):
        pipe.fit(X[:10] * 5, actions[:10], np.full(10, np.nan))
    assert joblib.hash(pipe) == before


def test_sklearn_pipeline_error_points_to_bandit_pipeline(shared_data):
    X, actions, rewards = shared_data.X, shared_data.actions, shared_data.rewards
    pipe = make_pipeline(StandardScaler(), LinUCB(n_actions=3))
    with pytest.raises(ValueError, match="make_bandit_pipeline.*supervised_view"):
        pipe.fit(X, actions)
    # What works in scikit-learn's Pipeline: fit with the policy's rewards, predict.
    pipe.fit(X, actions, linucb__rewards=rewards)
    assert_array_equal(
        pipe.predict(X), make_bandit_pipeline(*pipe).fit(X, actions, rewards).predict(X)
    )
    assert not hasattr(pipe, "select") and not hasattr(pipe, "partial_fit")
