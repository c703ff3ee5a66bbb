"""NeuralTS, NeuralUCB, NeuralEpsilonGreedy: paper 000's maths and the contract."""
# SPDX-License-Identifier: BSD-3-Clause

import copy

import joblib
import numpy as np
import pytest
import torch
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats
from sklearn.base import clone

from skbandit.exceptions import NumericalError
from skbandit.networks import tangent_features
from skbandit.networks._training import set_flat_parameters
from skbandit.policies import (
    NeuralEpsilonGreedy,
    NeuralTS,
    NeuralUCB,
    RandomPolicy,
)
from skbandit.preprocessing import MirrorNormalizer
from skbandit.utils._param_validation import InvalidParameterError

POLICIES = [NeuralTS, NeuralUCB, NeuralEpsilonGreedy]
#: A small network on the papers' schedule (every round, full batch, the whole
#: history): the tests below check the per-round maths.
SCHEDULE = {"train_every": 1, "batch_size": None, "max_buffer_size": None}
TINY = {**SCHEDULE, "hidden_layer_sizes": (6,), "n_steps": 3, "learning_rate": 0.05}


# The maths on the contexts as given (standardize="auto" would scale them).
pytestmark = pytest.mark.usefixtures("one_torch_thread", "neural_contexts_as_given")


def _mirrored(n, d=3, K=None, seed=0):
    rng = np.random.RandomState(seed)
    raw = rng.normal(size=(n, d) if K is None else (n, K, d))
    return MirrorNormalizer().fit_transform(raw).astype(np.float32)


def _phi(policy, X):
    module = copy.deepcopy(policy.net_.module_).double()
    return tangent_features(module, torch.as_tensor(X).double())[1].numpy()


@pytest.mark.parametrize("Policy", POLICIES)
@pytest.mark.parametrize("per_arm", [False, True])
def test_zero_prior_mean_and_shapes(Policy, per_arm):
    X = _mirrored(4, K=3 if per_arm else None)
    policy = Policy(n_actions=3, random_state=0, **TINY)
    assert policy.select(X).shape == (4,)
    assert np.abs(policy.predict_scores(X)).max() <= 1e-6
    assert_array_equal(
        policy.net_.module_.layers[0].weight.detach().ravel()[:3], policy.theta0_[:3]
    )
    proba = policy.predict_action_proba(X)
    assert_allclose(proba.sum(axis=1), 1.0)


@pytest.mark.parametrize("Policy", [NeuralTS, NeuralUCB])
@pytest.mark.parametrize("covariance", ["full", "diag"])
def test_exact_posterior_shrinkage_on_repeated_context(Policy, covariance):
    # theta frozen (learning_rate=0): after n updates with the same phi,
    # full: sigma^2 = lam s / (lam + n s), s = ||phi||^2 (Sherman-Morrison);
    # diag: sigma^2 = lam sum_j phi_j^2 / (lam + n phi_j^2).
    lam, K = 0.5, 2
    X = _mirrored(1, K=K)
    policy = Policy(
        alpha=lam,
        covariance=covariance,
        learning_rate=0.0,
        hidden_layer_sizes=(16,),
        n_steps=1,
        random_state=0,
    )
    scale = 1.0
    if Policy is NeuralTS:
        policy.set_params(nu=0.7)
        scale = 0.7
    policy.select(X)
    previous = None
    for n in range(6):
        if n:
            policy.partial_fit(X, [0], [1.0])
        std = policy.predict_scores(X, return_std=True)[1][0] / scale
        phi = _phi(policy, X)[0, 0]
        if covariance == "full":
            s = phi @ phi
            expected = lam * s / (lam + n * s)
        else:
            expected = lam * np.sum(phi**2 / (lam + n * phi**2))
        assert_allclose(std[0] ** 2, expected, rtol=1e-4)
        if previous is not None:
            assert std[0] < previous
        previous = std[0]


def test_disjoint_shrinkage_is_arm_specific():
    X = _mirrored(1)
    policy = NeuralTS(
        n_actions=2,
        learning_rate=0.0,
        random_state=0,
        **{"hidden_layer_sizes": (6,), "n_steps": 1},
    )
    policy.select(X)
    std0 = policy.predict_scores(X, return_std=True)[1][0]
    for _ in range(5):
        policy.partial_fit(X, [1], [1.0])
    std = policy.predict_scores(X, return_std=True)[1][0]
    assert std[1] < std[0] and std[1] < std0[1]


def test_update_order_ts_after_training_ucb_before():
    # NeuralTS: U_1 = lam I + phi(x; theta_1) phi^T (Algorithm 1, line 10);
    # NeuralUCB: U_1 = lam I + phi(x; theta_0) phi^T.
    X = _mirrored(1, K=2)
    for Policy in (NeuralTS, NeuralUCB):
        policy = Policy(
            covariance="full",
            alpha=1.0,
            hidden_layer_sizes=(4,),
            n_steps=5,
            learning_rate=0.1,
            train_every=1,
            random_state=0,
        )
        policy.partial_fit(X, [1], [1.0])
        phi_after = _phi(policy, X)[0, 1]
        set_flat_parameters(policy.net_.module_, torch.as_tensor(policy.theta0_))
        phi_before = _phi(policy, X)[0, 1]
        assert not np.allclose(phi_before, phi_after)
        phi = phi_after if Policy is NeuralTS else phi_before
        U = np.eye(phi.size) + np.outer(phi, phi)
        assert_allclose(policy.covariance_, np.linalg.inv(U), atol=1e-5)


def test_sampling_law_of_select():
    X = _mirrored(1)
    policy = NeuralTS(n_actions=2, nu=0.3, random_state=0, **TINY)
    policy.partial_fit(_mirrored(8, seed=1), np.arange(8) % 2, np.linspace(0, 1, 8))
    mean, std = policy.predict_scores(X, return_std=True)
    sampler = policy._score_sampler(X)
    draws = np.array([sampler(policy._rng)[0] for _ in range(2000)])
    z = (draws - mean) / std  # std = nu sigma
    for k in range(2):
        assert stats.kstest(z[:, k], "norm").pvalue > 0.01
    assert abs(np.corrcoef(z.T)[0, 1]) < 0.1  # independent across arms
    # Frequency of arm 0 in select = P(N(f0, s0^2) > N(f1, s1^2)).
    chosen = policy.select(np.repeat(X, 4000, axis=0))
    p0 = stats.norm.cdf((mean[0, 0] - mean[0, 1]) / np.hypot(*std[0]))
    assert abs(np.mean(chosen == 0) - p0) < 4 * np.sqrt(p0 * (1 - p0) / 4000) + 1e-3


def test_nu_zero_is_greedy_and_equals_ucb_beta_zero():
    X = _mirrored(30, seed=2)
    Xf, a, r = _mirrored(20, seed=3), np.arange(20) % 3, np.linspace(-1, 1, 20)
    ts = NeuralTS(n_actions=3, nu=0.0, random_state=0, **TINY).fit(Xf, a, r)
    ucb = NeuralUCB(n_actions=3, beta=0.0, random_state=0, **TINY).fit(Xf, a, r)
    assert_array_equal(ts.select(X), ts.predict(X))
    assert_array_equal(ts.select(X), ucb.select(X))


@pytest.mark.parametrize("Policy", POLICIES)
def test_penalty_keeps_theta0_without_signal(Policy):
    X = _mirrored(5)

    def distance(alpha, rewards):
        policy = Policy(n_actions=2, alpha=alpha, random_state=0, **TINY)
        policy.partial_fit(X, np.arange(5) % 2, rewards)
        theta = torch.cat(
            [p.detach().ravel() for p in policy.net_.module_.parameters()]
        )
        return np.linalg.norm(theta.numpy() - policy.theta0_)

    # Zero targets at f(theta_0) = 0: the data gradient is zero, and a penalty
    # centred anywhere but theta_0 would pull theta away.
    assert distance(1.0, np.zeros(5)) == 0.0
    # With a signal, theta moves, and a stronger penalty keeps it closer to theta_0.
    far, near = distance(1e-3, np.ones(5)), distance(10.0, np.ones(5))
    assert far > 0 and near < 0.75 * far


def test_restart_from_theta0_depends_only_on_the_buffer():
    X, a, r = _mirrored(6, seed=4), np.arange(6) % 2, np.linspace(0, 1, 6)
    batch = NeuralTS(n_actions=2, warm_start=False, random_state=0, **TINY).fit(X, a, r)
    online = NeuralTS(n_actions=2, warm_start=False, random_state=0, **TINY)
    for i in range(6):
        online.partial_fit(X[i : i + 1], a[i : i + 1], r[i : i + 1])
    assert_allclose(online.predict_scores(X), batch.predict_scores(X), atol=1e-6)
    warm = NeuralTS(n_actions=2, random_state=0, **TINY)
    for i in range(6):
        warm.partial_fit(X[i : i + 1], a[i : i + 1], r[i : i + 1])
    assert not np.allclose(warm.predict_scores(X), batch.predict_scores(X))


def test_train_every_max_train_rounds_and_buffer():
    X, a, r = _mirrored(10, seed=5), np.arange(10) % 2, np.ones(10)
    policy = NeuralTS(
        n_actions=2,
        max_train_rounds=7,
        random_state=0,
        **{**TINY, "train_every": 3, "max_buffer_size": 4},
    )
    for i in range(10):
        policy.partial_fit(X[i : i + 1], a[i : i + 1], r[i : i + 1])
    assert policy.n_trainings_ == 2  # at rounds 3 and 6; frozen from round 8
    assert policy._core.buffer.X.shape[0] == 4
    assert policy.n_samples_seen_ == 10
    frozen = NeuralTS(n_actions=2, max_train_rounds=0, random_state=0, **TINY)
    frozen.partial_fit(X, a, r)
    assert frozen.n_trainings_ == 0 and np.all(frozen.covariance_ == 1.0)


def test_sample_weight_and_minibatches():
    X, a, r = _mirrored(6, seed=6), np.arange(6) % 2, np.ones(6)
    w = np.array([1.0, 0.0, 2.0, 1.0, 0.0, 1.0])
    full = NeuralTS(n_actions=2, covariance="full", random_state=0, **TINY)
    full.fit(X, a, r, sample_weight=w)
    keep = w > 0
    ref = NeuralTS(n_actions=2, covariance="full", random_state=0, **TINY)
    ref.fit(
        np.repeat(X[keep], w[keep].astype(int), axis=0),
        np.repeat(a[keep], w[keep].astype(int)),
        np.ones(5),
    )
    assert_allclose(full.covariance_, ref.covariance_, atol=1e-5)
    mini = NeuralUCB(n_actions=2, random_state=0, **{**TINY, "batch_size": 2})
    mini.fit(X, a, r)
    assert mini.n_trainings_ == 1


@pytest.mark.parametrize("Policy", POLICIES)
def test_persistence_continues_select_sequence(Policy, tmp_path):
    X = _mirrored(12, seed=7)
    policy = Policy(n_actions=3, random_state=0, **TINY)
    policy.partial_fit(X[:6], policy.select(X[:6]), np.ones(6))
    joblib.dump(policy, tmp_path / "p.joblib")
    loaded = joblib.load(tmp_path / "p.joblib")
    for p in (policy, loaded):
        a = p.select(X[6:])
        p.partial_fit(X[6:], a, np.linspace(0, 1, 6))
    assert_array_equal(policy.select(X), loaded.select(X))
    assert_allclose(
        policy.predict_scores(X, return_std=True)[1],
        loaded.predict_scores(X, return_std=True)[1],
    )
    assert_array_equal(policy.theta0_, loaded.theta0_)
    assert_array_equal(policy._core.buffer.X, loaded._core.buffer.X)


@pytest.mark.parametrize("Policy", POLICIES)
def test_clone_params_and_validation(Policy):
    policy = Policy(n_actions=3, **TINY)
    params = policy.get_params()
    assert clone(policy).get_params() == params
    assert set(params) == set(Policy._parameter_constraints)
    policy.set_params(alpha=0.01)
    assert policy.alpha == 0.01
    with pytest.raises(InvalidParameterError):
        Policy(n_actions=3, alpha=-1.0).select(_mirrored(1))
    with pytest.raises(ValueError, match="even"):
        Policy(n_actions=3, hidden_layer_sizes=(5,)).select(_mirrored(1))
    for params in Policy._get_test_params():
        Policy(**params).fit(_mirrored(4), [0, 1, 2, 0], np.ones(4)).select(
            _mirrored(2)
        )


@pytest.mark.parametrize("Policy", [NeuralTS, NeuralUCB])
def test_failed_partial_fit_leaves_policy_unchanged(Policy):
    X = _mirrored(4, seed=8)
    policy = Policy(n_actions=2, random_state=0, **TINY)
    policy.partial_fit(X, [0, 1, 0, 1], np.ones(4))
    before = (
        policy.predict_scores(X, return_std=True),
        policy._core.buffer.X.copy(),
        policy.covariance_.copy(),
        policy.n_samples_seen_,
    )
    with pytest.raises(ValueError):
        policy.partial_fit(X, [0, 1, 0, 1], [1.0, np.nan, 0.0, 1.0])
    policy.set_params(learning_rate=1e20, reduction="sum", n_steps=30)
    with pytest.raises(NumericalError):
        policy.partial_fit(X, [0, 1, 0, 1], 1e6 * np.ones(4))
    after = (
        policy.predict_scores(X, return_std=True),
        policy._core.buffer.X,
        policy.covariance_,
        policy.n_samples_seen_,
    )
    assert_allclose(before[0][0], after[0][0])
    assert_allclose(before[0][1], after[0][1])
    assert_array_equal(before[1], after[1])
    assert_array_equal(before[2], after[2])
    assert before[3] == after[3]


@pytest.mark.parametrize("seed", [0, 1])
def test_beats_random_on_a_nonlinear_problem(seed):
    # Per-arm rewards (a_k^T x)^2: a quadratic in x that no arm-wise linear model fits.
    rng = np.random.RandomState(seed)
    K, d, T = 3, 3, 300
    A = rng.normal(size=(K, d))
    raw = rng.normal(size=(T, d))
    raw /= np.linalg.norm(raw, axis=1, keepdims=True)
    X = MirrorNormalizer().fit_transform(raw).astype(np.float32)
    mu = (raw @ A.T) ** 2
    total = {}
    for name, policy in {
        "ts": NeuralTS(
            n_actions=K,
            hidden_layer_sizes=(16,),
            n_steps=20,
            learning_rate=0.2,
            alpha=0.01,
            nu=0.01,
            random_state=seed,
        ),
        "random": RandomPolicy(n_actions=K, random_state=seed),
    }.items():
        got = 0.0
        for t in range(0, T, 5):  # delayed batches of 5 keep the test fast
            a = policy.select(X[t : t + 5])
            r = mu[np.arange(t, t + 5), a] + 0.1 * rng.normal(size=5)
            policy.partial_fit(X[t : t + 5], a, r)
            got += mu[np.arange(t, t + 5), a].sum()
        total[name] = got
    best = mu.max(axis=1).sum()
    regret_ts, regret_random = best - total["ts"], best - total["random"]
    # Over seeds 0-7 the ratio was 0.09-0.49.
    assert regret_ts < 0.7 * regret_random


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_gpu_fitted_policy_selects_on_cpu(tmp_path):
    X = _mirrored(6, seed=9)
    policy = NeuralTS(n_actions=2, device="cuda", random_state=0, **TINY)
    policy.partial_fit(X, policy.select(X), np.ones(6))
    for name, value in vars(policy).items():
        if name != "net_":
            assert not isinstance(value, torch.Tensor), name
    joblib.dump(policy, tmp_path / "p.joblib")
    expected = policy.select(X)
    loaded = joblib.load(tmp_path / "p.joblib").set_params(device="cpu")
    assert_array_equal(loaded.select(X), expected)
    assert next(loaded.net_.module_.parameters()).device.type == "cpu"
    loaded.partial_fit(X, expected, np.ones(6))  # and it goes on learning there


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a CPU-only machine")
def test_cuda_policy_on_a_cpu_only_machine_computes_on_cpu():
    # What a GPU-fitted pickle meets on a CPU server (skorch maps it to the CPU).
    X = _mirrored(6, seed=9)
    policy = NeuralTS(n_actions=2, random_state=0, **TINY)
    policy.partial_fit(X, policy.select(X), np.ones(6))
    expected = copy.deepcopy(policy).select(X)
    policy.set_params(device="cuda")
    assert_array_equal(policy.select(X), expected)  # no warning: nothing moves
    policy.partial_fit(X, expected, np.ones(6))
    assert next(policy.net_.module_.parameters()).device.type == "cpu"


class _Wrapped(torch.nn.Module):
    """A network the policies do not know: the papers' MLP behind a plain forward."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.scale = inner.scale

    def forward(self, X):
        return self.inner(X)


class _Towers(torch.nn.Module):
    def __init__(self, n_features, n_actions, hidden=8):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Linear(n_features, hidden), torch.nn.ReLU()
        )
        self.heads = torch.nn.Linear(hidden, n_actions)

    def forward(self, X):
        return self.heads(self.body(X))


@pytest.mark.parametrize("covariance", ["diag", "full"])
@pytest.mark.parametrize("per_arm", [False, True])
def test_custom_module_follows_the_generic_path_exactly(covariance, per_arm):
    # torch.func features and autograd steps on a wrapped BanditMLP give what the
    # closed form and the hand-written backward give on the bare one.
    X = _mirrored(40, K=3 if per_arm else None)
    rng = np.random.default_rng(0)
    a, r = rng.integers(0, 3, 40), rng.normal(size=40)
    params = dict(
        n_actions=3,
        hidden_layer_sizes=(6,),
        learning_rate=0.05,
        covariance=covariance,
        random_state=0,
    )
    at_init = NeuralTS(n_steps=0, **params).partial_fit(X[:1], a[:1], r[:1])
    inner = copy.deepcopy(at_init.net_.module_)
    bare = NeuralTS(n_steps=10, **params).partial_fit(X, a, r)
    custom = NeuralTS(n_steps=10, module=_Wrapped(inner), **params).partial_fit(X, a, r)
    assert custom.n_parameters_ == bare.n_parameters_
    for got, want in zip(
        custom.predict_scores(X, return_std=True),
        bare.predict_scores(X, return_std=True),
        strict=True,
    ):
        # 10 float32 training steps through the wrapper against the bare network:
        # 2.2e-6 measured; 1e-4 leaves 45 times that, and a step more or less
        # moves the scores by 1e-2 (the assertion below).
        assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert not np.allclose(bare.predict_scores(X), at_init.predict_scores(X))
    # The instance given was copied, not trained in place.
    assert_allclose(
        inner.layers[0].weight.detach(), at_init.net_.module_.layers[0].weight.detach()
    )


def test_custom_module_class_and_skorch_net(tmp_path):
    from skorch import NeuralNetRegressor

    X = np.random.default_rng(0).normal(size=(60, 5)).astype(np.float32)
    a = np.arange(60) % 3
    r = (X[:, 0] * (a - 1) > 0).astype(float)
    policy = NeuralUCB(
        n_actions=3, module=_Towers, n_steps=5, learning_rate=0.05, random_state=0
    ).partial_fit(X, a, r)
    assert isinstance(policy.net_.module_, _Towers)
    assert policy.n_parameters_ == 5 * 8 + 8 + 8 * 3 + 3
    assert np.all(policy.predict_scores(X[:4], return_std=True)[1] > 0)
    joblib.dump(policy, tmp_path / "p.joblib")
    loaded = joblib.load(tmp_path / "p.joblib")
    assert_array_equal(loaded.select(X), policy.select(X))

    net = NeuralNetRegressor(
        _Towers, module__hidden=4, optimizer=torch.optim.Adam, lr=9.0
    )
    # The policy drives the steps: a net's lr would be ignored, so it is refused.
    with pytest.raises(ValueError, match="lr -> the policy's learning_rate"):
        NeuralTS(n_actions=3, net=net).partial_fit(X, a, r)
    net.set_params(lr=0.01)  # skorch's default: fine
    policy = NeuralTS(
        n_actions=3, net=net, n_steps=5, learning_rate=0.01, random_state=0
    ).partial_fit(X, a, r)
    assert isinstance(policy.net_.optimizer_, torch.optim.Adam)
    assert policy.net_.optimizer_.param_groups[0]["lr"] == 0.01  # the policy's
    assert policy.n_parameters_ == 5 * 4 + 4 + 4 * 3 + 3
    assert not hasattr(net, "module_")  # the net given is never fitted in place
    assert clone(policy).get_params()["net"] is not net


class _PerArmScorer(torch.nn.Module):
    """Scores each arm's own vector; accepts per-arm contexts (n, K, d) only."""

    def __init__(self, n_features):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Linear(n_features, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1)
        )

    def forward(self, X):
        assert X.ndim == 3, "per-arm contexts expected"
        return self.body(X)[..., 0]


def test_custom_module_on_per_arm_contexts_sees_per_arm_shapes():
    X = _mirrored(50, d=4, K=3)
    rng = np.random.default_rng(0)
    a, r = rng.integers(0, 3, 50), rng.normal(size=50)
    policy = NeuralTS(
        module=_PerArmScorer, n_steps=5, learning_rate=0.05, random_state=0
    ).partial_fit(X, a, r)
    before = policy.predict_scores(X)
    policy.partial_fit(X, a, r)
    assert policy.select(X).shape == (50,)
    assert not np.allclose(policy.predict_scores(X), before)  # it trained


@pytest.mark.parametrize("Policy", [NeuralTS, NeuralUCB])
def test_a_batch_is_one_delayed_update(Policy):
    # Experiment II: B rounds fed back at once train once, and U gains the B pulled
    # arms' phi^2 at one theta: theta_1 (after training) for NeuralTS, theta_0 for UCB.
    X = _mirrored(12)
    rng = np.random.default_rng(0)
    a, r = rng.integers(0, 2, 12), rng.normal(size=12)
    policy = Policy(n_actions=2, alpha=0.5, random_state=0, **TINY)
    policy.select(X)  # builds theta_0
    at_theta0 = _phi(policy, X)[np.arange(12), a]
    policy.partial_fit(X, a, r)
    assert policy.n_trainings_ == 1
    phi = at_theta0 if Policy is NeuralUCB else _phi(policy, X)[np.arange(12), a]
    assert_allclose(policy.covariance_, 1 / (0.5 + (phi**2).sum(0)), rtol=1e-4)
    sequential = Policy(n_actions=2, alpha=0.5, random_state=0, **TINY)
    for i in range(12):
        sequential.partial_fit(X[i : i + 1], a[i : i + 1], r[i : i + 1])
    assert sequential.n_trainings_ == 12
    assert not np.allclose(sequential.covariance_, policy.covariance_)
