"""The neural logistic paper's baselines: LogisticUCB1, ECOLog and NCBFUCB.

Every check of the maths is against an independent computation: scipy.optimize for
the estimates and ECOLog's proximal step, dense numpy inverses and log-determinants
for the widths and the weighted design matrix, the explicit disjoint encoding for the
per-arm blocks. The maths is checked on the contexts as given: ``standardize=False``
(the online standardisation is tested in ``tests/utils/test_standardize.py``).
"""
# SPDX-License-Identifier: BSD-3-Clause

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import minimize
from scipy.special import expit, log_expit

from skbandit.exceptions import ConfidenceConditionWarning
from skbandit.policies import NCBFUCB, ECOLog, LogisticUCB1

R = 0.25


def logistic_data(n, K, d, seed, per_arm=True):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-1, 1, size=(n, K, d) if per_arm else (n, d))
    actions = rng.randint(K, size=n)
    rows = X[np.arange(n), actions] if per_arm else X
    theta = rng.uniform(-1, 1, size=d)
    rewards = (rng.rand(n) < expit(2 * rows @ theta)).astype(float)
    return X, actions, rewards, rows


def penalised_mle(rows, rewards, alpha, weights=None):
    """argmin sum w BCE(x^T theta, r) + alpha ||theta||^2 by scipy (BFGS)."""
    w = np.ones(len(rewards)) if weights is None else weights

    def objective(theta):
        z = rows @ theta
        loss = -(rewards * log_expit(z) + (1 - rewards) * log_expit(-z))
        grad = rows.T @ (w * (expit(z) - rewards)) + 2 * alpha * theta
        return float(w @ loss + alpha * theta @ theta), grad

    res = minimize(
        objective,
        np.zeros(rows.shape[1]),
        jac=True,
        method="BFGS",
        options={"gtol": 1e-10, "maxiter": 10_000},
    )
    return res.x


# ------------------------------------------------------------------ estimates
@pytest.mark.parametrize("Policy", [LogisticUCB1, ECOLog])
def test_newton_estimate_is_the_penalised_mle(Policy):
    X, actions, rewards, rows = logistic_data(80, 3, 4, 0)
    w = np.random.RandomState(1).randint(1, 3, size=80).astype(float)
    policy = Policy(
        standardize=False, solver="newton", alpha=0.7, train_every=1, tol=1e-10
    )
    policy.fit(X, actions, rewards, sample_weight=w)
    assert_allclose(policy.coef_[0], penalised_mle(rows, rewards, 0.7, w), atol=1e-6)


def test_gradient_descent_converges_to_the_penalised_mle():
    X, actions, rewards, rows = logistic_data(60, 3, 4, 2)
    policy = LogisticUCB1(
        standardize=False, n_steps=20_000, learning_rate=1.0, train_every=1
    )
    policy.fit(X, actions, rewards)  # one training on all rows
    assert_allclose(policy.coef_[0], penalised_mle(rows, rewards, 1.0), atol=1e-5)


def test_gradient_descent_steps_follow_the_mean_objective():
    # n_steps steps of theta -= lr grad / n from theta = 0, by hand.
    X, actions, rewards, rows = logistic_data(30, 2, 3, 3)
    policy = LogisticUCB1(
        standardize=False, n_steps=7, learning_rate=0.3, alpha=0.5, train_every=30
    )
    policy.fit(X, actions, rewards)
    theta = np.zeros(3)
    for _ in range(7):
        grad = rows.T @ (expit(rows @ theta) - rewards) + 2 * 0.5 * theta
        theta = theta - 0.3 * grad / 30
    assert_allclose(policy.coef_[0], theta, rtol=1e-10)


def test_training_happens_every_train_every_rounds():
    X, actions, rewards, _ = logistic_data(10, 2, 3, 4)
    policy = LogisticUCB1(standardize=False, train_every=5)
    for t in range(4):
        policy.partial_fit(X[t : t + 1], actions[t : t + 1], rewards[t : t + 1])
    assert_array_equal(policy.coef_, 0.0)  # no training before round 5
    policy.partial_fit(X[4:5], actions[4:5], rewards[4:5])
    assert np.any(policy.coef_ != 0.0)


@pytest.mark.parametrize("Policy", [LogisticUCB1, ECOLog])
def test_shared_contexts_are_the_disjoint_encoding(Policy):
    # One block per arm on (n, d) == one model on [0, .., x, .., 0] in R^{dK}.
    K, d = 3, 4
    X, actions, rewards, _ = logistic_data(70, K, d, 5, per_arm=False)
    encoded = np.zeros((70, K, K * d))
    for k in range(K):
        encoded[:, k, k * d : (k + 1) * d] = X
    params = {"solver": "newton", "train_every": 10, "tol": 1e-10, "nu": 0.7}
    shared = Policy(standardize=False, **params).fit(X, actions, rewards)
    joint = Policy(standardize=False, **params).fit(encoded, actions, rewards)
    assert_allclose(shared.coef_.ravel(), joint.coef_[0], atol=1e-7)
    assert_allclose(shared.effective_dimension_, joint.effective_dimension_)
    for a, b in zip(
        shared.predict_scores(X[:9], return_std=True),
        joint.predict_scores(encoded[:9], return_std=True),
        strict=True,
    ):
        assert_allclose(a, b, rtol=1e-6, atol=1e-9)


# --------------------------------------------------------------- LogisticUCB1
@pytest.mark.parametrize("kappa, S, delta", [(10.0, 1.0, 0.05), (50.0, 3.0, 0.2)])
def test_logistic_ucb1_width_from_dense_algebra(kappa, S, delta):
    X, actions, rewards, rows = logistic_data(40, 3, 4, 6)
    alpha, nu = 0.8, 0.3
    policy = LogisticUCB1(
        standardize=False,
        nu=nu,
        confidence="theory",
        alpha=alpha,
        kappa=kappa,
        norm_bound=S,
        delta=delta,
        train_every=15,
    ).fit(X, actions, rewards)
    V = rows.T @ rows + kappa * alpha * np.eye(4)
    d_eff = np.linalg.slogdet(np.eye(4) + R * rows.T @ rows / alpha)[1]
    gamma = np.sqrt(alpha) * (S + 0.5) + 2 / np.sqrt(alpha) * (
        np.log(1 / delta) + d_eff / 2 + 4 * np.log(2)
    )
    norms = np.sqrt(np.einsum("nkd,de,nke->nk", X[:5], np.linalg.inv(V), X[:5]))
    mean, bonus = policy.predict_scores(X[:5], return_std=True)
    assert_allclose(mean, expit(X[:5] @ policy.coef_[0]))
    assert_allclose(
        bonus, nu * R * (2 + 4 * S) * np.sqrt(kappa) * gamma * norms, rtol=1e-9
    )
    assert_array_equal(policy.select(X[:5]), np.argmax(mean + bonus, axis=1))
    # the practical default: the same norms times nu alone
    practical = LogisticUCB1(
        standardize=False, nu=nu, alpha=alpha, kappa=kappa, train_every=15
    )
    practical.fit(X, actions, rewards)
    assert_allclose(practical.predict_scores(X[:5], return_std=True)[1], nu * norms)


# --------------------------------------------------------------------- ECOLog
def test_ecolog_weights_are_frozen_at_the_estimate_after_their_block():
    X, actions, rewards, rows = logistic_data(30, 3, 4, 7)
    alpha = 0.6
    policy = ECOLog(
        standardize=False, alpha=alpha, train_every=10, n_steps=20, learning_rate=0.5
    )
    W = alpha * np.eye(4)
    for start in range(0, 30, 5):  # blocks close at 10, 20, 30
        sl = slice(start, start + 5)
        policy.partial_fit(X[sl], actions[sl], rewards[sl])
        if (start + 5) % 10 == 0:
            block = rows[start - 5 : start + 5]
            slope = expit(block @ policy.coef_[0]) * expit(-block @ policy.coef_[0])
            W += (slope[:, None] * block).T @ block
            assert policy.n_weighted_ == start + 5
        else:
            assert policy.n_weighted_ == start  # the open block waits
        assert_allclose(policy.covariance_[0], np.linalg.inv(W), rtol=1e-8, atol=1e-12)


def test_ecolog_streamlined_radius_from_dense_algebra():
    X, actions, rewards, rows = logistic_data(40, 3, 4, 8)
    alpha, S, delta, nu = 1.5, 2.0, 0.1, 0.4
    policy = ECOLog(
        standardize=False, nu=nu, alpha=alpha, norm_bound=S, delta=delta, train_every=20
    )
    policy.fit(X, actions, rewards)
    d_eff = np.linalg.slogdet(np.eye(4) + R * rows.T @ rows / alpha)[1]
    radius = np.sqrt(2 * alpha * S**2 + (1 + S) ** 2 * (d_eff + np.log(1 / delta)))
    norms = np.sqrt(np.einsum("nkd,de,nke->nk", X[:6], policy.covariance_[0], X[:6]))
    mean, bonus = policy.predict_scores(X[:6], return_std=True)
    assert_allclose(mean, X[:6] @ policy.coef_[0])  # logit space
    assert_allclose(bonus, nu * radius * norms, rtol=1e-9)


def _proximal_by_scipy(theta, W, x, loss):
    def objective(v):
        diff = v - theta
        return 0.5 * diff @ W @ diff + loss(x @ v)

    return minimize(objective, theta, method="BFGS", options={"gtol": 1e-11}).x


def test_ecolog_online_steps_against_a_direct_solve():
    X, actions, rewards, rows = logistic_data(25, 3, 4, 9)
    alpha, S = 1.0, 1.0
    policy = ECOLog(
        standardize=False, solver="online", nu=1.0, alpha=alpha, norm_bound=S
    )
    theta, W, terms, failures = np.zeros(4), alpha * np.eye(4), 0.0, 0
    for t in range(25):
        x, r = rows[t], rewards[t]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConfidenceConditionWarning)
            policy.partial_fit(X[t : t + 1], actions[t : t + 1], rewards[t : t + 1])
        new = _proximal_by_scipy(
            theta, W, x, lambda z, r=r: -(r * log_expit(z) + (1 - r) * log_expit(-z))
        )
        bar = _proximal_by_scipy(theta, W, x, lambda z: -log_expit(z) - log_expit(-z))
        assert_allclose(policy.coef_[0], new, atol=1e-6)

        def loss(z, r=r):
            return -(r * log_expit(z) + (1 - r) * log_expit(-z))

        term = 2 * (1 + S) * (loss(x @ bar) - loss(x @ new))
        term -= 0.5 * (new - bar) @ W @ (new - bar)
        slope = expit(x @ new) * expit(-x @ new)
        failures += expit(x @ bar) * expit(-x @ bar) > 2 * slope
        terms += term
        W = W + slope * np.outer(x, x)
        theta = new
        assert_allclose(policy.covariance_[0], np.linalg.inv(W), rtol=1e-5, atol=1e-7)
    gamma = 0.5 + 2 * np.log(2 * np.sqrt(1 + 26 / 4) / 0.05)
    radius = np.sqrt(2 * S**2 + (1 + S) ** 2 * gamma + terms)
    assert failures == policy.n_condition_failures_ == 0  # alpha = 1: no fallback
    _, bonus = policy.predict_scores(X[:3], return_std=True)
    norms = np.sqrt(np.einsum("nkd,de,nke->nk", X[:3], np.linalg.inv(W), X[:3]))
    assert_allclose(bonus, radius * norms, rtol=1e-5)


def test_ecolog_condition_failure_warns_and_falls_back():
    # A unit row with a tiny ridge and reward 1: theta jumps far, theta_bar stays at 0,
    # so mu'(x^T theta_bar) = 1/4 > 2 mu'(x^T theta).
    alpha, S, delta = 0.01, 1.0, 0.05
    policy = ECOLog(
        standardize=False, n_actions=1, solver="online", nu=1.0, alpha=alpha
    )
    x = np.array([[1.0, 0.0]])
    with pytest.warns(ConfidenceConditionWarning, match="failed on 1 round"):
        policy.partial_fit(x, [0], [1.0])
    assert policy.n_condition_failures_ == 1
    z = policy.coef_[0, 0]
    assert expit(z) * expit(-z) < 0.125  # the failing case it was built to be
    # The fallback radius: the larger of the adaptive and the streamlined one.
    c = expit(z) - 1.0  # theta = -c W^{-1} x, theta_bar = 0
    term = 2 * (1 + S) * (np.log(2.0) + log_expit(z)) - 0.5 * c**2 / alpha
    gamma = np.sqrt(alpha) / 2 + 2 / np.sqrt(alpha) * np.log(
        2 * np.sqrt(1 + 2 / (4 * alpha)) / delta
    )
    adaptive = 2 * alpha * S**2 + (1 + S) ** 2 * gamma + term
    d_eff = np.log(1 + R / alpha)
    streamlined = 2 * alpha * S**2 + (1 + S) ** 2 * (d_eff + np.log(1 / delta))
    W_inv = 1 / (alpha + expit(z) * expit(-z))
    _, bonus = policy.predict_scores(x, return_std=True)
    assert_allclose(bonus[0, 0], np.sqrt(max(adaptive, streamlined) * W_inv))


def test_ecolog_condition_holds_quietly_with_enough_ridge():
    policy = ECOLog(standardize=False, n_actions=1, solver="online", nu=1.0, alpha=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConfidenceConditionWarning)
        policy.partial_fit(np.array([[1.0, 0.0]]), [0], [1.0])
    assert policy.n_condition_failures_ == 0


# -------------------------------------------------------------------- NCBFUCB
def test_ncbf_ucb_width_from_its_design_matrix(one_torch_thread):
    torch = pytest.importorskip("torch")
    X, actions, rewards, _ = logistic_data(30, 3, 4, 10)
    kappa, alpha, S, delta, nu = 20.0, 0.5, 2.0, 0.1, 0.3
    policy = NCBFUCB(
        nu=nu,
        kappa=kappa,
        alpha=alpha,
        norm_bound=S,
        delta=delta,
        hidden_layer_sizes=(6,),
        covariance="full",
        train_every=10,
        # the network reads the contexts as given, so that the reference below
        # computes its tangent features on the same inputs
        standardize=False,
        random_state=0,
    ).fit(X, actions, rewards)
    import copy

    from skbandit.networks import tangent_features

    module = policy.net_.module_
    # One fit call: every chosen arm entered V at theta_0, before the training.
    start = copy.deepcopy(module)
    torch.nn.utils.vector_to_parameters(
        torch.as_tensor(policy.theta0_, dtype=torch.float32), start.parameters()
    )
    _, g0 = tangent_features(start, torch.as_tensor(X, dtype=torch.float32))
    g0 = g0.detach().numpy().astype(np.float64)[np.arange(30), actions]
    V = g0.T @ g0 + kappa * alpha * np.eye(g0.shape[1])
    assert_allclose(np.linalg.inv(policy.covariance_), V, rtol=1e-4, atol=1e-4)
    d_eff = np.linalg.slogdet(V / (kappa * alpha))[1]
    f, g = tangent_features(module, torch.as_tensor(X[:4], dtype=torch.float32))
    g = g.detach().numpy().astype(np.float64)
    norms = np.sqrt(np.einsum("nkp,pq,nkq->nk", g, np.linalg.inv(V), g))
    width = nu * (
        kappa * np.sqrt(d_eff + 2 * np.log(1 / delta)) + S * np.sqrt(kappa * alpha) + 1
    )
    logits = f.detach().numpy().astype(np.float64)
    mean, bonus = policy.predict_scores(X[:4], return_std=True)
    # Probability space: mu(f), and the logit bonus carried there exactly.
    assert_allclose(mean, expit(logits), rtol=1e-5, atol=1e-6)
    assert_allclose(bonus, expit(logits + width * norms) - expit(logits), rtol=1e-3)
    # The selection's index stays the logit one: argmax f + b.
    assert_array_equal(policy.select(X[:4]), np.argmax(logits + width * norms, 1))
    assert_allclose(policy.effective_dimension_, d_eff, rtol=1e-6)


def test_ncbf_ucb_trains_on_the_logistic_loss():
    pytest.importorskip("torch")
    X, actions, rewards, _ = logistic_data(12, 2, 3, 11)
    policy = NCBFUCB(hidden_layer_sizes=(5,), train_every=4, random_state=0)
    policy.fit(X, actions, rewards)
    assert type(policy.net_.criterion_).__name__ == "LogisticLoss"
    assert policy.n_trainings_ == 1


# ---------------------------------------------------------------- invariances
def _choices(policy, X, actions_seed=0):
    """Online loop on fixed contexts with rewards from a fixed logistic model."""
    rng = np.random.RandomState(actions_seed)
    theta = rng.uniform(-1, 1, X.shape[-1])
    chosen = []
    for t in range(X.shape[0]):
        a = policy.select(X[t : t + 1])
        r = float(rng.rand() < expit(3 * X[t, a[0]] @ theta))
        policy.partial_fit(X[t : t + 1], a, [r])
        chosen.append(int(a[0]))
    return chosen


def test_choices_and_kappa():
    # The note's check 8: Logistic-UCB-1's sqrt(kappa) width and kappa-alpha ridge
    # change its choices. ECOLog's half of the check (no kappa, so no change) holds
    # by its signature: running it twice with the same arguments could not fail.
    X = np.random.RandomState(12).uniform(-1, 1, size=(80, 5, 6))
    runs = [
        _choices(
            LogisticUCB1(
                kappa=kappa, confidence="theory", train_every=10, random_state=0
            ),
            X,
        )
        for kappa in (1.0, 200.0)
    ]
    assert runs[0] != runs[1]
    assert "kappa" not in ECOLog().get_params()


def test_ncbf_ucb_choices_change_with_kappa():
    pytest.importorskip("torch")
    X = np.random.RandomState(13).uniform(-1, 1, size=(60, 5, 4))
    runs = [
        _choices(
            NCBFUCB(
                kappa=kappa,
                hidden_layer_sizes=(6,),
                train_every=20,
                nu=0.1,
                random_state=0,
            ),
            X,
        )
        for kappa in (1.0, 200.0)
    ]
    assert runs[0] != runs[1]
