"""Neural ensemble sampling and Neural-PHE (Sun, Wang, Xu 2025): the checks of the
paper's acceptance list that concern the neural version (initialisation, stored
perturbations, warm-up, cost per round, reproducibility, restarts), and the stacked
training against each member trained alone."""
# SPDX-License-Identifier: BSD-3-Clause

import math

import numpy as np
import pytest
import torch
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats

from skbandit.networks import initialize_net, make_bandit_net
from skbandit.networks._ensemble import StackedBanditMLP
from skbandit.networks._training import (
    get_flat_parameters,
    proximal_gradient_descent,
    set_flat_parameters,
)
from skbandit.policies import NeuralES, NeuralPHE

#: The checks below feed the network x itself (mirroring: test_neural_mirror.py).
TINY = {
    "hidden_layer_sizes": (6, 6),
    "n_steps": 4,
    "learning_rate": 0.05,
    "mirror_inputs": False,
    # the papers' schedule (every round, full batch, the whole history): the tests
    # check the per-round maths
    "train_every": 1,
    "batch_size": None,
    "max_buffer_size": None,
}

# The maths on the contexts as given (standardize="auto" would scale them).
pytestmark = pytest.mark.usefixtures("one_torch_thread", "neural_contexts_as_given")


def _data(n=20, d=4, K=3, seed=0, per_arm=False):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, K, d) if per_arm else (n, d))
    return X, rng.randint(K, size=n), rng.normal(size=n)


def _members(pol):
    module = pol.net_.module_
    assert isinstance(module, StackedBanditMLP)
    return [module.member(j) for j in range(module.n_members)]


def _flat(module):
    return get_flat_parameters(module).detach().clone()


class _CountingRNG:
    """A policy's Generator that counts the Gaussian draws it hands out."""

    def __init__(self, rng):
        self._rng, self.normals = rng, []

    def standard_normal(self, size=None, *args, **kwargs):
        self.normals.append(int(np.prod(size)) if size is not None else 1)
        return self._rng.standard_normal(size, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._rng, name)


# ------------------------------------------------------------ initialisation
def test_members_share_the_mirrored_theta0():
    K, d, N, M = 3, 6, 8, 5
    pol = NeuralES(
        n_actions=K, n_models=M, horizon=100, hidden_layer_sizes=(N, N), random_state=0
    )
    x = np.random.RandomState(1).normal(size=(4, K, d // 2))
    mirrored = np.concatenate([x, x], axis=-1) / math.sqrt(2)
    pol.select(mirrored)  # materialises the prior
    members = _members(pol)
    # Every member is the same network: one theta_0, drawn once.
    for net in members[1:]:
        assert torch.equal(_flat(net), _flat(members[0]))
    W1, W2, W3 = (layer.weight.detach().numpy() for layer in members[0].layers)
    # The papers' blocks: W_l = [[W, 0], [0, W]] (l < L), W_L = (w, -w), no biases.
    for W, n_in in ((W1, d), (W2, N)):
        assert_array_equal(W[: N // 2, : n_in // 2], W[N // 2 :, n_in // 2 :])
        assert_array_equal(W[: N // 2, n_in // 2 :], 0)
        assert_array_equal(W[N // 2 :, : n_in // 2], 0)
    assert_array_equal(W3[0, : N // 2], -W3[0, N // 2 :])
    assert all(layer.bias is None for layer in members[0].layers)
    # p = N d + N^2 (L - 2) + N per member; theta0_ holds the M copies.
    p = N * d + N * N + N
    assert pol.n_parameters_ == M * p and pol.theta0_.shape == (M * p,)
    # f(x; theta_0) = 0 on mirrored inputs, for every member and arm.
    with torch.no_grad():
        f = pol.net_.module_(torch.as_tensor(mirrored, dtype=torch.float32))
    assert f.shape == (M, 4, K) and float(f.abs().max()) < 1e-6
    assert_allclose(pol.predict_scores(mirrored), 0, atol=1e-6)


def test_init_variances_are_the_papers():
    # W ~ N(0, 4/N) in the hidden blocks, w ~ N(0, 2/N) in the output (variances).
    N, d = 400, 40
    pol = NeuralES(
        n_actions=1, n_models=2, horizon=10, hidden_layer_sizes=(N, N), random_state=0
    )
    pol.select(np.zeros((1, 1, d)))
    W1, W2, W3 = (layer.weight.detach()[0].numpy() for layer in pol.net_.module_.layers)
    # 8000, 40000 and 200 entries: relative sd of the sample variance 1.6 %, 0.7 %,
    # 10 %; margins of 4 sd.
    assert abs(W1[: N // 2, : d // 2].var() / (4 / N) - 1) < 0.07
    assert abs(W2[: N // 2, : N // 2].var() / (4 / N) - 1) < 0.03
    assert abs(np.mean(W3[0, : N // 2] ** 2) / (2 / N) - 1) < 0.4


# ------------------------------------------------------------ perturbations
def test_perturbations_are_stored_never_redrawn_and_gaussian():
    M, sigma, K = 10, 0.3, 4
    X, a, r = _data(n=1200, K=K, seed=2)
    pol = NeuralES(
        n_actions=K,
        n_models=M,
        perturbation_scale=sigma,
        horizon=5000,
        hidden_layer_sizes=(4,),
        n_steps=0,
        max_buffer_size=None,  # every perturbation stays
        random_state=3,
    )
    previous = np.empty((0, M), np.float32)
    for start, stop in [(0, 1), (1, 4), (4, 5), (5, 200), (200, 1200)]:
        pol.partial_fit(X[start:stop], a[start:stop], r[start:stop])
        targets = pol.perturbed_targets_
        assert targets.shape == (stop, M)  # m new values per new observation
        assert_array_equal(targets[:start], previous)  # bit-identical, never redrawn
        previous = targets.copy()
    z = (previous.astype(np.float64) - r[:, None]) / sigma
    # 12000 draws of N(0, 1) (up to float32 rounding of the targets).
    assert stats.kstest(z.ravel(), "norm").pvalue > 0.01
    # Independent across members: correlations within sampling error (sd 0.029).
    corr = np.corrcoef(z.T)[np.triu_indices(M, 1)]
    assert np.abs(corr).max() < 0.15


def test_weighted_rows_get_their_perturbation_scaled_down():
    # Weight w stands for w copies: (f - r - Z/sqrt(w))^2 w is their loss up to a
    # constant, the copies' mean perturbation having variance sigma^2 / w.
    M, n = 8, 600
    X, a, r = _data(n=n, K=3, seed=12)
    w = np.where(np.arange(n) % 2, 4.0, 1.0)
    pol = NeuralES(
        n_actions=3,
        n_models=M,
        perturbation_scale=0.5,
        horizon=5000,
        hidden_layer_sizes=(4,),
        n_steps=0,
        random_state=0,
    )
    pol.partial_fit(X, a, r, sample_weight=w)
    z = pol.perturbed_targets_.astype(np.float64) - r[:, None]
    ratio = z[1::2].std() / z[::2].std()  # 2400 draws each: sd of the ratio ~ 0.015
    assert abs(ratio - 0.5) < 0.06


def test_gaussian_draws_per_round_are_m_for_es_and_t_for_phe():
    K, M = 3, 4
    X, a, r = _data(n=30, K=K)
    es = NeuralES(n_actions=K, n_models=M, horizon=100, random_state=0, **TINY)
    phe = NeuralPHE(n_actions=K, random_state=0, **TINY)
    for pol in (es, phe):
        pol.partial_fit(X[:1], a[:1], r[:1])
    # ES draws its perturbations from their own stream, PHE from its data stream.
    es._noise = es_draws = _CountingRNG(es._noise)
    phe._data_rng = phe_draws = _CountingRNG(phe._data_rng)
    for t in range(1, 30):
        es_draws.normals.clear()
        phe_draws.normals.clear()
        for pol in (es, phe):
            pol.partial_fit(X[t : t + 1], a[t : t + 1], r[t : t + 1])
        assert es_draws.normals == [M]  # constant in t (Remark 4.1)
        assert phe_draws.normals == [t + 1]  # the whole history, redrawn


def test_zero_scale_makes_every_member_the_same_network():
    X, a, r = _data(n=15)
    pol = NeuralES(
        n_actions=3,
        n_models=4,
        perturbation_scale=0.0,
        horizon=100,
        random_state=0,
        **TINY,
    ).fit(X, a, r)
    members = [_flat(m) for m in _members(pol)]
    assert np.abs(_flat(pol.net_.module_).numpy() - pol.theta0_).max() > 1e-2
    # Up to float32 rounding of the batched products through training (1.2e-7 in
    # the parameters, 3e-7 in the std measured; 1e-5 leaves 10 times that), where
    # a nonzero scale sets members 1e-2 apart.
    for other in members[1:]:
        assert_allclose(other.numpy(), members[0].numpy(), rtol=1e-5, atol=1e-6)
    _, std = pol.predict_scores(X, return_std=True)
    assert_allclose(std, 0, atol=1e-5)


# --------------------------------------------- stacked = M networks trained alone
@pytest.mark.parametrize("per_arm", [False, True])
def test_each_member_is_a_network_trained_alone_on_its_perturbed_rewards(per_arm):
    K, d, M, alpha, steps, lr = 3, 4, 5, 0.7, 5, 0.1
    X, a, r = _data(n=16, d=d, K=K, per_arm=per_arm, seed=4)
    pol = NeuralES(
        n_actions=K,
        n_models=M,
        perturbation_scale=0.5,
        horizon=100,
        hidden_layer_sizes=(8,),
        n_steps=steps,
        learning_rate=lr,
        alpha=alpha,
        mirror_inputs=False,  # the rebuild below feeds x itself
        random_state=0,
        train_every=1,
        batch_size=None,
    )
    Xc = X[np.arange(16), a] if per_arm else X
    nets = None
    batches = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 9), (9, 10), (10, 16)]
    for start, stop in batches:
        pol.partial_fit(X[start:stop], a[start:stop], r[start:stop])
        if nets is None:  # theta_0, as M independent BanditMLPs
            stacked0 = StackedBanditMLP(
                d, K, M, hidden_layer_sizes=(8,), disjoint=not per_arm
            )
            set_flat_parameters(stacked0, torch.as_tensor(pol.theta0_))
            nets = []
            for j in range(M):
                net = initialize_net(
                    make_bandit_net(d, K, hidden_layer_sizes=(8,), learning_rate=lr),
                    0,
                )
                net.module_ = stacked0.member(j)
                net.initialize_optimizer()
                nets.append(net)
            theta0 = [
                [p.detach().clone() for p in n.module_.parameters()] for n in nets
            ]
        if stop < K:  # the warm-up: nothing trains before every arm was pulled
            assert pol.n_trainings_ == 0
            continue
        targets = pol.perturbed_targets_  # (stop, M)
        for j, net in enumerate(nets):
            proximal_gradient_descent(
                net,
                torch.as_tensor(Xc[:stop], dtype=torch.float32),
                torch.as_tensor(a[:stop]),
                torch.as_tensor(targets[:, j]),
                None,
                theta0[j],
                alpha=alpha,
                n_steps=steps,
            )
        for j, (member, net) in enumerate(zip(_members(pol), nets, strict=True)):
            assert_allclose(
                _flat(member), _flat(net.module_), rtol=1e-4, atol=1e-5, err_msg=j
            )
    assert pol.n_trainings_ == len(batches) - 2
    # The members moved, apart from theta_0 and from each other.
    flats = [_flat(n.module_) for n in nets]
    assert min(float((f - _flat(stacked0.member(0))).abs().max()) for f in flats) > 1e-2
    assert len({tuple(f.tolist()) for f in flats}) == M


def test_objective_is_the_papers_with_lambda_times_width():
    # One member's objective, written out in float64 from the loss (C.2) divided by
    # the n rows (reduction="mean"): sum (f - y)^2 / 2 + lambda N ||theta - theta0||^2
    # / 2, N the width (the output scale's square).
    K, d, N, M, alpha = 3, 4, 6, 3, 0.8
    X, a, r = _data(n=9, d=d, K=K, seed=5)
    pol = NeuralES(
        n_actions=K,
        n_models=M,
        horizon=50,
        hidden_layer_sizes=(N,),
        alpha=alpha,
        n_steps=7,
        learning_rate=0.1,
        mirror_inputs=False,  # the rebuild below feeds x itself
        random_state=1,
    )
    pol.fit(X, a, r)
    reported = pol._core.last_objective
    stacked0 = StackedBanditMLP(d, K, M, hidden_layer_sizes=(N,), disjoint=True)
    set_flat_parameters(stacked0, torch.as_tensor(pol.theta0_))
    for j, net in enumerate(_members(pol)):
        theta0 = get_flat_parameters(stacked0.member(j)).double()
        net = net.double()
        with torch.no_grad():
            f = net(torch.as_tensor(X, dtype=torch.float64))[np.arange(9), a]
        y = torch.as_tensor(pol.perturbed_targets_[:, j], dtype=torch.float64)
        theta = get_flat_parameters(net).double()
        value = (
            ((f - y) ** 2).sum() / 2 + alpha * N * ((theta - theta0) ** 2).sum() / 2
        ) / 9
        assert_allclose(reported[j], float(value), rtol=1e-4)


def test_no_data_gradient_at_theta0_leaves_members_at_theta0():
    # Rewards equal to f(x; theta_0) = 0 (mirrored inputs) and no perturbation: the
    # loss gradient at theta_0 is zero, so training leaves every member there.
    K = 2
    x = np.random.RandomState(0).normal(size=(5, K, 3))
    X = np.concatenate([x, x], -1)
    pol = NeuralES(
        n_actions=K,
        n_models=3,
        perturbation_scale=0.0,
        horizon=50,
        random_state=0,
        **TINY,
    ).fit(X, np.arange(5) % K, np.zeros(5))
    assert pol.n_trainings_ == 1
    # f(x; theta_0) is zero up to float32 rounding, hence a drift of about 1e-6;
    # a penalty centred at 0 (weight decay) would move them by about 10 %.
    assert_allclose(_flat(pol.net_.module_).numpy(), pol.theta0_, atol=1e-5)


# ------------------------------------------------------------------ warm-up
def test_warm_up_pulls_each_arm_once_then_fits_every_member():
    K = 4
    X, _, r = _data(n=12, K=K, seed=6)
    pol = NeuralES(n_actions=K, n_models=3, horizon=100, random_state=0, **TINY)
    played = []
    for t in range(12):
        arm = pol.select(X[t : t + 1])
        played.append(int(arm[0]))
        if t < K:
            assert_array_equal(pol.predict_action_proba(X[t : t + 1])[0], np.eye(K)[t])
        before = pol.n_trainings_
        pol.partial_fit(X[t : t + 1], arm, r[t : t + 1])
        assert pol.n_trainings_ == before + (t >= K - 1)  # first fit after pull K
    assert played[:K] == list(range(K))
    # A batch: the first K rows are the warm-up, the rest are the ensemble's.
    fresh = NeuralES(n_actions=K, n_models=3, horizon=100, random_state=0, **TINY)
    assert_array_equal(fresh.select(X[:6])[:K], np.arange(K))
    # A masked arm passes its turn to the next available one.
    mask = np.ones((K, K), bool)
    mask[0, 0] = mask[2, 2] = False
    assert_array_equal(fresh.select(X[:K], action_mask=mask), [1, 1, 3, 3])


def test_warm_up_in_one_batch_fits_once_on_all_of_it(monkeypatch):
    import skbandit.networks._core as core_module

    calls = []
    real = core_module.ensemble_gradient_descent

    def counted(module, X, *args, **kwargs):
        calls.append(X.shape[0])
        return real(module, X, *args, **kwargs)

    monkeypatch.setattr(core_module, "ensemble_gradient_descent", counted)
    X, a, r = _data(n=10, K=3)
    pol = NeuralES(n_actions=3, n_models=2, horizon=100, random_state=0, **TINY)
    pol.partial_fit(X[:2], a[:2], r[:2])
    pol.partial_fit(X[2:7], a[2:7], r[2:7])
    pol.partial_fit(X[7:8], a[7:8], r[7:8])
    assert calls == [7, 8]


# ----------------------------------------------------------------- anytime
def test_anytime_restarts_fully_with_the_phase_sizes():
    K, T0, b = 3, 6, (3 + math.sqrt(5)) / 2
    ends = [math.floor(T0 * b**i) for i in range(3)]  # 6, 15, 41
    X, _, r = _data(n=ends[2], K=K, seed=7)
    pol = NeuralES(n_actions=K, horizon="anytime", first_phase=T0, random_state=0,
                   **TINY)  # fmt: skip
    plays = []
    theta0s = []
    for t in range(ends[2]):
        arm = pol.select(X[t : t + 1])
        plays.append(int(arm[0]))
        pol.partial_fit(X[t : t + 1], arm, r[t : t + 1])
        if t + 1 in ends:  # a full restart right after round T_i
            i = ends.index(t + 1) + 1
            tau = ends[i] - ends[i - 1] if i < len(ends) else None
            assert pol.phase_ == i and pol.phase_start_ == t + 1
            assert len(pol._core.buffer) == 0 and pol.n_trainings_ == 0
            assert pol.perturbed_targets_.shape[0] == 0
            theta0s.append(pol.theta0_.copy())
            if tau is not None:
                assert pol.n_models_ == math.ceil(2 * math.log(tau))
                assert_allclose(pol.perturbation_scale_, 0.02 * math.log(tau))
                assert pol.net_.module_.n_members == pol.n_models_
    # The warm-up re-runs at the start of every phase.
    for start in (0, *ends[:2]):
        assert plays[start : start + K] == list(range(K))
    assert not np.array_equal(theta0s[0][:10], theta0s[1][:10])  # a new theta_0


def test_default_never_restarts():
    """horizon=None by default: 110 rounds, past the anytime schedule's first
    restart at round 100, stay one phase with every row and the fixed-horizon
    ensemble (10 members, sigma_R = 0.1)."""
    X, a, r = _data(n=110, K=3, seed=8)
    pol = NeuralES(n_actions=3, random_state=0, **TINY).partial_fit(X, a, r)
    assert (pol.phase_, pol.phase_start_) == (0, 0)
    assert pol.perturbed_targets_.shape == (110, 10)
    assert pol.perturbation_scale_ == 0.1
    anytime = NeuralES(n_actions=3, horizon="anytime", random_state=0, **TINY)
    assert anytime.partial_fit(X, a, r).phase_ == 1  # the opt-in restarts


def test_anytime_restart_inside_a_batch():
    # T_0 = 6: phases [0, 6), [6, 15), [15, 41); one batch of 20 rounds crosses two.
    X, a, r = _data(n=20, K=3, seed=8)
    pol = NeuralES(n_actions=3, horizon="anytime", first_phase=6, random_state=0,
                   **TINY)  # fmt: skip
    pol.partial_fit(X, a, r)
    assert (pol.phase_, pol.phase_start_, pol.n_samples_seen_) == (2, 15, 20)
    assert_array_equal(pol._core.buffer.X, X[15:].astype(np.float32))
    assert pol.perturbed_targets_.shape == (5, math.ceil(2 * math.log(26)))
    assert pol.n_trainings_ == 1  # the 5 rounds cover the warm-up of 3


# ------------------------------------------------------------ reproducibility
def _run(policy, X, best, n):
    plays, regret = [], 0.0
    for t in range(n):
        arm = int(policy.select(X[t : t + 1])[0])
        reward = float(arm == best[t])
        policy.partial_fit(X[t : t + 1], [arm], [reward])
        plays.append(arm)
        regret += 1.0 - reward
    return plays, regret


@pytest.mark.parametrize("cls", [NeuralES, NeuralPHE])
def test_same_seed_same_arms_and_regret(cls):
    X, best, _ = _data(n=40, K=3, seed=9)
    params = dict(n_actions=3, random_state=5, **{**TINY, "learning_rate": 0.01})
    if cls is NeuralES:
        params.update(n_models=4, perturbation_scale=1.0, horizon="anytime",
                      first_phase=15)  # fmt: skip
    else:
        params.update(perturbation_scale=1.0)
    first = _run(cls(**params), X, best, 40)
    assert _run(cls(**params), X, best, 40) == first
    assert _run(cls(**{**params, "random_state": 6}), X, best, 40)[0] != first[0]
