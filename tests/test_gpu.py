"""``device="cuda"`` computes what ``device="cpu"`` computes (skipped without CUDA).

Each test feeds the same rounds to a CPU and a CUDA copy of a policy and compares
their fitted state and scores: the network, ``U`` and the exploration widths must
agree to float32 rounding (the GPU's reductions run in another order), so a bug that
leaves a tensor on the wrong device, skips a step or mixes devices fails here. Runs
on the lent GPU machine with ``pytest tests/test_gpu.py``.
"""
# SPDX-License-Identifier: BSD-3-Clause

import copy
import subprocess
import sys

import joblib
import numpy as np
import pytest
import torch
from numpy.testing import assert_allclose, assert_array_equal
from skorch import NeuralNetRegressor

import skbandit
from skbandit.networks import (
    BanditMLP,
    initialize_net,
    make_bandit_net,
    tangent_features,
)
from skbandit.networks._training import get_flat_parameters, proximal_gradient_descent
from skbandit.policies import (
    CNTS,
    CNUCB,
    NCBFUCB,
    NeuralBootstrap,
    NeuralEpsilonGreedy,
    NeuralES,
    NeuralLinear,
    NeuralLogTS,
    NeuralLogUCB,
    NeuralPHE,
    NeuralTS,
    NeuralUCB,
)
from skbandit.preprocessing import MirrorNormalizer

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA device"
)

SMALL = {"hidden_layer_sizes": (16,), "n_steps": 10, "learning_rate": 0.05}


def _mirrored(n, d=4, K=None, seed=0):
    rng = np.random.RandomState(seed)
    raw = rng.normal(size=(n, d) if K is None else (n, K, d))
    return MirrorNormalizer().fit_transform(raw).astype(np.float32)


def _feed_both(policy, X, rewards_of, n_batches=4):
    """Feed the same rounds (chosen on the CPU copy) to a CPU and a CUDA copy.

    Both copies select, so that their random generators stay in step (the GPU
    copy's choices may differ at near ties and are discarded).
    """
    cpu = copy.deepcopy(policy).set_params(device="cpu")
    gpu = copy.deepcopy(policy).set_params(device="cuda")
    for batch in np.array_split(np.arange(X.shape[0]), n_batches):
        actions = cpu.select(X[batch])
        gpu.select(X[batch])
        rewards = rewards_of(batch, actions)
        cpu.partial_fit(X[batch], actions, rewards)
        gpu.partial_fit(X[batch], actions, rewards)
    return cpu, gpu


def _rewards(batch, actions):
    return np.cos(3.0 * (batch % 5) + actions).astype(np.float64)


def _flat(policy):
    return get_flat_parameters(policy.net_.module_).cpu().numpy()


@pytest.mark.parametrize("Policy", [NeuralTS, NeuralUCB, NeuralEpsilonGreedy])
@pytest.mark.parametrize("covariance", ["diag", "full"])
@pytest.mark.parametrize("per_arm", [False, True])
def test_cuda_policy_matches_cpu(Policy, covariance, per_arm):
    X = _mirrored(40, K=3 if per_arm else None, seed=1)
    kwargs = {} if Policy is NeuralEpsilonGreedy else {"covariance": covariance}
    policy = Policy(n_actions=3, random_state=0, **SMALL, **kwargs)
    cpu, gpu = _feed_both(policy, X, _rewards)
    assert next(gpu.net_.module_.parameters()).device.type == "cuda"
    assert_allclose(_flat(gpu), _flat(cpu), rtol=1e-4, atol=1e-5)
    assert_allclose(gpu.theta0_, cpu.theta0_)
    mean_cpu, std_cpu = cpu.predict_scores(X, return_std=True)
    mean_gpu, std_gpu = gpu.predict_scores(X, return_std=True)
    assert_allclose(mean_gpu, mean_cpu, rtol=1e-4, atol=1e-5)
    assert_allclose(std_gpu, std_cpu, rtol=1e-3, atol=1e-6)
    if Policy is not NeuralEpsilonGreedy:
        assert_allclose(gpu.covariance_, cpu.covariance_, rtol=1e-3, atol=1e-7)
        assert std_gpu.max() > 0  # the widths were really compared


@pytest.mark.parametrize("Policy", [CNUCB, CNTS])
@pytest.mark.parametrize("covariance", ["diag", "full"])
def test_cuda_combinatorial_policy_matches_cpu(Policy, covariance):
    # Slates on per-arm contexts: Z's rank-K update, the widths, the training.
    X = _mirrored(24, K=6, seed=5)
    policy = Policy(slate_size=2, covariance=covariance, random_state=0, **SMALL)

    def slate_rewards(batch, slates):
        return np.cos(3.0 * (batch[:, None] % 5) + slates).astype(np.float64)

    cpu, gpu = _feed_both(policy, X, slate_rewards)
    assert next(gpu.net_.module_.parameters()).device.type == "cuda"
    assert_allclose(_flat(gpu), _flat(cpu), rtol=1e-4, atol=1e-5)
    mean_cpu, std_cpu = cpu.predict_scores(X, return_std=True)
    mean_gpu, std_gpu = gpu.predict_scores(X, return_std=True)
    assert_allclose(mean_gpu, mean_cpu, rtol=1e-4, atol=1e-5)
    assert_allclose(std_gpu, std_cpu, rtol=1e-3, atol=1e-6)
    assert std_gpu.max() > 0  # the widths were really compared


def test_cuda_tangent_features_match_autograd_in_float64():
    module = BanditMLP(6, 3, hidden_layer_sizes=(8, 6), disjoint=True).double()
    module = module.to("cuda")
    X = torch.randn(5, 6, dtype=torch.float64, device="cuda")
    f, phi = tangent_features(module, X)
    params = dict(module.named_parameters())
    for k in range(3):
        for i in range(5):
            grads = torch.autograd.grad(module(X[i : i + 1])[0, k], params.values())
            flat = torch.cat([g.reshape(-1) for g in grads]) / module.scale
            assert_allclose(phi[i, k].cpu().numpy(), flat.cpu().numpy(), atol=1e-10)
    assert_allclose(f.cpu().numpy(), module(X).detach().cpu().numpy(), atol=1e-12)


def test_cuda_hand_written_steps_match_cpu():
    # The path the paper's settings take on a GPU: packed tiles, in-place SGD.
    torch.manual_seed(0)
    X = torch.randn(37, 5)
    actions = torch.randint(0, 4, (37,))
    rewards = torch.randn(37)
    fitted = {}
    for device in ["cpu", "cuda"]:
        net = initialize_net(
            make_bandit_net(
                5,
                4,
                hidden_layer_sizes=(12,),
                disjoint=True,
                learning_rate=0.02,
                device=device,
            ),
            3,
        )
        theta0 = [p.detach().clone() for p in net.module_.parameters()]
        proximal_gradient_descent(
            net,
            X.to(device),
            actions.to(device),
            rewards.to(device),
            None,
            theta0,
            alpha=0.1,
            n_steps=25,
        )
        fitted[device] = get_flat_parameters(net.module_).cpu().numpy()
    assert_allclose(fitted["cuda"], fitted["cpu"], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("Policy", [NeuralLinear, NeuralBootstrap])
def test_cuda_baselines_match_cpu(Policy):
    X = _mirrored(30, seed=2)
    extra = {"n_models": 3} if Policy is NeuralBootstrap else {}
    policy = Policy(n_actions=3, random_state=0, **SMALL, **extra)
    cpu, gpu = _feed_both(policy, X, _rewards, n_batches=3)
    assert_allclose(gpu.predict_scores(X), cpu.predict_scores(X), rtol=1e-4, atol=1e-5)


#: The neural policies no other test here covers, with small settings of their own.
OTHER_POLICIES = {
    NeuralES: {"n_models": 3},
    NeuralPHE: {},
    NCBFUCB: {},
    NeuralLogUCB: {},
    NeuralLogTS: {},
}


@pytest.mark.parametrize("Policy", list(OTHER_POLICIES), ids=lambda c: c.__name__)
def test_cuda_other_neural_policies_match_cpu(Policy):
    # 0/1 rewards: the logistic policies' loss needs them; the others fit any.
    X = _mirrored(30, seed=3)
    policy = Policy(n_actions=3, random_state=0, **SMALL, **OTHER_POLICIES[Policy])

    def binary(batch, actions):
        return (_rewards(batch, actions) > 0).astype(np.float64)

    cpu, gpu = _feed_both(policy, X, binary, n_batches=3)
    assert next(gpu.net_.module_.parameters()).device.type == "cuda"
    # float32 on both devices, reductions in another order: the bounds of the
    # tests above.
    mean_cpu, std_cpu = cpu.predict_scores(X, return_std=True)
    mean_gpu, std_gpu = gpu.predict_scores(X, return_std=True)
    assert_allclose(mean_gpu, mean_cpu, rtol=1e-4, atol=1e-5)
    assert_allclose(std_gpu, std_cpu, rtol=1e-3, atol=1e-6)


def test_cuda_custom_skorch_net_matches_cpu():
    class Towers(torch.nn.Module):
        def __init__(self, n_features, n_actions):
            super().__init__()
            self.body = torch.nn.Sequential(
                torch.nn.Linear(n_features, 8), torch.nn.ReLU()
            )
            self.heads = torch.nn.Linear(8, n_actions)

        def forward(self, X):
            return self.heads(self.body(X))

    X = _mirrored(30, seed=3)
    net = NeuralNetRegressor(Towers, optimizer=torch.optim.Adam)
    policy = NeuralTS(
        n_actions=3, net=net, n_steps=5, learning_rate=1e-2, random_state=0
    )
    cpu, gpu = _feed_both(policy, X, _rewards, n_batches=3)
    assert next(gpu.net_.module_.parameters()).device.type == "cuda"
    mean_cpu, std_cpu = cpu.predict_scores(X, return_std=True)
    mean_gpu, std_gpu = gpu.predict_scores(X, return_std=True)
    assert_allclose(mean_gpu, mean_cpu, rtol=1e-4, atol=1e-5)
    assert_allclose(std_gpu, std_cpu, rtol=1e-3, atol=1e-6)


def test_gpu_pickle_selects_and_learns_on_cpu(tmp_path):
    X = _mirrored(20, seed=4)
    policy = NeuralTS(n_actions=3, device="cuda", random_state=0, **SMALL)
    policy.partial_fit(X, policy.select(X), np.ones(20))
    joblib.dump(policy, tmp_path / "gpu.joblib")
    expected = copy.deepcopy(policy).select(X)
    loaded = joblib.load(tmp_path / "gpu.joblib").set_params(device="cpu")
    assert_array_equal(loaded.select(X), expected)
    assert next(loaded.net_.module_.parameters()).device.type == "cpu"
    loaded.partial_fit(X, expected, np.ones(20))
    # and back onto the GPU, where the network and the cached tensors follow
    loaded.set_params(device="cuda").partial_fit(X, expected, np.ones(20))
    assert next(loaded.net_.module_.parameters()).device.type == "cuda"
    assert np.isfinite(loaded.predict_scores(X, return_std=True)[1]).all()


_LOAD_WITHOUT_GPU = """
import sys, joblib, numpy as np, torch
assert not torch.cuda.is_available()
policy = joblib.load(sys.argv[1]).set_params(device="cpu")
print(policy.select(np.load(sys.argv[2])).ravel().tolist())
"""


def test_cn_full_z_lives_on_the_gpu_and_pickles_for_a_machine_without_one(tmp_path):
    # Z^{-1} is a float64 tensor on the device once the network computes there;
    # covariance_ is a host copy; a pickle holds a host array, so a process that
    # sees no GPU loads the policy and selects what the GPU's copy selects.
    import os

    X = _mirrored(12, K=6, seed=7)
    policy = CNUCB(slate_size=2, covariance="full", device="cuda", random_state=0,
                   **SMALL)  # fmt: skip
    policy.partial_fit(X, policy.select(X), np.ones((12, 2)))
    master = policy._precision._inverse
    assert isinstance(master, torch.Tensor) and master.device.type == "cuda"
    assert master.dtype == torch.float64
    assert isinstance(policy.covariance_, np.ndarray)
    assert_array_equal(policy.covariance_, master.cpu().numpy())
    joblib.dump(policy, tmp_path / "cn.joblib")
    np.save(tmp_path / "X.npy", X)
    expected = copy.deepcopy(policy).set_params(device="cpu").select(X)
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    root = os.path.dirname(os.path.dirname(skbandit.__file__))  # this checkout
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    out = subprocess.run(
        [sys.executable, "-c", _LOAD_WITHOUT_GPU, str(tmp_path / "cn.joblib"),
         str(tmp_path / "X.npy")],
        capture_output=True, text=True, check=True, timeout=300, env=env,
    )  # fmt: skip
    assert out.stdout.split("\n")[-2] == str(expected.ravel().tolist())


def test_cuda_graph_replay_equals_eager_steps(monkeypatch):
    from skbandit.networks import _descent

    torch.manual_seed(1)
    X = torch.randn(50, 6, device="cuda")
    actions = torch.randint(0, 3, (50,), device="cuda")
    rewards = torch.randn(50, device="cuda")
    fitted = {}
    for graphs in [True, False]:
        monkeypatch.setattr(_descent, "USE_CUDA_GRAPHS", graphs)
        net = initialize_net(
            make_bandit_net(
                6, 3, hidden_layer_sizes=(10, 8), disjoint=True, device="cuda"
            ),
            5,
        )
        theta0 = [p.detach().clone() for p in net.module_.parameters()]
        proximal_gradient_descent(
            net, X, actions, rewards, None, theta0, alpha=0.1, n_steps=30
        )
        fitted[graphs] = get_flat_parameters(net.module_).cpu().numpy()
    start = torch.cat([t.reshape(-1) for t in theta0]).cpu().numpy()
    assert np.abs(fitted[True] - start).max() > 1e-3  # the steps did move it
    assert_allclose(fitted[True], fitted[False], rtol=1e-6, atol=1e-7)


def test_cuda_j_step_graph_replays_equal_eager_steps(monkeypatch):
    # Mini-batch trainings (the flat-cost defaults' kind): the first training of
    # its shapes runs eagerly and is captured, the next ones replay that one
    # graph (all J steps, one launch); the same parameters as eager steps to
    # float32 rounding of GPU reductions (index_add_'s atomics add in any order).
    from skbandit.networks import _descent, _jstep

    monkeypatch.setattr(_jstep, "_CAPTURE_FAILED", False)
    monkeypatch.setattr(_jstep, "_UNREPLAYED", _jstep.Counter())
    X = _mirrored(120, seed=4)
    fitted, counts = {}, {}
    for graphs in [True, False]:
        monkeypatch.setattr(_descent, "USE_CUDA_GRAPHS", graphs)
        monkeypatch.setattr(_jstep, "COUNTS", _jstep.Counter())
        policy = NeuralTS(
            n_actions=3, random_state=0, device="cuda",
            **{**SMALL, "batch_size": 8, "train_every": 5},
        )  # fmt: skip
        for t in range(0, 120, 5):
            actions = np.arange(t, t + 5) % 3
            policy.partial_fit(X[t : t + 5], actions, _rewards(np.arange(5), actions))
        fitted[graphs] = get_flat_parameters(policy.net_.module_).cpu().numpy()
        counts[graphs] = dict(_jstep.COUNTS)
    print(f"J-step trainings, graphs on: {counts[True]}; off: {counts[False]}")
    # 24 trainings: the first (5 rows, fewer than a batch) full-batch, the next
    # 23 on 10 to 115 rows: capacities 64 and 128, one capture each (the same
    # counts as the CPU's stand-in graph gives on this feed)
    assert counts[True] == {"captured": 2, "replayed": 21}
    assert counts[False] == {"eager": 23}
    assert_allclose(fitted[True], fitted[False], rtol=1e-4, atol=1e-6)


# Run in a fresh process: in a pytest-xdist worker the caching allocator carries
# what the worker's earlier tests left (+816 MB reserved was seen there, against a
# few MB alone), and a test must not depend on what ran before it.
_PILE_UP_SCRIPT = """
import numpy as np, torch
from skbandit.policies import NeuralTS
from skbandit.preprocessing import MirrorNormalizer
rng = np.random.default_rng(6)
X = MirrorNormalizer().fit_transform(rng.normal(size=(260, 512)))
policy = NeuralTS(n_actions=10, hidden_layer_sizes=(64,), n_steps=5,
                  learning_rate=0.01, device="cuda", random_state=0)
policy.partial_fit(X[:200], np.arange(200) % 10, rng.random(200))
torch.cuda.synchronize()
before = torch.cuda.memory_reserved()
for t in range(200, 260):
    policy.partial_fit(X[t : t + 1], policy.select(X[t : t + 1]), np.ones(1))
torch.cuda.synchronize()
print(policy.n_trainings_, torch.cuda.memory_reserved() - before)
"""


def test_cuda_graph_trainings_do_not_pile_up_device_memory(fresh_process_env):
    # Every training captures a graph whose private pool holds that training's
    # intermediates (here several MB: ten 1024 x 64 weight blocks per step). Those
    # pools must be released, or a long run's captures end out of memory.
    out = subprocess.run(
        [sys.executable, "-c", _PILE_UP_SCRIPT],
        capture_output=True, text=True, check=True, timeout=600,
        env=fresh_process_env(),
    )  # fmt: skip
    n_trainings, grown = map(int, out.stdout.split()[-2:])
    # benchmarks/gpu_session.sh shows this line (pytest -rP) in its summary
    print(f"device memory grown over 60 trainings: {grown / 2**20:.1f} MB (< 64 MB)")
    assert n_trainings == 61
    # Piled up, 60 trainings would hold 60 x (>= 5 MB) = 300 MB or more.
    assert grown < 64 * 2**20


def test_the_replay_rows_and_diagonal_u_live_on_the_gpu():
    # Each row goes to the GPU once, through the pinned staging buffer; the kept
    # rows are the host buffer's, and the diagonal U is a float64 tensor there
    # that agrees with the CPU's as test_cuda_policy_matches_cpu's U does.
    policy = NeuralTS(n_actions=3, random_state=0, **{**SMALL, "batch_size": 8})
    cpu, gpu = _feed_both(policy, _mirrored(60, seed=2), _rewards, n_batches=9)
    replay = gpu._core._device_replay()
    assert replay.staging._host.is_pinned()
    kept = replay.rows(gpu._core.buffer, gpu._core.current_device, None)
    for on_gpu, on_host in zip(kept, gpu._core.buffer._fields(), strict=True):
        assert on_gpu.device.type == "cuda"
        assert_array_equal(on_gpu.cpu().numpy(), on_host)
    assert gpu._precision._diagonal.device.type == "cuda"
    assert_allclose(gpu.covariance_, cpu.covariance_, rtol=1e-3, atol=1e-7)
