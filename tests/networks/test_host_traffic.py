"""What a neural round asks of the host, counted on the CPU build (no GPU needed).

On a GPU a round loses its time where the host waits for the device (a value read,
``nonzero``), copies memory to or from the host, or allocates. These tests run one
online round of NeuralTS and of CN-UCB with a full ``Z`` through the code a device
runs (the CPU-only shortcuts switched off: NeuralTS's tiled steps, CN-UCB's match of
the kept products on the host), count with
:class:`~skbandit.networks._host_traffic.HostTraffic`, and assert the counts the
design promises. Two step counts ``J`` split a round's counts into per step and
per round: ``per step = (count(2J) - count(J)) / J``.
"""
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pytest
import torch

from skbandit.networks import _descent, _device_buffer, _jstep, _precision, _training
from skbandit.networks._host_traffic import HostTraffic, fresh_copies
from skbandit.policies import CNUCB, NeuralBootstrap, NeuralTS, NeuralUCB

N_WARM, J = 30, 6


@pytest.fixture
def device_code_path(monkeypatch):
    """The code a GPU runs, on the CPU: eager hand-written steps (a GPU captures
    them as a graph), the training's values read back once after its steps, and
    Z^{-1} Phi^T recomputed where Z^{-1} lives."""
    monkeypatch.setattr(_descent.HandGradientSGD, "_tiled_one_hidden", lambda *a: False)
    monkeypatch.setattr(_precision, "_MATCH_PRODUCTS_ON", frozenset())
    monkeypatch.setattr(_training, "HOST_DEVICES", frozenset())


def _rewards(t, actions):
    return np.cos(t + np.asarray(actions, dtype=np.float64))


def _neural_ts(n_steps):
    X = np.random.default_rng(0).normal(size=(N_WARM + 2, 6)).astype(np.float32)
    # the papers' schedule (a training every round, over the whole buffer), so that
    # the counted round trains and the packing reads every buffered row
    schedule = {**NeuralTS.PAPER_SCHEDULE, "n_steps": n_steps}
    policy = NeuralTS(n_actions=3, hidden_layer_sizes=(16,), random_state=0, **schedule)
    return policy, X


def _neural_ucb(n_steps):
    # U gains the pulled arm before training: its check is read with the training's
    policy, X = _neural_ts(n_steps)
    schedule = {**NeuralTS.PAPER_SCHEDULE, "n_steps": n_steps}
    ucb = NeuralUCB(n_actions=3, hidden_layer_sizes=(16,), random_state=0, **schedule)
    return ucb, X


def _cn_ucb(n_steps):
    X = np.random.default_rng(1).normal(size=(N_WARM + 2, 5, 4)).astype(np.float32)
    policy = CNUCB(
        slate_size=2,
        covariance="full",
        hidden_layer_sizes=(12,),
        n_steps=n_steps,
        train_every=1,
        random_state=0,
    )
    return policy, X


def _one_round(make, n_steps):
    """Counts of ``select`` and of ``partial_fit`` (with its training) of one online
    round after ``N_WARM`` logged rounds and one online round of warm-up."""
    policy, X = make(n_steps)
    warm = policy.select(X[:N_WARM])
    t = np.arange(N_WARM).reshape(-1, *[1] * (warm.ndim - 1))
    policy.partial_fit(X[:N_WARM], warm, _rewards(t, warm))
    x = X[N_WARM : N_WARM + 1]
    policy.partial_fit(x, policy.select(x), _rewards(N_WARM, policy.select(x)))
    x = X[N_WARM + 1 : N_WARM + 2]
    with HostTraffic() as chosen:
        actions = policy.select(x)
    with HostTraffic() as learnt:
        policy.partial_fit(x, actions, _rewards(N_WARM + 1, actions))
    return policy, chosen.counts, learnt.counts


def _per_step(make):
    _, _, once = _one_round(make, J)
    policy, chosen, twice = _one_round(make, 2 * J)
    keys = set(once) | set(twice)
    return policy, chosen, twice, {k: (twice[k] - once[k]) / J for k in keys}


@pytest.mark.parametrize("make", [_neural_ts, _cn_ucb], ids=["NeuralTS", "CN-UCB"])
def test_a_training_step_neither_waits_nor_copies(device_code_path, make):
    # What lets the steps queue on a GPU and be captured as one graph: no value
    # read, no nonzero, no copy either way, in any step.
    _, _, _, per_step = _per_step(make)
    for key in ("syncs", "host reads", "to host", "from host", "to(device)"):
        assert per_step.get(key, 0) == 0, (key, per_step)


def test_a_neural_ts_step_allocates_a_fixed_few_tensors(device_code_path):
    # Eagerly, a step's seven ops each write a new tensor (a graph replays them in
    # its own pool); the count does not grow with the steps or the rows.
    _, _, _, per_step = _per_step(_neural_ts)
    assert per_step["allocations"] == 7


def test_a_full_batch_j_step_training_sends_one_copy_and_allocates_nothing_a_step(
    device_code_path, monkeypatch
):
    # The papers' schedule on a GPU: the J steps over every row run as one
    # function (one graph replay) from buffers filled once per training: one
    # more staged copy per training (the layout of every row in the fixed tiles
    # and the training's step size, decay and weight factor), none a step, and
    # no allocation a step (the eager per-step path allocates 7).
    monkeypatch.setattr(_jstep, "EVERY_ROW_DEVICES", frozenset({"cpu"}))
    _, _, learnt, per_step = _per_step(_neural_ts)
    for key in ("syncs", "host reads", "to host", "staged to(device)", "allocations"):
        assert per_step.get(key, 0) == 0, (key, per_step)
    assert fresh_copies(learnt) == 0 and learnt["staged to(device)"] == 3 + 1
    assert learnt["host reads"] == 1 and learnt["values read"] == 3 + 1


def test_the_cpu_steps_allocate_nothing():
    # The CPU's tiled steps write every buffer made once per training (out=).
    _, _, _, per_step = _per_step(_neural_ts)
    assert per_step.get("allocations", 0) == 0


def test_a_cn_ucb_round_keeps_z_inverse_on_its_device(device_code_path):
    policy, chosen, learnt, _ = _per_step(_cn_ucb)
    N, p = 5, policy.n_parameters_
    # select: the contexts in, through the reusable staging buffer, one copy out
    # (means and widths of the N arms stacked), no other wait.
    assert fresh_copies(chosen) == 0 and chosen["staged to(device)"] == 1
    assert chosen["host reads"] == 1 and chosen["values read"] == 2 * N
    assert chosen.get("syncs", 0) == 0
    # partial_fit: Z^{-1} and the features never reach the host. One read (was
    # two): the training's objective before and after and ||theta - theta_0||^2
    # (its divergence check) and the Woodbury factor's finiteness, deferred from
    # before the training, in one copy after its steps: four values. (A value
    # copied to the host whole, by tolist, reaches no aten op on the CPU build.)
    assert learnt["host reads"] == 1 and learnt["values read"] == 4
    assert learnt.get("syncs", 0) == 0
    assert learnt.get("to host", 0) == 0
    assert learnt["values read"] < p  # not a row of features, let alone Z^{-1}
    # In: the round's contexts and arms (for the Woodbury factor) and the new
    # buffered row, each in one staged copy; none from fresh host memory (two).
    assert fresh_copies(learnt) == 0 and learnt["staged to(device)"] == 2


def test_a_cn_ucb_z_inverse_stays_on_the_cpu_and_pickles_as_an_array():
    # On the CPU the master is the numpy array's memory (no copy), and a pickle
    # holds a host array whatever device computed with it.
    import pickle

    policy, _, _ = _one_round(_cn_ucb, 2)
    precision = policy._precision
    assert isinstance(precision._inverse, np.ndarray)
    assert precision._master().data_ptr() == precision._inverse.ctypes.data
    state = pickle.loads(pickle.dumps(precision))
    assert isinstance(state._inverse, np.ndarray)
    assert isinstance(state._logdet, float)
    np.testing.assert_array_equal(state.covariance, precision.covariance)


def test_a_device_master_pickles_to_the_host(monkeypatch):
    # A master held as a tensor (as on a GPU) pickles as a host array and a float,
    # and a load computes on the CPU: the tensor on the "device" is moved to numpy.
    policy, X = _cn_ucb(2)
    policy.fit(X[:10], policy.select(X[:10]), np.ones((10, 2)))
    precision = policy._precision
    master = torch.from_numpy(precision._inverse.copy())
    precision._inverse = master  # as a device keeps it
    precision._logdet = torch.tensor(float(precision._logdet), dtype=torch.float64)
    import pickle

    loaded = pickle.loads(pickle.dumps(policy))
    assert isinstance(loaded._precision._inverse, np.ndarray)
    np.testing.assert_array_equal(loaded._precision.covariance, master.numpy())
    assert loaded._precision.logdet == pytest.approx(precision.logdet, rel=1e-15)
    np.testing.assert_array_equal(loaded.select(X[10:12]), policy.select(X[10:12]))


@pytest.mark.parametrize(
    "make", [_neural_ts, _neural_ucb], ids=["NeuralTS", "NeuralUCB"]
)
def test_a_neural_round_reads_back_what_it_must_and_no_more(device_code_path, make):
    policy, chosen, learnt, _ = _per_step(make)
    K = policy.n_actions_
    # select: the context in, through the reusable staging buffer (pinned on
    # CUDA), one copy out (the K outputs and forms stacked).
    assert fresh_copies(chosen) == 0 and chosen["staged to(device)"] == 1
    assert chosen["host reads"] == 1 and chosen["values read"] == 2 * K
    assert chosen.get("syncs", 0) == 0
    # partial_fit: one read (was five), none per step (see the step test): the
    # training's values (objective before and after, ||theta - theta_0||^2: its
    # divergence check) and the diagonal U's finiteness flag, in one copy after the
    # steps. U's increment is computed at the trained parameters just before that
    # read, where U lives, its arm's block taken by the host's arm; the packing
    # lays its tiles out from the buffer's host arms. (tolist reaches no aten op
    # on the CPU build: no sync counted.)
    assert learnt["host reads"] == 1 and learnt["values read"] == 3 + 1
    assert learnt.get("syncs", 0) == 0
    assert learnt.get("to host", 0) == 0
    # In, each in one copy through the staging buffer and none from fresh
    # (pageable) host memory (there were four): the row and its
    # arm for U's increment (a float64 row of 6 and an int64 arm), the new
    # buffered row, and the packing's tile layout (the arm of each tile and the
    # place of each row).
    assert fresh_copies(learnt) == 0 and learnt["staged to(device)"] == 3


def _staged_rows(monkeypatch):
    """The buffered rows sent to the device, in calls."""
    sent = []
    rows = _device_buffer._DeviceRows
    holding, extended = rows.holding.__func__, rows.extended

    def holding_counted(cls, fields):
        sent.append(len(fields[0]))
        return holding(cls, fields)

    def extended_counted(self, new, max_size):
        sent.append(len(new[0]))
        return extended(self, new, max_size)

    monkeypatch.setattr(rows, "holding", classmethod(holding_counted))
    monkeypatch.setattr(rows, "extended", extended_counted)
    return sent


def test_a_training_sends_the_new_rows_only(device_code_path, monkeypatch):
    # The buffer's rows live on the device: the first training sends the whole
    # buffer (31 rows), each later one the rows added since (one a round), in one
    # copy; a fresh copy every training sent 31, then 32.
    sent = _staged_rows(monkeypatch)
    policy, _, _ = _one_round(_neural_ts, J)
    assert sent == [N_WARM, 1, 1]
    assert len(policy._core.buffer) == N_WARM + 2


def _train_and_roll_back(schedule, device_path, monkeypatch):
    """A NeuralTS over 40 rounds in chunks, through windows of the buffer, and a
    failed update (rolled back) in the middle; its parameters and U at the end."""
    from skbandit.exceptions import NumericalError

    monkeypatch.setattr(
        _training, "HOST_DEVICES", frozenset() if device_path else frozenset({"cpu"})
    )
    X = np.random.default_rng(3).normal(size=(40, 6)).astype(np.float32)
    policy = NeuralTS(n_actions=3, hidden_layer_sizes=(16,), random_state=0, **schedule)
    for start, stop in [(0, 9), (9, 10), (10, 13), (13, 16), (16, 25), (25, 40)]:
        x = X[start:stop]
        actions = policy.select(x)
        if start == 13:  # diverges: nothing of the update stays, rows included
            policy.set_params(learning_rate=1e6)
            with pytest.raises(NumericalError):
                policy.partial_fit(
                    x, actions, _rewards(np.arange(start, stop), actions)
                )
            policy.set_params(learning_rate=schedule.get("learning_rate", 0.01))
        policy.partial_fit(x, actions, _rewards(np.arange(start, stop), actions))
    params = [p.detach().clone() for p in policy.net_.module_.parameters()]
    return policy, params


@pytest.mark.parametrize(
    "schedule",
    [
        {"train_every": 1, "n_steps": 3, "batch_size": None, "max_buffer_size": 12},
        {"train_every": 3, "n_steps": 4, "batch_size": 5, "max_buffer_size": 16},
        {"train_every": 2, "n_steps": 2, "batch_size": 4, "max_buffer_size": None},
    ],
    ids=["window", "mini-batches", "growing"],
)
def test_the_device_rows_train_as_a_fresh_copy_does(monkeypatch, schedule):
    # The kept rows (appended, slid, moved to new storage, rolled back) are the
    # host buffer's, so the trainings give the host's parameters and U exactly.
    monkeypatch.setattr(_descent.HandGradientSGD, "_tiled_one_hidden", lambda *a: False)
    host, host_params = _train_and_roll_back(schedule, False, monkeypatch)
    device, device_params = _train_and_roll_back(schedule, True, monkeypatch)
    for a, b in zip(host_params, device_params, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    np.testing.assert_array_equal(
        device._precision.covariance, host._precision.covariance
    )
    kept = device._core._device_replay().rows(
        device._core.buffer, torch.device("cpu"), schedule["max_buffer_size"]
    )
    for on_device, on_host in zip(kept, device._core.buffer._fields(), strict=True):
        np.testing.assert_array_equal(on_device.numpy(), on_host)


def test_a_deep_copy_trains_as_the_original(device_code_path, monkeypatch):
    # A copy's kept rows start empty (the core drops its device caches when copied,
    # as when pickled, and the staging's numpy view would not follow a deep copy):
    # its next training sends the whole buffer, and trains as the original does.
    import copy

    sent = _staged_rows(monkeypatch)
    policy, X = _neural_ts(J)
    policy.partial_fit(
        X[:10], np.arange(10) % 3, _rewards(np.arange(10), np.arange(10) % 3)
    )
    twin = copy.deepcopy(policy)
    for p in (policy, twin):
        p.partial_fit(X[10:11], np.array([1]), np.ones(1))
    assert sent == [10, 1, 11]
    pairs = zip(
        policy.net_.module_.parameters(), twin.net_.module_.parameters(), strict=True
    )
    for a, b in pairs:
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_a_mini_batch_step_neither_waits_nor_reads(device_code_path):
    # The flat-cost defaults' steps: all J steps' rows are drawn on the host and
    # their tiles laid out from the host's arms first, then sent, with the
    # training's step size, decay and weight factor, in ONE copy per training
    # (there was one a step, and two before that) from host memory allocated once
    # (pinned on CUDA) into a device buffer allocated once; the steps then run
    # from those buffers (one graph replay on CUDA): no copy, no read, no wait and
    # no allocation in a step. The objective is read once, after the steps.
    def minibatches(n_steps):
        policy, X = _neural_ts(n_steps)
        policy.set_params(batch_size=8)
        return policy, X

    _, _, learnt, per_step = _per_step(minibatches)
    for key in ("syncs", "host reads", "to host", "staged to(device)", "allocations"):
        assert per_step.get(key, 0) == 0, (key, per_step)
    assert fresh_copies(per_step) == 0
    assert learnt["host reads"] == 1 and learnt["values read"] == 3 + 1
    # per training, staged: U's row and arm, the new buffered row, the layout of
    # every row (the objective before and after), and the J steps' layouts
    assert fresh_copies(learnt) == 0 and learnt["staged to(device)"] == 4


def test_an_ensemble_step_reads_nothing_back_and_sends_one_copy(device_code_path):
    # A batch of networks (NeuralBootstrap's) steps on mini-batches as one network
    # does: each step's tiles are laid out from the host's arms (the device's arms
    # were read back, one read a step) and its index and layout go in one staged
    # copy (a fresh index copy before, and two fresh layout copies).
    def bootstrap(n_steps):
        X = np.random.default_rng(0).normal(size=(N_WARM + 2, 6)).astype(np.float32)
        policy = NeuralBootstrap(
            n_actions=3,
            n_models=4,
            hidden_layer_sizes=(16,),
            n_steps=n_steps,
            batch_size=8,
            train_every=1,
            random_state=0,
        )
        return policy, X

    _, _, _, per_step = _per_step(bootstrap)
    for key in ("syncs", "host reads", "to host"):
        assert per_step.get(key, 0) == 0, (key, per_step)
    assert fresh_copies(per_step) == 0 and per_step["staged to(device)"] == 1


@pytest.mark.parametrize("make", [_neural_ts, _cn_ucb], ids=["NeuralTS", "CN-UCB"])
def test_the_one_read_gives_the_objective_read_value_by_value(monkeypatch, make):
    # A device reads the training's values in one copy after its steps; the host
    # reads them as it goes. Same floats (float32 values are exact in float64), the
    # same parameters, on the same eager steps.
    monkeypatch.setattr(_descent.HandGradientSGD, "_tiled_one_hidden", lambda *a: False)
    results = []
    for hosts in (frozenset({"cpu"}), frozenset()):
        monkeypatch.setattr(_training, "HOST_DEVICES", hosts)
        policy, _, _ = _one_round(make, J)
        params = [p.detach().clone() for p in policy.net_.module_.parameters()]
        results.append((policy._core.last_objective, params))
    (objective, params), (read_once, params_once) = results
    assert read_once == objective
    for a, b in zip(params, params_once, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_a_diverging_training_is_still_refused_on_the_device_path(device_code_path):
    from skbandit.exceptions import NumericalError

    policy, X = _neural_ts(J)
    policy.set_params(learning_rate=1e6)  # the steps blow up
    with pytest.raises(NumericalError, match="diverged"):
        policy.fit(X[:N_WARM], np.arange(N_WARM) % 3, np.ones(N_WARM))


@pytest.mark.parametrize(
    "make", [_neural_ts, _neural_ucb], ids=["NeuralTS", "NeuralUCB"]
)
def test_a_non_finite_increment_read_with_the_training_still_refuses(
    device_code_path, monkeypatch, make
):
    # U's finiteness flag is read with the training's values: a non-finite
    # increment still raises, and leaves the parameters, the buffer and U as they
    # were (the training succeeded: it is rolled back, not retried).
    from skbandit.exceptions import NumericalError
    from skbandit.networks import _diagonal_blocks

    policy, X = make(J)
    policy.partial_fit(X[:10], np.arange(10) % 3, _rewards(np.arange(10), 0))
    params = [p.detach().clone() for p in policy.net_.module_.parameters()]
    covariance, rows = policy._precision.covariance, len(policy._core.buffer)
    square_sum = _diagonal_blocks._disjoint_square_sum

    def poisoned(*args):
        arms, blocks, rest = square_sum(*args)
        return arms, blocks * np.inf, rest

    monkeypatch.setattr(_diagonal_blocks, "_disjoint_square_sum", poisoned)
    with HostTraffic() as traffic, pytest.raises(NumericalError, match="U was not"):
        policy.partial_fit(X[10:11], np.array([1]), np.ones(1))
    # the flag was read with each training's values (3 + 1), never alone (the
    # verb tries a one-row round twice, its fast path then its checked one)
    counts = traffic.counts
    assert counts["read: __bool__"] == 0 and counts["read: tolist"] >= 1
    assert (
        counts["values read"] - counts["read: __float__"] == 4 * counts["read: tolist"]
    )
    for p, before in zip(policy.net_.module_.parameters(), params, strict=True):
        torch.testing.assert_close(p.detach(), before, rtol=0, atol=0)
    assert len(policy._core.buffer) == rows
    np.testing.assert_array_equal(policy._precision.covariance, covariance)


def test_the_staging_is_a_ring_reused_without_new_memory():
    # Calls in succession write past each other (so that a device need not wait
    # for the last copy), come round to the start when the buffer is full, and
    # grow it only for a request larger than the whole buffer; the values arrive
    # unchanged, of every dtype sent.
    import copy
    import pickle

    staging, cpu = _device_buffer.HostStaging(), torch.device("cpu")
    rng = np.random.default_rng(0)
    arrays = [
        rng.normal(size=(3, 5)).astype(np.float32),
        rng.integers(0, 9, size=7),
        rng.normal(size=2),
        np.array([True, False, True]),
    ]
    first = staging.to_device(arrays, cpu)
    host = staging._host
    second = staging.to_device(arrays[:1], cpu)
    assert second[0].data_ptr() > first[-1].data_ptr()  # past the first call's
    for tensor, array in zip(first, arrays, strict=True):
        np.testing.assert_array_equal(tensor.numpy(), array)  # still intact
    # fill the buffer up to 32 bytes from its end, then send 60 bytes
    (filler,) = staging.to_device([np.zeros((host.numel() - 32) // 8 - 26)], cpu)
    assert filler.data_ptr() == second[0].data_ptr() + 64  # 60 bytes, aligned
    (again,) = staging.to_device(arrays[:1], cpu)
    assert staging._host is host and again.data_ptr() == host.data_ptr()  # round
    huge = np.arange(host.numel() // 4, dtype=np.int64)
    (sent,) = staging.to_device([huge], cpu)
    assert staging._host.numel() >= huge.nbytes and staging._host is not host
    np.testing.assert_array_equal(sent.numpy(), huge)
    for twin in (copy.deepcopy(staging), pickle.loads(pickle.dumps(staging))):
        assert twin._host is None  # a copy starts empty (its view would not follow)
