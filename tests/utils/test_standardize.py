"""The online standardisation of contexts (``standardize``), against direct sums."""
# SPDX-License-Identifier: BSD-3-Clause

import pickle

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.utils.estimator_checks import check_sample_weight_equivalence_on_dense_data

from skbandit.exceptions import NumericalError
from skbandit.policies import (
    GLMES,
    GLMUCB,
    UCBGLM,
    ECOLog,
    KernelUCB,
    LinUCB,
    LogPHE,
    LogTS,
)
from skbandit.utils._standardize import CLIP, ContextMoments
from skbandit.utils.estimator_checks import supervised_view


def _raw(seed, shape):
    """Rows with features of very different scales and offsets."""
    rng = np.random.default_rng(seed)
    return rng.normal(size=shape) * [1.0, 1e3, 1e-3] + [0.0, 5e3, 0.1]


def _direct(prefix):
    """Standardise the last rows of ``prefix`` (its last round) by all of it."""
    rows = prefix.reshape(-1, prefix.shape[-1])
    scale = rows.std(axis=0)
    return (prefix[-1] - rows.mean(axis=0)) / np.where(scale > 0, scale, 1.0)


@pytest.mark.parametrize("shape", [(40, 3), (40, 4, 3)])
def test_a_learning_row_is_scaled_by_the_rows_up_to_its_round(shape):
    X = _raw(0, shape)
    scaled, moments = ContextMoments.empty(3).learn(X, np.float64)
    # Rounding: sums of 160 rows of size 5e3 about the first row (~1e3), then a
    # division by standard deviations down to 1e-3: 1e-9 relative is ample.
    for i in range(1, len(X)):
        assert_allclose(scaled[i], _direct(X[: i + 1]), rtol=1e-9, atol=1e-9)
    assert_array_equal(scaled[0] if len(shape) == 2 else 0, 0)  # its own mean
    rows = X.reshape(-1, 3)
    assert moments.count == len(rows)
    assert_allclose(moments.mean_, rows.mean(axis=0), rtol=1e-12)
    assert_allclose(moments.scale_, rows.std(axis=0), rtol=1e-9)
    # select and the predictions scale by all rows learned, and learn nothing
    assert_allclose(moments.scale(X[-1], np.float64), _direct(X), rtol=1e-9, atol=1e-9)


def test_chunks_give_the_bits_of_one_call():
    X = _raw(1, (60, 3))
    whole, moments = ContextMoments.empty(3).learn(X, np.float64)
    parts, chunked = [], ContextMoments.empty(3)
    for chunk in np.array_split(X, [1, 2, 9, 30]):
        part, chunked = chunked.learn(chunk, np.float64)
        parts.append(part)
    assert_array_equal(np.vstack(parts), whole)
    assert_array_equal(chunked.first, moments.first)
    assert_array_equal(chunked.second, moments.second)


@pytest.mark.parametrize("shape", [(30, 3), (30, 4, 3)])
@pytest.mark.parametrize("n_before", [0, 5])
def test_rows_as_selected_are_the_bits_select_scales(shape, n_before):
    # Each round as select scales it: by the moments of the rounds before it, via
    # scale() on moments learned round by round (as given before any row).
    X = _raw(2, shape).astype(np.float32)
    start = ContextMoments.empty(3)
    if n_before:
        _, start = start.learn(X[:n_before], np.float32)
    X = X[n_before:]
    scaled, moments, selected = start.learn(X, np.float32, as_selected=True)
    plain, plain_moments = start.learn(X, np.float32)
    assert_array_equal(scaled, plain)  # the learning rows are untouched
    assert plain_moments.count == moments.count
    for name in ("shift", "first", "second"):
        assert_array_equal(getattr(plain_moments, name), getattr(moments, name))
    assert selected.dtype == np.float32
    before = start
    for t in range(len(X)):
        assert_array_equal(selected[t], before.scale(X[t], np.float32))
        _, before = before.learn(X[t : t + 1], np.float32)
    if not n_before:
        assert_array_equal(selected[0], X[0])  # as given: nothing learned yet
    # Can fail: the learning rows include their own round in the moments.
    assert not np.allclose(selected[1:], scaled[1:])


def test_partitions_learned_in_turn_give_the_moments_of_one_call():
    # What a Dask fit starts each partition from: the moments of the partitions
    # before it, each summed about its own first row and moved to the first's.
    X = _raw(7, (90, 3))
    _, whole = ContextMoments.empty(3).learn(X, np.float64)
    moments = ContextMoments.empty(3)
    for chunk in np.array_split(X, [1, 30, 31, 70]):
        moments = moments.followed_by(
            ContextMoments.empty(3).learn(chunk, np.float64)[1]
        )
    assert moments.count == whole.count
    assert_array_equal(moments.shift, whole.shift)
    # Rounding of the move: each feature's sums of 90 rows moved by the spread of
    # its chunks' first rows, a few float64 epsilons of the feature's size on a
    # mean of that size or (feature 0) a quarter of it (measured 6e-16 relative):
    # 1e-12 for the means; the scales divide sums of squared deviations, which
    # the move changes most (measured 2e-16): 1e-9 relative is ample.
    assert_allclose(moments.mean_, whole.mean_, rtol=1e-12)
    assert_allclose(moments.scale_, whole.scale_, rtol=1e-9)
    empty = ContextMoments.empty(3)
    assert empty.followed_by(whole) is whole and whole.followed_by(empty) is whole


def test_a_constant_feature_is_centred_only():
    X = np.c_[np.full(10, 7.0), np.arange(10.0)]
    scaled, moments = ContextMoments.empty(2).learn(X, np.float64)
    assert_array_equal(scaled[:, 0], 0.0)
    assert moments.scale_[0] == 1.0


def test_a_rare_value_is_clipped_to_five_deviations():
    # A feature that is 0 on 999 rows and 1 on the 1000th: standardised by the rows
    # up to its own, the 1 is (1 - 1/1000) / sqrt(999/1000^2) = 31.6 deviations out.
    X = np.zeros((1000, 2))
    X[-1, 0] = 1.0
    X[:, 1] = np.random.default_rng(6).normal(size=1000)
    scaled, moments = ContextMoments.empty(2).learn(X, np.float64)
    unclipped = (1 - 1 / 1000) / np.sqrt(999 / 1000**2)
    assert unclipped > 31
    assert scaled[-1, 0] == CLIP
    # the Gaussian feature stays as it was: none of 1,000 draws is 5 deviations out
    assert_allclose(scaled[-1, 1], _direct(X[:, 1:])[0], rtol=1e-9)
    # select's rows too: a raw value far out of the rows learned is clipped
    assert_array_equal(moments.scale(np.array([[-1e6, 0.0]]), np.float64)[0, 0], -CLIP)


def test_auto_follows_the_family_and_false_reads_contexts_as_given():
    X, actions, rewards = _raw(2, (30, 3)), np.arange(30) % 3, np.ones(30)
    assert KernelUCB().fit(X, actions, rewards)._context_moments.count == 30
    assert (
        KernelUCB(standardize=False).fit(X, actions, rewards)._context_moments is None
    )
    assert LinUCB().fit(X, actions, rewards)._context_moments is None  # ridge: as given
    assert GLMES().fit(X, actions, rewards)._context_moments.count == 30


@pytest.mark.parametrize("Policy", [KernelUCB, ECOLog, GLMES, LogTS])
def test_a_standardising_policy_ignores_the_features_scales(Policy):
    # Prequential standardisation is invariant to a per-feature affine map of the
    # raw contexts (a positive scale and any offset), so the policy learns the
    # same from both: the point of learning on raw features.
    rng = np.random.default_rng(3)
    X = rng.normal(size=(80, 3))
    actions, rewards = rng.integers(3, size=80), rng.integers(2, size=80).astype(float)
    raw = X * [1e-3, 1.0, 1e3] + [1.0, -50.0, 1e4]
    a = Policy(n_actions=3, random_state=0).fit(X, actions, rewards)
    b = Policy(n_actions=3, random_state=0).fit(raw, actions, rewards)
    # Rounding of the moments at offsets 1e4 against scales 1e-3: 1e-6 is ample for
    # scores of order 1, and far below what a scale change does (next line).
    assert_allclose(a.predict_scores(X), b.predict_scores(raw), atol=1e-6)
    c = Policy(n_actions=3, standardize=False, random_state=0).fit(
        raw, actions, rewards
    )
    assert np.abs(a.predict_scores(X) - c.predict_scores(raw)).max() > 1e-2


@pytest.mark.parametrize("Policy", [KernelUCB, GLMES, LogTS])
def test_a_failed_call_leaves_the_moments_and_the_policy_as_they_were(
    monkeypatch, Policy
):
    X, actions, rewards = _raw(4, (20, 3)), np.arange(20) % 3, np.ones(20)
    policy = Policy(random_state=0).fit(X, actions, rewards)
    before = pickle.dumps(policy)

    def fail(*args):
        raise ValueError("the model refuses the batch")

    monkeypatch.setattr(policy, "_update", fail)
    with pytest.raises(ValueError, match="refuses"):
        policy.partial_fit(X * 3, actions, rewards)
    monkeypatch.undo()
    assert pickle.dumps(policy) == before
    restored = pickle.loads(before)
    assert_array_equal(restored._context_moments.first, policy._context_moments.first)


@pytest.mark.parametrize(
    "Policy, params",
    [(ECOLog, {"train_every": 5}), (GLMES, {"n_warmup": 5, "random_state": 0})],
)
def test_without_standardisation_weights_equal_repeated_rows(Policy, params):
    # The check the online standardisation fails by design (tests/test_common.py's
    # EXPECTED_FAILED): the order of the rows matters to it, and only to it.
    view = supervised_view(Policy)(n_actions=3, standardize=False, **params)
    check_sample_weight_equivalence_on_dense_data(Policy.__name__, view)


def test_the_online_fast_path_puts_the_moments_back_when_it_fails():
    # NeuralTS's one-row rounds skip the snapshot; the fast path extends the
    # moments, fails in the training, and must put them back before it redoes the
    # call validated (else the moments would count the row twice, or once for a
    # round that never happened).
    pytest.importorskip("torch")
    from skbandit.exceptions import NumericalError
    from skbandit.policies import NeuralTS
    from skbandit.utils._checks._policy_checks import _state

    X = _raw(5, (12, 3)).astype(np.float32)
    # the papers' schedule: the one-row round trains, where the failure is raised
    schedule = {**NeuralTS.PAPER_SCHEDULE, "n_steps": 2}
    policy = NeuralTS(n_actions=2, hidden_layer_sizes=(4,), random_state=0, **schedule)
    policy.fit(X, np.arange(12) % 2, np.ones(12))
    before = _state(policy)
    moments = policy._context_moments
    with pytest.raises(NumericalError):
        policy.partial_fit(X[:1], np.array([1]), np.array([1e308]))
    assert policy._context_moments is moments
    assert _state(policy) == before
    policy.partial_fit(X[:1], np.array([1]), np.array([1.0]))  # the fast path
    assert policy._context_moments.count == 13


def _glm_es_gradients(policy, rows, actions, rewards):
    """Each member's gradient of its penalised perturbed log-likelihood on ``rows``
    (shared contexts: arm ``k``'s rows are block ``k``), shape (m, K, d)."""
    Z = policy.perturbations_
    grads = policy.alpha * policy.coef_
    for k in range(policy.n_actions_):
        x = rows[actions == k]
        for j, theta in enumerate(policy.coef_[:, k]):
            mean = 1.0 / (1.0 + np.exp(-(x @ theta)))
            grads[j, k] += x.T @ (mean - rewards[actions == k] - Z[actions == k, j])
    return grads


@pytest.mark.parametrize("standardize", ["auto", False])
def test_glm_es_members_solve_their_problem_on_the_rows_they_read(standardize):
    # GLMES standardises by default: its members are the minimisers on the rows
    # scaled prequentially; with standardize=False on the rows as given, exactly
    # the problem GLMES solved before it had the parameter.
    rng = np.random.default_rng(8)
    X = rng.normal(size=(60, 3)) * [0.5, 1.0, 2.0] + [1.0, 0.0, -1.0]
    actions, rewards = np.arange(60) % 3, (X[:, 0] > 1.0).astype(float)
    policy = GLMES(n_models=4, standardize=standardize, random_state=0)
    policy.fit(X, actions, rewards)
    if standardize == "auto":
        rows = ContextMoments.empty(3).learn(X, np.float64)[0]
        assert policy._context_moments.count == 60
    else:
        rows = X
        assert policy._context_moments is None
    # Newton's tolerance is 1e-8 on the step: the gradient left is below 1e-6.
    assert np.abs(_glm_es_gradients(policy, rows, actions, rewards)).max() < 1e-6
    other = (
        X if standardize == "auto" else ContextMoments.empty(3).learn(X, np.float64)[0]
    )
    assert np.abs(_glm_es_gradients(policy, other, actions, rewards)).max() > 1e-2


def _ring_norm(n, seed):
    """Breiman's ring norm as KEEL ships it (values times 1,000): class 0 from
    N(0, 4 I), class 1 from N(a 1, I), a = 2 / sqrt(20), in 20 dimensions."""
    rng = np.random.default_rng(seed)
    y = rng.integers(2, size=n)
    X = np.where(
        y[:, None] == 0,
        2.0 * rng.standard_normal((n, 20)),
        2.0 / np.sqrt(20) + rng.standard_normal((n, 20)),
    )
    return np.round(X * 1000.0), y


def test_glm_es_on_raw_ring_norm_stops_as_given_and_learns_standardised():
    # The defect standardisation mends: read as given, the perturbed targets leave
    # [0, 1] and only the penalty bounds a member, which features of scale 10^3
    # outweigh: Newton fails within a hundred rounds (rounds 25-57 on seeds 0-2),
    # and the failed call leaves the policy as it was.
    X, y = _ring_norm(100, 0)
    policy = GLMES(n_actions=2, standardize=False, random_state=0)
    with pytest.raises(NumericalError, match="did not converge"):
        for t in range(100):
            arm = policy.select(X[t : t + 1])
            before = pickle.dumps(policy)
            policy.partial_fit(X[t : t + 1], arm, (arm == y[t]).astype(float))
    assert pickle.dumps(policy) == before
    # the same rounds, standardised: every update converges
    policy = GLMES(n_actions=2, random_state=0)
    for t in range(100):
        arm = policy.select(X[t : t + 1])
        policy.partial_fit(X[t : t + 1], arm, (arm == y[t]).astype(float))
    # Members on unit-scale rows stay of unit scale (measured 1.3 on seed 0); 10
    # only catches a member whose logits saturate, as the raw rows made them.
    assert np.abs(policy.coef_).max() < 10.0


def test_glm_es_moments_are_pickled_and_go_on_learning():
    X, actions, rewards = _raw(9, (40, 3)), np.arange(40) % 3, np.ones(40)
    rewards[::3] = 0.0
    policy = GLMES(random_state=0).fit(X[:30], actions[:30], rewards[:30])
    copy = pickle.loads(pickle.dumps(policy))
    kept, moments = copy._context_moments, policy._context_moments
    assert kept.count == moments.count == 30
    for name in ("shift", "first", "second"):
        assert_array_equal(getattr(kept, name), getattr(moments, name))
    for p in (policy, copy):
        p.partial_fit(X[30:], actions[30:], rewards[30:])
    assert copy._context_moments.count == 40
    assert_array_equal(copy.coef_, policy.coef_)
    assert_array_equal(copy.predict_scores(X), policy.predict_scores(X))


@pytest.mark.parametrize("Policy", [GLMUCB, UCBGLM, LogTS, LogPHE])
def test_a_logistic_glm_fits_the_rows_it_standardised(Policy):
    # Standardised by default: its MAP is the one of the rows scaled prequentially
    # (kept to 9 decimals, the groups' rows) read as given, standardize=False being
    # the former policy; scores read new rows through the moments of all rows.
    rng = np.random.default_rng(10)
    X = _raw(10, (90, 3))
    actions, rewards = np.arange(90) % 3, rng.integers(2, size=90).astype(float)
    policy = Policy(n_actions=3, random_state=0).fit(X, actions, rewards)
    scaled = np.round(ContextMoments.empty(3).learn(X, np.float64)[0], 9)
    given = Policy(n_actions=3, standardize=False, random_state=0)
    given.fit(scaled, actions, rewards)
    assert given._context_moments is None
    # The same rows into the same solver; 1e-12 covers a rounding of the rounded
    # rows (np.round is not exactly idempotent in the last bit).
    assert_allclose(policy.coef_, given.coef_, rtol=1e-12, atol=1e-12)
    new = _raw(11, (5, 3))
    # The same scaled rows into the same coefficients: only the coefficients' last
    # bits (above) can differ, through at most a few products; 1e-10 is ample.
    assert_allclose(
        policy.predict_scores(new),
        given.predict_scores(policy._context_moments.scale(new, np.float64)),
        rtol=1e-10,
    )
    # and the raw rows give another fit: the change is not a no-op
    raw = Policy(n_actions=3, standardize=False, random_state=0)
    assert not np.allclose(raw.fit(X, actions, rewards).coef_, policy.coef_)
