"""CN-UCB and CN-TS (Hwang, Chai, Oh, ICML 2023) against independent derivations.

The gradients are taken by ``torch.autograd`` on a float64 copy of the network (not
the closed form the policies use), ``Z`` is built and inverted directly with numpy,
and the training steps are redone by hand on eq. (4).
"""
# SPDX-License-Identifier: BSD-3-Clause

import copy
import math
import pickle

import numpy as np
import pytest
import torch
from _tangent_autograd import phi64  # beside this file
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats

from skbandit.exceptions import NumericalError
from skbandit.networks import TangentPrecision
from skbandit.policies import CNTS, CNUCB, optimistic_samples, theoretical_n_draws

# The maths on the contexts as given (standardize="auto" would scale them).
pytestmark = pytest.mark.usefixtures("one_torch_thread", "neural_contexts_as_given")

N, K, D = 6, 3, 4


def _contexts(n, seed=0, n_arms=N, d=D):
    X = np.random.default_rng(seed).normal(size=(n, n_arms, d))
    return (X / np.linalg.norm(X, axis=-1, keepdims=True)).astype(np.float32)


def _policy(cls=CNUCB, **params):
    # The theory's network, trained every round (the algorithms'; the defaults are
    # the experiments' network and schedule), so that Z and eq. (4) can be redone.
    defaults = dict(
        slate_size=K,
        hidden_layer_sizes=(8,),
        n_steps=5,
        init="ntk",
        train_every=1,
        random_state=0,
    )
    return cls(**{**defaults, **params})


def _direct_inverse(policy_params, X, rewards_fn, cls=CNUCB):
    """Run a policy round by round, building ``Z`` from autograd gradients at the
    parameters each slate was chosen with; return the policy and ``Z``."""
    policy = _policy(cls, **policy_params)
    Z = None
    for t in range(X.shape[0]):
        slate = policy.select(X[t : t + 1])
        phi = phi64(policy.net_.module_, X[t])  # at theta_{t-1}
        if Z is None:
            Z = policy.alpha * np.eye(phi.shape[1])
        Z += phi[slate[0]].T @ phi[slate[0]]  # all K chosen arms
        policy.partial_fit(X[t : t + 1], slate, rewards_fn(t, slate))
    return policy, Z


def _rewards(t, slate):
    return np.random.default_rng(100 + t).normal(size=slate.shape)


# ------------------------------------------------------------- Z and widths
@pytest.mark.parametrize("cls", [CNUCB, CNTS])
def test_z_is_lambda_plus_all_chosen_gradients_before_training(cls):
    # A large step so that theta moves every round: the gradients of theta_t
    # (after training) would give another Z.
    X = _contexts(5)
    params = dict(learning_rate=0.5, n_steps=3, alpha=0.7)
    policy, Z = _direct_inverse(params, X, _rewards, cls)
    assert policy.n_trainings_ == 5
    # The policy's gradients come from the float32 network, Z's from float64
    # autograd: 2.6e-8 apart in the entries measured; 1e-7 absolute, and the
    # gradients after training (below) move it by 1e-2.
    assert_allclose(policy.covariance_, np.linalg.inv(Z), rtol=1e-5, atol=1e-7)
    # Can fail: gradients at the trained parameters give a different Z.
    phi_after = phi64(policy.net_.module_, X[-1])
    Z_after = Z.copy()
    slate = policy.select(X[-1:])[0]  # any K arms
    Z_after += phi_after[slate].T @ phi_after[slate]
    assert not np.allclose(policy.covariance_, np.linalg.inv(Z_after), rtol=1e-3)


def test_one_arm_per_round_is_not_the_rank_k_update():
    X = _contexts(3)
    policy, Z = _direct_inverse({}, X, _rewards)
    # Rebuild Z with the first chosen arm only: the policy's Z must differ.
    lonely = _policy()
    Z1 = None
    for t in range(3):
        slate = lonely.select(X[t : t + 1])
        phi = phi64(lonely.net_.module_, X[t])
        Z1 = lonely.alpha * np.eye(phi.shape[1]) if Z1 is None else Z1
        Z1 += np.outer(phi[slate[0, 0]], phi[slate[0, 0]])
        lonely.partial_fit(X[t : t + 1], slate, _rewards(t, slate))
    # float32 gradients against float64 ones, as above.
    assert_allclose(lonely.covariance_, np.linalg.inv(Z), rtol=1e-5, atol=1e-7)
    assert not np.allclose(lonely.covariance_, np.linalg.inv(Z1), rtol=1e-3)


def test_ucb_width_and_slate_against_a_direct_solve():
    X = _contexts(4)
    policy, Z = _direct_inverse(dict(beta=0.7), X, _rewards)
    x = _contexts(1, seed=9)
    phi = phi64(policy.net_.module_, x[0])
    width = np.sqrt(np.einsum("ip,ip->i", phi, np.linalg.solve(Z, phi.T).T))
    mean, std = policy.predict_scores(x, return_std=True)
    assert_allclose(std[0], width, rtol=1e-5)
    with torch.no_grad():
        f = policy.net_.module_(torch.as_tensor(x)).numpy()[0]
    assert_allclose(mean[0], f, rtol=1e-6, atol=1e-7)
    # Algorithm 1's u_{t,i} and oracle: the slate is the top K of f + gamma * width,
    # best first.
    expected = np.argsort(-(f + 0.7 * width))[:K]
    assert_array_equal(policy.select(x)[0], expected)


def test_first_round_width_is_the_gradient_norm_over_sqrt_lambda():
    # Note's check 5: with Z = lambda I, width = ||g|| / sqrt(m lambda).
    x = _contexts(1)
    policy = _policy(alpha=2.5)
    policy.select(x)
    phi = phi64(policy.net_.module_, x[0])
    _, std = policy.predict_scores(x, return_std=True)
    assert_allclose(std[0], np.linalg.norm(phi, axis=1) / math.sqrt(2.5), rtol=1e-5)


@pytest.mark.parametrize("sample_std", ["nu_sigma", "nu2_sigma2"])
def test_ts_standard_deviation_paper_and_authors_code(sample_std):
    X = _contexts(3)
    policy, Z = _direct_inverse(
        dict(nu=2.0, alpha=0.5, sample_std=sample_std), X, _rewards, CNTS
    )
    x = _contexts(1, seed=4)
    phi = phi64(policy.net_.module_, x[0])
    # Algorithm 2's sigma^2 = lambda g^T Z^{-1} g / m.
    sigma = np.sqrt(0.5 * np.einsum("ip,ip->i", phi, np.linalg.solve(Z, phi.T).T))
    expected = 2.0 * sigma if sample_std == "nu_sigma" else (2.0 * sigma) ** 2
    assert_allclose(
        policy.predict_scores(x, return_std=True)[1][0], expected, rtol=1e-5
    )
    # nu = 2: the two conventions differ by far more than the tolerance.
    assert not np.allclose(2.0 * sigma, (2.0 * sigma) ** 2, rtol=1e-2)


# ------------------------------------------------------------ rank-K update
def test_rank_k_update_is_k_sequential_rank_one_updates_and_the_inverse():
    rng = np.random.default_rng(0)
    p, k, alpha = 30, 4, 0.8
    Phi = rng.normal(size=(k, p))
    U = TangentPrecision(p, alpha, kind="full")
    U.downdate_(U.woodbury_factor(Phi))
    # Sherman-Morrison, one arm at a time, written out.
    C = np.eye(p) / alpha
    for phi in Phi:
        Cphi = C @ phi
        C = C - np.outer(Cphi, Cphi) / (1.0 + phi @ Cphi)
    direct = np.linalg.inv(alpha * np.eye(p) + Phi.T @ Phi)
    assert_allclose(U.covariance, C, rtol=1e-10, atol=1e-13)
    assert_allclose(U.covariance, direct, rtol=1e-10, atol=1e-13)
    # Weighted rows and a zero weight (skipped).
    w = np.array([2.0, 0.0, 0.5, 1.0])
    V = TangentPrecision(p, alpha, kind="full")
    V.downdate_(V.woodbury_factor(Phi, w))
    direct = np.linalg.inv(alpha * np.eye(p) + (Phi.T * w) @ Phi)
    assert_allclose(V.covariance, direct, rtol=1e-10, atol=1e-13)
    # undo restores the matrix; computing the factor changes nothing.
    before, state = V.covariance.copy(), pickle.dumps(V)
    B = V.woodbury_factor(Phi)
    assert pickle.dumps(V) == state
    logdet = V.logdet
    undo = V.downdate_(B)
    sign, direct_logdet = np.linalg.slogdet(
        alpha * np.eye(p) + (Phi.T * w) @ Phi + Phi.T @ Phi
    )
    assert sign > 0 and V.logdet == pytest.approx(direct_logdet, rel=1e-10)
    undo()  # the rank-k undo of the rollback protocol: B B^T added back, no copy
    assert_allclose(V.covariance, before, rtol=1e-12, atol=1e-15)
    assert V.logdet == pytest.approx(logdet, rel=1e-12)


def test_update_reuses_the_products_of_select_with_the_same_result():
    X = _contexts(4)
    with_select, _ = _direct_inverse({}, X, _rewards)
    policy = _policy()
    slates = []
    for t in range(4):
        slates.append(policy.select(X[t : t + 1]))
        policy.partial_fit(X[t : t + 1], slates[-1], _rewards(t, slates[-1]))
    # The same slates fed without select in between: no products to reuse.
    blind = _policy()
    blind.select(X[:1])  # initialise only
    for t in range(4):
        blind.partial_fit(X[t : t + 1], slates[t], _rewards(t, slates[t]))
    assert_allclose(blind.covariance_, policy.covariance_, rtol=1e-10, atol=1e-13)
    assert_allclose(blind.covariance_, with_select.covariance_, rtol=1e-10, atol=1e-13)


# --------------------------------------------------------------- training
def test_training_is_gradient_descent_on_eq4_with_the_penalty_at_theta0():
    x = _contexts(1)
    policy = _policy(
        learning_rate=0.05, n_steps=2, reduction="sum", alpha=0.3, random_state=3
    )
    slate = policy.select(x)
    v = np.array([[0.3, -0.2, 0.5]])
    net = copy.deepcopy(policy.net_.module_).double()
    theta0 = [p.detach().clone() for p in net.parameters()]
    m = policy.hidden_layer_sizes[0]
    rows = torch.as_tensor(x[0, slate[0]], dtype=torch.float64)[:, None, :]
    target = torch.as_tensor(v[0])
    for _ in range(2):
        loss = ((net(rows)[:, 0] - target) ** 2).sum() / 2 + m * 0.3 / 2 * sum(
            ((p - p0) ** 2).sum()
            for p, p0 in zip(net.parameters(), theta0, strict=True)
        )
        grads = torch.autograd.grad(loss, list(net.parameters()))
        with torch.no_grad():
            for p, g in zip(net.parameters(), grads, strict=True):
                p -= 0.05 * g
    policy.partial_fit(x, slate, v)
    got = torch.cat([p.detach().reshape(-1) for p in policy.net_.module_.parameters()])
    want = torch.cat([p.detach().reshape(-1) for p in net.parameters()])
    assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-6)
    assert not np.allclose(got.numpy(), policy.theta0_)  # it did move


def test_the_penalty_holds_theta_near_theta0_not_zero():
    X = _contexts(6)
    # m alpha = 8000 at a step of 1e-4: stable, and strong enough to hold theta.
    params = dict(alpha=1e3, learning_rate=1e-4, n_steps=50, reduction="sum")
    anchored, free = _policy(**params), _policy(**params, anchor_penalty=False)
    for policy in (anchored, free):
        for t in range(6):
            s = policy.select(X[t : t + 1])
            policy.partial_fit(X[t : t + 1], s, np.full(s.shape, 5.0))

    def moved(policy):
        theta = torch.cat(
            [p.detach().reshape(-1) for p in policy.net_.module_.parameters()]
        )
        return np.linalg.norm(theta.numpy() - policy.theta0_)

    assert moved(anchored) < 1e-2 * np.linalg.norm(anchored.theta0_)
    assert moved(free) > 10 * moved(anchored)


def test_schedule_window_and_nan_slots():
    X = _contexts(25)
    windowed = _policy(train_every=10, n_steps=2, max_buffer_size=4 * K)
    unbounded = _policy(train_every=10, n_steps=2)
    n_rows = 0
    for t in range(25):
        for policy in (windowed, unbounded):
            slate = policy.select(X[t : t + 1])
            r = _rewards(t, slate)
            if t == 3:
                r[0, 1] = np.nan  # an unobserved slot: no row, no Z update
            policy.partial_fit(X[t : t + 1], slate, r)
        n_rows += int(np.isfinite(r).sum())
    assert windowed.n_trainings_ == 2  # after rounds 10 and 20
    assert len(windowed._core.buffer) == 4 * K
    # Without a window every observed slot is a row, and the NaN slot none.
    assert n_rows == 25 * K - 1
    assert len(unbounded._core.buffer) == n_rows
    assert np.isfinite(unbounded._core.buffer.targets).all()


def test_nan_slot_adds_nothing_to_z():
    X = _contexts(1)
    policy = _policy()
    slate = policy.select(X)
    phi = phi64(policy.net_.module_, X[0])
    r = np.array([[0.1, np.nan, 0.3]])
    policy.partial_fit(X, slate, r)
    seen = slate[0, [0, 2]]
    Z = policy.alpha * np.eye(phi.shape[1]) + phi[seen].T @ phi[seen]
    assert_allclose(policy.covariance_, np.linalg.inv(Z), rtol=1e-5, atol=1e-8)
    assert len(policy._core.buffer) == 2


def test_a_full_z_is_allocated_once(monkeypatch):
    """The p x p Z^{-1} is built once at the start (525 MB at p = 8,100), not
    built by the neural base and then replaced."""
    built = []
    init = TangentPrecision.__init__

    def counting(self, n_parameters, alpha, kind="diag", exact=False):
        built.append((kind, exact))
        init(self, n_parameters, alpha, kind, exact)

    monkeypatch.setattr(TangentPrecision, "__init__", counting)
    policy = _policy()
    policy.select(_contexts(1))
    assert built == [("full", True)]


def test_cascade_slots_enter_z_and_the_loss_unweighted():
    """Algorithm 7: each observed slot adds g g^T / m to Z with weight 1 and is
    learnt from r / psi_k with weight 1 (not psi_k^2, the linear policies'
    least squares)."""
    from skbandit.oracles import Cascade

    psi = np.array([1.0, 0.5, 0.25])
    X = _contexts(1)
    policy = _policy(oracle=Cascade(psi), n_steps=1)
    slate = policy.select(X)
    phi = phi64(policy.net_.module_, X[0])
    r = np.array([[0.0, 0.3, np.nan]])  # the user stopped at position 1
    policy.partial_fit(X, slate, r)
    seen = slate[0, :2]
    Z = policy.alpha * np.eye(phi.shape[1]) + phi[seen].T @ phi[seen]
    assert_allclose(policy.covariance_, np.linalg.inv(Z), rtol=1e-5, atol=1e-8)
    buffer = policy._core.buffer
    assert_allclose(buffer.targets, [0.0, 0.3 / 0.5], rtol=1e-6)  # float32 rows
    assert_array_equal(buffer.weights, [1.0, 1.0])


@pytest.mark.parametrize("standardize", [False, True])
@pytest.mark.parametrize("covariance", ["full", "diag"])
def test_a_batch_equals_single_rounds(covariance, standardize):
    # Standardising, Z takes each round as select would have scaled it: the same
    # bits in one call (the moments before each round from one cumulative sum) as
    # in six.
    X = _contexts(6)
    slates = np.array(
        [[0, 1, 2], [3, 4, 5], [5, 0, 2], [1, 3, 4], [2, 4, 0], [1, 5, 3]]
    )
    r = np.random.default_rng(1).normal(size=slates.shape)
    params = dict(covariance=covariance, train_every=2, standardize=standardize)
    one = _policy(**params).partial_fit(X, slates, r)
    many = _policy(**params)
    for t in range(6):
        many.partial_fit(X[t : t + 1], slates[t : t + 1], r[t : t + 1])
    assert "_rows_as_selected" not in vars(one)
    assert_allclose(one.covariance_, many.covariance_, rtol=1e-12, atol=1e-14)
    for a, b in zip(
        one.net_.module_.parameters(), many.net_.module_.parameters(), strict=True
    ):
        assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-7)
    assert one.n_trainings_ == many.n_trainings_ == 3
    assert_allclose(one.predict_scores(X, return_std=True)[1],
                    many.predict_scores(X, return_std=True)[1], rtol=1e-6)  # fmt: skip


@pytest.mark.parametrize("standardize", [False, True])
@pytest.mark.parametrize("n_rounds", [1, 3])
def test_a_failing_round_leaves_the_policy_unchanged(
    monkeypatch, n_rounds, standardize
):
    # A batch fails at its last round, after the earlier rounds' in-place updates
    # of Z^{-1}: the policy must be exactly as before, bit for bit (its pickle).
    # Standardising, Z's rows (as select scaled them) travel beside the learning
    # rows during the call and must not outlive it.
    X = _contexts(4)
    policy = _policy(train_every=1, standardize=standardize)
    s = policy.select(X[:1])
    policy.partial_fit(X[:1], s, _rewards(0, s))
    policy.select(X[1:2])  # keeps the products phi Z^{-1} the update reuses
    pickled = pickle.dumps(policy)
    logdet = policy._precision.logdet
    before = (
        policy.covariance_.copy(),
        policy._core.buffer,
        policy.n_trainings_,
        [p.detach().clone() for p in policy.net_.module_.parameters()],
    )
    train = type(policy._core).train
    calls = []

    def fail_on_last(core, buffer, settings, **kwargs):
        calls.append(1)
        if len(calls) == n_rounds:
            raise NumericalError("diverged")
        return train(core, buffer, settings, **kwargs)

    monkeypatch.setattr(type(policy._core), "train", fail_on_last)
    slates = np.array([[0, 1, 2], [3, 4, 5], [5, 0, 2]])[:n_rounds]
    with pytest.raises(NumericalError):
        policy.partial_fit(X[1 : 1 + n_rounds], slates, np.zeros((n_rounds, 3)))
    assert_array_equal(policy.covariance_, before[0])
    assert policy._precision.logdet == logdet
    assert pickle.dumps(policy) == pickled
    assert policy._core.buffer is before[1]
    assert policy.n_trainings_ == before[2]
    for a, b in zip(policy.net_.module_.parameters(), before[3], strict=True):
        assert torch.equal(a.detach(), b)
    assert policy.n_samples_seen_ == 1
    assert "_rows_as_selected" not in vars(policy)


# ------------------------------------------------------- optimistic sampling
def test_theoretical_n_draws():
    # Lemma 3: M = ceil(1 - log K / log(1 - p)), p = 1 / (4 e sqrt(pi)) = 0.051888,
    # worked by hand: K = 2 gives 1 + 0.69315 / 0.053284 = 14.01, so M = 15.
    expected = {1: 1, 2: 15, 4: 28, 5: 32, 10: 45, 20: 58, 50: 75, 100: 88}
    assert {k: theoretical_n_draws(k) for k in expected} == expected
    with pytest.raises(ValueError, match="slate_size"):
        theoretical_n_draws(0)


@pytest.mark.parametrize("M", [1, 10])
def test_optimistic_samples_follow_the_law_of_the_max(M):
    # P(v <= mu + z s) = Phi(z)^M (note's check 7).
    rng = np.random.default_rng(0)
    mu, s = 0.3, 0.2
    v = optimistic_samples(np.full((4000, 1), mu), np.full((4000, 1), s), M, rng)
    law = lambda x: stats.norm.cdf((x - mu) / s) ** M  # noqa: E731
    assert stats.kstest(v[:, 0], law).pvalue > 0.01
    # Can fail: the draws do not follow the other M's law.
    other = lambda x: stats.norm.cdf((x - mu) / s) ** (11 - M)  # noqa: E731
    assert stats.kstest(v[:, 0], other).pvalue < 1e-6


def test_optimistic_sampling_makes_the_best_slate_optimistic():
    # Lemma 3 in simulation (note's check 9): every arm pessimistic by one std.
    rng = np.random.default_rng(0)
    n, n_arms, k, sigma = 4000, 20, 4, 0.05
    h = rng.uniform(size=(n, n_arms))
    best = -np.sort(-h, axis=1)[:, :k].sum(1)

    def frequency(M):
        v = optimistic_samples(h - sigma, np.full_like(h, sigma), M, rng)
        return np.mean(-np.sort(-v, axis=1)[:, :k].sum(1) >= best)

    p = 1 / (4 * np.e * np.sqrt(np.pi))
    assert frequency(theoretical_n_draws(k)) > max(p, 0.95)
    assert frequency(10) > 0.9 > 0.2 > frequency(1)


def test_cnts_draws_are_the_max_of_n_draws_around_the_mean():
    X = _contexts(1)
    policy = _policy(CNTS, nu=0.5, n_draws=7)
    policy.select(X)
    mean, std = policy.predict_scores(X, return_std=True)
    sampler, rng = policy._score_sampler(X), np.random.default_rng(0)
    draws = np.stack([sampler(rng) for _ in range(3000)])
    z = (draws - mean) / std  # (3000, 1, N)
    law = lambda q: stats.norm.cdf(q) ** 7  # noqa: E731
    assert stats.kstest(z[:, 0, 0], law).pvalue > 0.01
    assert stats.kstest(z[:, 0, 3], law).pvalue > 0.01
