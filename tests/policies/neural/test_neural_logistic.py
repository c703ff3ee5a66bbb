"""NeuralLog-UCB and NeuralLog-TS (Bae and Lee, "Neural Logistic Bandits", ICML 2025)
against independent derivations: the matrices rebuilt from autograd gradients in
float64, the widths from their equations, the training step from autograd of the
objective, and the invariances of the paper's Table 2."""
# SPDX-License-Identifier: BSD-3-Clause

import copy
import math

import numpy as np
import pytest
import torch
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import expit

from skbandit.environments import NeuralLogisticBandit
from skbandit.networks import TangentPrecision
from skbandit.policies import NeuralLogTS, NeuralLogUCB

# The maths on the contexts as given (standardize="auto" would scale them).
pytestmark = pytest.mark.usefixtures("one_torch_thread", "neural_contexts_as_given")

R = 0.25
K, D = 3, 4


# ------------------------------------------------------------ the precision
@pytest.mark.parametrize("kind", ["full", "diag"])
def test_weighted_precision_is_the_direct_solve(kind):
    rng = np.random.RandomState(0)
    p, alpha = 6, 0.7
    Phi, w = rng.normal(size=(300, p)), rng.uniform(0, 0.25, size=300)
    w[::7] = 0.0  # zero weights skip rows
    U = TangentPrecision(p, alpha, kind).updated_with(Phi[:290], w[:290])
    U = U.updated_with(torch.as_tensor(Phi[290:]), torch.as_tensor(w[290:]))
    direct = alpha * np.eye(p) + (Phi * w[:, None]).T @ Phi
    if kind == "diag":
        direct = np.diag(np.diag(direct))
        assert_allclose(U.covariance, 1 / np.diag(direct), rtol=1e-12)
    else:
        assert_allclose(U.covariance, np.linalg.inv(direct), rtol=1e-8, atol=1e-12)
    assert_allclose(U.logdet, np.linalg.slogdet(direct)[1], rtol=1e-10)
    shifted = U.shifted(2.5)
    direct2 = direct + 2.5 * np.eye(p)
    expected = 1 / np.diag(direct2) if kind == "diag" else np.linalg.inv(direct2)
    assert_allclose(shifted.covariance, expected, rtol=1e-8, atol=1e-12)
    assert_allclose(shifted.logdet, np.linalg.slogdet(direct2)[1], rtol=1e-10)
    assert_allclose(U.logdet, np.linalg.slogdet(direct)[1], rtol=1e-10)  # unchanged


# ----------------------------------------------------- independent rebuild
def _flat(module):
    return torch.cat([p.detach().reshape(-1) for p in module.parameters()]).clone()


def _grad_and_f(module, theta, x):
    """f(x; theta) and its gradient by autograd, float64, one context-arm vector."""
    ref = copy.deepcopy(module).double()
    offset = 0
    with torch.no_grad():
        for q in ref.parameters():
            q.copy_(theta[offset : offset + q.numel()].view_as(q).double())
            offset += q.numel()
    f = ref(torch.as_tensor(x, dtype=torch.float64)[None, None, :])[0, 0]
    g = torch.autograd.grad(f, list(ref.parameters()))
    return f.item(), torch.cat([t.reshape(-1) for t in g]).numpy()


def _play(policy, n_rounds, seed=0):
    """Play rounds one by one; record each pulled vector and the parameters it was
    selected with and the parameters after its update."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(-1, 1, size=(n_rounds + 1, K, D))
    records = []
    for t in range(n_rounds):
        a = policy.select(X[t : t + 1])
        selected = _flat(policy.net_.module_)
        r = np.array([float(rng.rand() < 0.5)])
        policy.partial_fit(X[t : t + 1], a, r)
        records.append((X[t, a[0]], selected, _flat(policy.net_.module_)))
    return X[-1:], records


def _width(G, lam, t, *, L=2, S=1.0, delta=0.05, theory=False, lam_d=None):
    """w_t of Eqs. (1), (2), (4), from the unweighted Gram G of the gradients."""
    lam_d = lam if lam_d is None else lam_d
    d_eff = np.linalg.slogdet(np.eye(len(G)) + R * G / lam_d)[1]
    log_t = math.log(4 * max(t, 1) ** 2 / delta)
    if theory:
        iota = 16 * math.sqrt(d_eff * log_t) + 8 * math.sqrt(L / lam_d) * log_t
    else:
        iota = math.sqrt(d_eff * log_t) + math.sqrt(L / lam) * log_t
    return (1 + math.sqrt(L) * S + L * S * S) * iota + 1, d_eff


@pytest.mark.parametrize("variant", [1, 2])
@pytest.mark.parametrize("cls", [NeuralLogUCB, NeuralLogTS], ids=lambda c: c.__name__)
def test_practical_scores_match_an_autograd_rebuild(cls, variant):
    alpha, kappa, nu, T = 0.7, 3.0, 0.3, 7
    policy = cls(
        variant=variant,
        nu=nu,
        kappa=kappa,
        alpha=alpha,
        normalize_gradient=False,  # g itself, as the rebuild below takes it
        variance_weights="insertion",
        covariance="full",
        hidden_layer_sizes=(4,),
        n_steps=5,
        learning_rate=0.05,
        train_every=3,
        mirror_inputs=False,  # the rebuild below feeds x itself
        random_state=0,
    )
    x_next, records = _play(policy, T)
    module = policy.net_.module_
    p = policy.n_parameters_
    G, M = np.zeros((p, p)), np.zeros((p, p))
    for x, selected, after in records:
        _, g = _grad_and_f(module, selected, x)  # the gradient it was selected with
        f_after, _ = _grad_and_f(module, after, x)  # trained on it: frozen weight
        weight = 1.0 if variant == 1 else expit(f_after) * expit(-f_after)
        G += np.outer(g, g)
        M += weight * np.outer(g, g)
    reg = kappa * alpha if variant == 1 else alpha
    A = M + reg * np.eye(p)
    w, d_eff = _width(G, alpha, T)
    assert_allclose(policy.effective_dimension_, d_eff, rtol=1e-4)
    assert_allclose(policy.confidence_width_, w, rtol=1e-4)
    theta = _flat(module)
    f, norms = np.zeros(K), np.zeros(K)
    for k in range(K):
        f[k], g = _grad_and_f(module, theta, x_next[0, k])
        norms[k] = math.sqrt(g @ np.linalg.solve(A, g))
    if cls is NeuralLogUCB:
        factor = R * math.sqrt(kappa) if variant == 1 else 1.0
    else:
        factor = math.sqrt(kappa) if variant == 1 else 1.0
    mean, std = policy.predict_scores(x_next, return_std=True)
    assert_allclose(mean[0], expit(f), rtol=1e-5)
    bonus = nu * factor * w * norms
    # Every std in the mean's probability space: UCB-1's bonus is there already,
    # UCB-2's logit bonus is carried there exactly, TS's logit spread by the delta
    # method, mu'(f) times it.
    if cls is NeuralLogTS:
        assert_allclose(std[0], expit(f) * expit(-f) * bonus, rtol=2e-3)
    elif variant == 2:
        assert_allclose(std[0], expit(f + bonus) - expit(f), rtol=2e-3)
    else:
        assert_allclose(std[0], bonus, rtol=2e-3)
    if cls is NeuralLogUCB:  # probability space for variant 1, logit space for 2
        index = expit(f) + bonus if variant == 1 else f + bonus
        assert policy.select(x_next)[0] == np.argmax(index)


@pytest.mark.parametrize("variant", [1, 2])
def test_theory_widths_and_lambda_schedule_match_the_equations(variant):
    kappa, S, delta, T = 4.0, 2.0, 0.1, 5
    policy = NeuralLogUCB(
        variant=variant,
        nu=1.0,  # the bare width
        kappa=kappa,
        norm_bound=S,
        delta=delta,
        confidence="theory",
        gradient="init",
        normalize_gradient=True,
        mean="linearized",
        warm_start=False,
        covariance="full",
        hidden_layer_sizes=(4,),
        n_steps=3,
        train_every=2,
        mirror_inputs=False,  # the rebuild below feeds x itself
        random_state=1,
    )
    x_next, records = _play(policy, T, seed=3)
    module = policy.net_.module_
    m, L, p = 4, 2, policy.n_parameters_
    theta0 = torch.as_tensor(policy.theta0_)
    lam0 = 8 * math.sqrt(2) * math.sqrt(L) * math.log(4 / delta) / S
    G, M, lam = np.zeros((p, p)), np.zeros((p, p)), lam0
    for t, (x, _, after) in enumerate(records, start=1):
        _, g = _grad_and_f(module, theta0, x)
        g = g / math.sqrt(m)  # g(x; theta_0) / sqrt(m)
        f_after, _ = _grad_and_f(module, after, x)
        weight = 1.0 if variant == 1 else expit(f_after) * expit(-f_after)
        G += np.outer(g, g)
        M += weight * np.outer(g, g)
        A_t = np.linalg.slogdet(np.eye(p) + G / (4 * lam0))[1]
        log_t = math.log(4 * t**2 / delta)
        eq3 = 64 / S**2 * A_t * log_t + 16 * L / (S**2 * lam0) * log_t**2
        lam = max(lam, lam0, eq3)
    assert_allclose(policy.regularization_, lam, rtol=1e-6)
    w, _ = _width(G, lam, T, S=S, delta=delta, theory=True, lam_d=lam0)
    assert_allclose(policy.confidence_width_, w, rtol=1e-4)
    reg = kappa * lam if variant == 1 else lam
    A = M + reg * np.eye(p)
    theta = _flat(module)
    mean, norms = np.zeros(K), np.zeros(K)
    for k in range(K):
        f, _ = _grad_and_f(module, theta, x_next[0, k])
        _, g0 = _grad_and_f(module, theta0, x_next[0, k])
        # Variant 2's linearised mean g(x; theta_0)^T (theta - theta_0).
        mean[k] = f if variant == 1 else g0 @ (theta - theta0).double().numpy()
        g0 = g0 / math.sqrt(m)
        norms[k] = math.sqrt(g0 @ np.linalg.solve(A, g0))
    factor = R * math.sqrt(kappa) if variant == 1 else 1.0
    got_mean, std = policy.predict_scores(x_next, return_std=True)
    assert_allclose(got_mean[0], expit(mean), rtol=1e-4)
    bonus = factor * w * norms
    if variant == 2:  # the logit-space bonus, carried to probability space
        bonus = expit(mean + bonus) - expit(mean)
    assert_allclose(std[0], bonus, rtol=2e-3)


def test_the_width_at_round_zero_is_finite():
    policy = NeuralLogUCB(confidence="theory", hidden_layer_sizes=(4,), random_state=0)
    policy.select(np.zeros((1, K, D)))
    # The paper's width at t = 0, derived by hand: nothing learnt (d_eff = 0) and
    # l_0 = log(4 / delta) = log 80 = 4.3820 (t = 0 read as 1: log 0 = -inf); with
    # L = 2 layers, S = 1: lambda_0 = 8 sqrt(2 L) l_0 / S = 70.112, iota_0 =
    # 8 sqrt(L / lambda_0) l_0 = 5.9208 (Eq. 4) and w_0 = (1 + sqrt(L) S + L S^2)
    # iota_0 + 1 = 4.4142 * 5.9208 + 1 = 27.1358 (Eqs. 1-2).
    # rel 1e-5: the hand value's five significant digits.
    assert policy.confidence_width_ == pytest.approx(27.1358, rel=1e-5)


def test_theory_is_one_preset_of_the_flags():
    """confidence="theory" alone plays as the theory's flags set by hand, and
    "practical" as the practical ones (a mixed state needs an explicit flag)."""
    X = np.random.RandomState(4).uniform(-1, 1, size=(8, K, D))
    r = (np.arange(8) % 2).astype(float)
    common = dict(hidden_layer_sizes=(4,), n_steps=3, train_every=2, random_state=0)
    flags = {
        "theory": dict(gradient="init", normalize_gradient=True, mean="linearized",
                       warm_start=False, penalty_center="init"),
        "practical": dict(gradient="current", normalize_gradient=True,
                          mean="network", warm_start=True, penalty_center="zero"),
    }  # fmt: skip
    scores = {}
    for confidence, explicit in flags.items():
        preset = NeuralLogUCB(confidence=confidence, **common)
        by_hand = NeuralLogUCB(confidence=confidence, **explicit, **common)
        for policy in (preset, by_hand):
            policy.partial_fit(X, np.arange(8) % K, r)
        scores[confidence] = preset.predict_scores(X, return_std=True)
        for a, b in zip(
            scores[confidence], by_hand.predict_scores(X, return_std=True), strict=True
        ):
            assert_allclose(a, b, rtol=1e-6)  # the same state, the same float32 ops
    # The two presets differ (the test could fail): another mean and gradient.
    assert not np.allclose(scores["theory"][0], scores["practical"][0], rtol=1e-3)


# ---------------------------------------------------------- frozen weights
def test_variance_weights_are_frozen_at_insertion():
    policy = NeuralLogUCB(
        variance_weights="insertion",
        normalize_gradient=False,  # g itself, as the rebuild below takes it
        covariance="full",
        hidden_layer_sizes=(4,),
        n_steps=20,
        learning_rate=0.2,
        train_every=2,
        mirror_inputs=False,  # the rebuild below feeds x itself
        random_state=0,
    )
    _, records = _play(policy, 6)
    module, alpha = policy.net_.module_, policy.alpha
    p, theta = policy.n_parameters_, _flat(policy.net_.module_)

    def W(at_final):
        out = alpha * np.eye(p)
        for x, selected, after in records:
            _, g = _grad_and_f(module, selected, x)
            f, _ = _grad_and_f(module, theta if at_final else after, x)
            out += expit(f) * expit(-f) * np.outer(g, g)
        return 4 * np.linalg.inv(out)  # covariance_ is in units of g / sqrt(m)

    frozen, recomputed = W(False), W(True)
    assert_allclose(policy.covariance_, frozen, rtol=1e-3, atol=1e-7)
    # The final parameters would weigh the old rounds otherwise: the test can fail.
    assert not np.allclose(frozen, recomputed, rtol=1e-3, atol=1e-7)


def test_block_weights_wait_for_the_training_that_closes_the_block():
    common = dict(
        covariance="full",
        hidden_layer_sizes=(4,),
        n_steps=20,
        learning_rate=0.2,
        train_every=3,
        mirror_inputs=False,  # the rebuild below feeds x itself
        normalize_gradient=False,  # g itself, as the rebuild below takes it
        random_state=0,
    )
    policy = NeuralLogUCB(**common)  # variance_weights="block", the default
    _, records = _play(policy, 5)  # rounds 1-3 are one block, 4-5 wait
    module, alpha, p = policy.net_.module_, policy.alpha, policy.n_parameters_
    closing = records[2][2]  # the parameters after round 3's training
    W = alpha * np.eye(p)
    for x, selected, _ in records[:3]:
        _, g = _grad_and_f(module, selected, x)
        f, _ = _grad_and_f(module, closing, x)
        W += expit(f) * expit(-f) * np.outer(g, g)
    # covariance_ is in units of g / sqrt(m), m = 4.
    assert_allclose(policy.covariance_, 4 * np.linalg.inv(W), rtol=1e-3, atol=1e-7)
    insertion = NeuralLogUCB(variance_weights="insertion", **common)
    _play(insertion, 5)
    assert not np.allclose(insertion.covariance_, policy.covariance_, rtol=1e-3)


# ------------------------------------------------------------------ training
@pytest.mark.parametrize("centre", ["init", "zero"])
def test_training_step_is_the_bce_objective_with_the_penalty_at_its_centre(centre):
    lr, alpha, n = 0.3, 0.8, 6
    policy = NeuralLogUCB(
        penalty_center=centre,
        hidden_layer_sizes=(4,),
        n_steps=1,
        learning_rate=lr,
        alpha=alpha,
        train_every=3,
        mirror_inputs=False,  # the rebuild below feeds x itself
        random_state=0,
    )
    rng = np.random.RandomState(0)
    X = rng.uniform(-1, 1, size=(n, K, D))
    a, r = rng.randint(K, size=n), rng.randint(2, size=n).astype(float)
    policy.partial_fit(X[:3], a[:3], r[:3])  # one step away from theta_0
    theta = _flat(policy.net_.module_).double()
    theta0 = torch.as_tensor(policy.theta0_).double()
    assert not torch.allclose(theta, theta0)
    policy.partial_fit(X[3:], a[3:], r[3:])  # one step on all six rows
    ref = copy.deepcopy(policy.net_.module_).double()
    params = list(ref.parameters())
    with torch.no_grad():
        offset = 0
        for q in params:
            q.copy_(theta[offset : offset + q.numel()].view_as(q))
            offset += q.numel()
    rows = torch.as_tensor(X[np.arange(n), a])[:, None, :]
    f = ref(rows)[:, 0]
    y = torch.as_tensor(r)
    bce = (torch.nn.functional.softplus(f) - y * f).sum()
    flat = torch.cat([q.reshape(-1) for q in params])
    m = 4  # the penalty m alpha ||theta - c||^2 / 2, everything over n rows
    centres = {"init": theta0, "zero": torch.zeros_like(theta0)}
    steps = {}
    for name, c in centres.items():
        objective = (bce + m * alpha * ((flat - c) ** 2).sum() / 2) / n
        grads = torch.autograd.grad(objective, params, retain_graph=True)
        steps[name] = theta - lr * torch.cat([g.reshape(-1) for g in grads])
    got = _flat(policy.net_.module_).double()
    # float32 step against float64 autograd: parameters of size ~1 after one step.
    assert_allclose(got.numpy(), steps[centre].numpy(), rtol=1e-5, atol=1e-6)
    # The other centre gives another step: the comparison can fail.
    other = steps["zero" if centre == "init" else "init"]
    assert not np.allclose(got.numpy(), other.numpy(), rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------- invariances
def _actions(policy, env_seed=0, n_rounds=60):
    env = NeuralLogisticBandit("h2", n_actions=K, n_features=D, n_vectors=40)
    env.reset(env_seed)
    out = []
    for _ in range(n_rounds):
        X = env.contexts(1)
        a = policy.select(X)
        policy.partial_fit(X, a, env.rewards(a))
        out.append(a[0])
    return np.array(out)


@pytest.mark.parametrize("cls", [NeuralLogUCB, NeuralLogTS], ids=lambda c: c.__name__)
def test_variant_2_does_not_depend_on_kappa_variant_1_does(cls):
    common = dict(hidden_layer_sizes=(4,), n_steps=5, train_every=10, nu=0.01)
    runs = {
        (v, kappa): _actions(cls(variant=v, kappa=kappa, random_state=0, **common))
        for v in (1, 2)
        for kappa in (1.0, 1000.0)
    }
    assert_array_equal(runs[2, 1.0], runs[2, 1000.0])
    assert not np.array_equal(runs[1, 1.0], runs[1, 1000.0])
