"""The J-step form of the mini-batch steps, checked on the CPU (no GPU needed).

:func:`~skbandit.networks._jstep.run_steps` is the function a GPU captures as one
graph; the CPU runs it as it is. These tests check that it computes what the
per-step path computes, and that it is safe to capture: a CUDA graph replays its
kernels on the buffers' addresses with every argument frozen, so a Python number
computed from one training (a decay, a step size, a row count) would silently
be reused by the next. A CPU stand-in for the graph (:class:`TracedGraph`) records
the function with ``make_fx`` (the ops on the buffers, numbers frozen as a
capture freezes them) and replays the record; a training replayed from another
training's record must equal its own eager run.
"""
# SPDX-License-Identifier: BSD-3-Clause

import contextlib
import copy
import warnings

import numpy as np
import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from skbandit.networks import (
    _descent,
    _jstep,
    _training,
    initialize_net,
    make_bandit_net,
)
from skbandit.networks._training import get_flat_parameters, proximal_gradient_descent
from skbandit.policies import NeuralTS

K, D, M = 4, 5, 12


class TracedGraph:
    """Stands in for ``torch.cuda.CUDAGraph`` on the CPU, with its semantics.

    ``capture`` records :func:`run_steps` with ``make_fx``: the ops on the
    program's tensors (the same storage, read at replay), every Python number
    frozen. ``make_fx`` runs the function to record it, where a capture only
    records: the parameters it moved are put back.
    """

    made = 0

    def __init__(self):
        TracedGraph.made += 1
        self.record, self.captures, self.replays, self.resets = None, 0, 0, 0

    def capture(self, program):
        kept = [program.W.clone(), program.w2.clone()]
        self.record = make_fx(lambda: _jstep.run_steps(program))()
        program.W.copy_(kept[0])
        program.w2.copy_(kept[1])
        self.captures += 1

    def replay(self):
        self.record()
        self.replays += 1

    def reset(self):
        self.record = None
        self.resets += 1


@pytest.fixture
def graphs_on_the_cpu(monkeypatch):
    """The CUDA code path of :func:`_jstep.descend` on the CPU, the graph stood
    in by :class:`TracedGraph`; the process's graph slots fresh."""
    made = []

    def new_graph():
        made.append(TracedGraph())
        return made[-1]

    monkeypatch.setattr(_jstep, "GRAPH_DEVICES", frozenset({"cpu"}))
    monkeypatch.setattr(_jstep, "_new_graph", new_graph)
    monkeypatch.setattr(_jstep, "_warm_up", lambda device: contextlib.nullcontext())
    monkeypatch.setattr(
        _jstep, "_capture", lambda graph, program: graph.capture(program)
    )
    monkeypatch.setattr(_jstep, "_CAPTURE_FAILED", False)
    monkeypatch.setattr(_jstep, "_UNREPLAYED", _jstep.Counter())
    monkeypatch.setattr(
        _descent, "GRAPHS", _descent.GraphSlots(_descent.MAX_LIVE_GRAPHS)
    )
    return made


def _data(seed, n, weights=False, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, D, generator=g, dtype=dtype)
    actions = torch.randint(0, K, (n,), generator=g)
    rewards = torch.randn(n, generator=g, dtype=dtype)
    w = torch.rand(n, generator=g, dtype=dtype) + 0.5 if weights else None
    return X, actions, rewards, w


def _net(reduction="mean", lr=0.05, dtype=torch.float64, seed=3):
    net = make_bandit_net(
        D, K, hidden_layer_sizes=(M,), disjoint=True, learning_rate=lr,
        reduction=reduction,
    )  # fmt: skip
    net = initialize_net(net, seed)
    net.module_.to(dtype)
    return net


def _train(net, data, *, alpha=0.5, lr=None, batch_size=16, n_steps=30, seed=0):
    """One mini-batch training of ``net`` in place; its objective."""
    if lr is not None:
        net.optimizer_.param_groups[0]["lr"] = lr
    X, actions, rewards, w = data
    theta0 = [p.detach().clone() for p in net.module_.parameters()]
    return proximal_gradient_descent(
        net, X, actions, rewards, w, theta0, alpha=alpha, n_steps=n_steps,
        batch_size=batch_size, rng=np.random.default_rng(seed),
        host_actions=actions.numpy(),
    )  # fmt: skip


@pytest.fixture
def every_row_on_the_cpu(monkeypatch):
    """Full-batch trainings by the code a GPU runs: the J-step form where it
    applies, the eager per-step path otherwise (not the CPU's tiled loops), the
    training's values read after the steps."""
    monkeypatch.setattr(_jstep, "EVERY_ROW_DEVICES", frozenset({"cpu"}))
    monkeypatch.setattr(_training, "HOST_DEVICES", frozenset())
    monkeypatch.setattr(_descent.HandGradientSGD, "_tiled_one_hidden", lambda *a: False)


def _both_paths(monkeypatch, net_kwargs, data, **train_kwargs):
    """(objective, parameters) after one training by the J-step and the per-step
    path, from the same start."""
    out = []
    switch = (
        "EVERY_ROW_DEVICES"
        if train_kwargs.get("batch_size", 1) is None
        else ("JSTEP_DEVICES")
    )
    for devices in (frozenset({"cpu"}), frozenset()):
        monkeypatch.setattr(_jstep, switch, devices)
        net = _net(**net_kwargs)
        loss = _train(net, data, **train_kwargs)
        out.append((loss, get_flat_parameters(net.module_)))
    return out


# float64: the two paths add the same products in another grouping (tiles of
# another size, padding slots adding exact zeros, an arm's tiles summed by
# index_add_), a relative difference of a few float64 epsilons per step; over 30
# steps and ~16-row sums that is under 1e-13 (measured 3e-16 to 1.1e-15).
F64 = dict(rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "case",
    [
        dict(),
        dict(net_kwargs=dict(reduction="sum", lr=1e-4)),
        dict(weights=True),
        dict(batch_size=3),  # fewer rows than arms
        dict(batch_size=89),  # all rows but one
        dict(n_steps=1),
    ],
    ids=["mean", "sum", "weights", "batch-3", "batch-89", "one-step"],
)
def test_the_j_step_form_equals_the_per_step_path_in_float64(monkeypatch, case):
    case = dict(case)
    net_kwargs = case.pop("net_kwargs", {})
    data = _data(0, 90, weights=case.pop("weights", False))
    (loss, params), (loss_ref, params_ref) = _both_paths(
        monkeypatch, net_kwargs, data, **case
    )
    start = get_flat_parameters(_net(**net_kwargs).module_)
    assert (params_ref - start).abs().max() > 1e-3  # the steps moved it
    torch.testing.assert_close(params, params_ref, **F64)
    assert loss == pytest.approx(loss_ref, rel=1e-12)


@pytest.mark.parametrize("n_rows", [7, 90, 300])
def test_full_batch_j_steps_equal_the_per_step_path_in_float64(
    monkeypatch, every_row_on_the_cpu, n_rows
):
    # Every row at each step (the papers' schedule): one layout for all steps, in
    # tiles for up to the rows' capacity.
    data = _data(2, n_rows, weights=True)
    (loss, params), (loss_ref, params_ref) = _both_paths(
        monkeypatch, {}, data, batch_size=None
    )
    start = get_flat_parameters(_net().module_)
    assert (params_ref - start).abs().max() > 1e-3
    torch.testing.assert_close(params, params_ref, **F64)
    assert loss == pytest.approx(loss_ref, rel=1e-12)


def test_the_j_step_form_in_float32_is_as_close_to_float64_as_the_per_step_path(
    monkeypatch,
):
    # Float32 against a float64 run of the same start (not one float32 path
    # against the other at 1e-5): the J-step form's error is within 1e-4 and at
    # most 4 times the per-step path's (measured over seeds 0-3: 3.1-4.4e-7 against
    # 2.2-3.8e-7, ratios 1.1-1.4).
    reference = _both_paths(monkeypatch, {}, _data(1, 90))[1][1]
    data32 = tuple(None if t is None else t.float() if t.is_floating_point() else t
                   for t in _data(1, 90))  # fmt: skip
    out = _both_paths(monkeypatch, dict(dtype=torch.float32), data32)
    errors = [float((p.double() - reference).abs().max()) for _, p in out]
    assert errors[0] < 1e-4 and errors[1] < 1e-4
    assert errors[0] <= 4 * errors[1] + 1e-7


def test_fixed_layouts_place_every_row_once_in_its_arms_tiles():
    rng = np.random.default_rng(0)
    for B, n_actions in [(64, 10), (3, 5), (17, 1), (40, 3)]:
        size, tiles = _jstep.tile_shape(B, n_actions)
        arms = rng.integers(0, n_actions, size=(7, B))
        arms[0] = 0  # every row on one arm
        chosen = np.stack([rng.choice(100, B, replace=False) for _ in range(7)])
        layouts = _jstep.fixed_layouts(chosen, arms, n_actions, size, tiles)
        assert layouts.shape == (7, tiles * size + tiles)
        slot_rows, tile_arms = layouts[:, : tiles * size], layouts[:, tiles * size :]
        for step in range(7):
            placed = slot_rows[step]
            assert sorted(placed[placed >= 0]) == sorted(chosen[step])
            slot_arm = np.repeat(tile_arms[step], size)
            row_arm = dict(zip(chosen[step], arms[step], strict=True))
            for slot in np.flatnonzero(placed >= 0):
                assert slot_arm[slot] == row_arm[placed[slot]]
            assert tile_arms[step].min() >= 0 and tile_arms[step].max() < n_actions


def _replayed_training(monkeypatch, graphs, batch_size=16):
    """Train one net on training A (captured on the way) and then on training B
    (another history, rows, row count, step size, decay and weights, the same
    shapes): B's parameters, and the stand-in graphs made."""
    net, J = _net(), 6  # few steps: the recorder is slow
    _train(net, _data(5, 90), alpha=0.5, n_steps=J, batch_size=batch_size)
    before_b = copy.deepcopy(net)
    data_b = _data(6, 95, weights=True)
    train_b = dict(alpha=3.0, lr=0.02, seed=7, n_steps=J, batch_size=batch_size)
    _train(net, data_b, **train_b)
    assert [(g.captures, g.replays) for g in graphs] == [(1, 1)]  # B replayed A's
    # B eagerly, from the same start, no graph
    monkeypatch.setattr(_jstep, "GRAPH_DEVICES", frozenset())
    _train(before_b, data_b, **train_b)
    return get_flat_parameters(net.module_), get_flat_parameters(before_b.module_)


@pytest.mark.parametrize("batch_size", [16, None], ids=["mini-batches", "every-row"])
def test_a_training_replayed_from_another_ones_capture_equals_its_eager_run(
    monkeypatch, graphs_on_the_cpu, every_row_on_the_cpu, batch_size
):
    # What a CUDA graph would freeze at capture is frozen in the record: the
    # replay equals the eager run only if everything that varies between
    # trainings is read from the static buffers. The same ops on the same
    # values: bitwise equal.
    replayed, eager = _replayed_training(monkeypatch, graphs_on_the_cpu, batch_size)
    torch.testing.assert_close(replayed, eager, rtol=0, atol=0)


def test_the_capture_check_catches_a_number_frozen_at_capture(
    monkeypatch, graphs_on_the_cpu
):
    # The check can fail: a decay kept as a Python number with the program's
    # buffers (a bug: a value read inside the steps is refused by the recorder,
    # as by a capture) is frozen at training A's value, and B's replay then
    # differs from its eager run.
    fill = _jstep.StepProgram.fill

    def fill_keeping_numbers(self, *args):
        self.numbers = list(args[-1])
        fill(self, *args)

    def frozen(program):
        step, decay, factor = program.scalars.to(program.X.dtype).unbind()
        return step, program.numbers[1], factor

    monkeypatch.setattr(_jstep.StepProgram, "fill", fill_keeping_numbers)
    monkeypatch.setattr(_jstep, "_training_scalars", frozen)
    replayed, eager = _replayed_training(monkeypatch, graphs_on_the_cpu)
    assert (replayed - eager).abs().max() > 1e-6


def test_a_policy_replays_one_graph_a_training_and_keeps_at_most_one(
    monkeypatch, graphs_on_the_cpu
):
    # NeuralTS on mini-batches, a training every 2 rounds as the rows grow from
    # 20 to 150: one capture per row capacity (64, 128, 256) and one replay for
    # every other training; the graphs of earlier capacities are reset as the
    # next one is captured (never more than one alive); the same parameters as
    # the same J-step function run eagerly (the same ops: bitwise).
    X = np.random.default_rng(0).normal(size=(150, 6)).astype(np.float32)
    actions = np.arange(150) % 3
    rewards = np.cos(np.arange(150) + actions)
    params = []
    for graphs in (True, False):
        if not graphs:
            monkeypatch.setattr(_jstep, "GRAPH_DEVICES", frozenset())
        policy = NeuralTS(
            n_actions=3, hidden_layer_sizes=(16,), n_steps=4, batch_size=8,
            train_every=2, random_state=0,
        )  # fmt: skip
        policy.partial_fit(X[:20], actions[:20], rewards[:20])
        for t in range(20, 150, 2):
            s = slice(t, t + 2)
            policy.partial_fit(X[s], actions[s], rewards[s])
        params.append(get_flat_parameters(policy.net_.module_))
    made = graphs_on_the_cpu
    assert [g.captures for g in made] == [1, 1, 1]
    assert sum(g.replays for g in made) == policy.n_trainings_ - 3
    assert [g.resets for g in made] == [1, 1, 0]
    assert _descent.GRAPHS.peak == 1
    torch.testing.assert_close(params[0], params[1], rtol=0, atol=0)


def test_two_networks_trained_in_turn_do_not_capture_at_every_training(
    monkeypatch, graphs_on_the_cpu
):
    # One graph slot, two networks of the same shapes trained in turn: each
    # training would evict the other's graph before its replay and capture its
    # own. A network whose graph was evicted unreplayed twice runs its steps
    # eagerly from then on, and the other keeps its graph: 4 captures, then
    # replays; the same parameters as without graphs (the same ops: bitwise).
    data = [_data(seed, 90) for seed in range(6)]

    def in_turn():
        nets = [_net(seed=1), _net(seed=2)]
        for d in data:
            for net in nets:
                _train(net, d, n_steps=4)
        return [get_flat_parameters(net.module_) for net in nets]

    with_graphs = in_turn()
    made = graphs_on_the_cpu
    assert sum(g.captures for g in made) == 4
    assert [g.replays for g in made] == [0, 0, 0, len(data) - 2]
    monkeypatch.setattr(_jstep, "GRAPH_DEVICES", frozenset())
    for a, b in zip(with_graphs, in_turn(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


@pytest.mark.parametrize("batch_size", [16, None], ids=["mini-batches", "every-row"])
def test_a_failed_capture_warns_once_and_the_trainings_step_one_at_a_time(
    monkeypatch, graphs_on_the_cpu, every_row_on_the_cpu, batch_size
):
    # The capture follows the training's eager run: a failed capture loses
    # nothing of that training; the graph is dropped (its slot freed), a warning
    # says so once, and the next trainings take the per-step path (full batches:
    # HandGradientSGD.steps, a graph per step on CUDA).
    def failing(graph, program):
        raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setattr(_jstep, "_capture", failing)
    calls, per_step = [], []
    run_steps, steps = _jstep.run_steps, _descent.HandGradientSGD.steps
    monkeypatch.setattr(_jstep, "run_steps", lambda p: calls.append(1) or run_steps(p))
    monkeypatch.setattr(
        _descent.HandGradientSGD,
        "steps",
        lambda self, *a, **k: per_step.append(1) or steps(self, *a, **k),
    )
    net, data = _net(), [_data(seed, 90) for seed in range(3)]
    with pytest.warns(RuntimeWarning, match="one CUDA graph failed") as caught:
        for d in data:
            _train(net, d, batch_size=batch_size)
    assert len([w for w in caught if "CUDA graph" in str(w.message)]) == 1
    assert len(calls) == 1  # the first training; the others stepped one at a time
    assert len(per_step) == (2 if batch_size is None else 0)
    assert _descent.GRAPHS.live == 0
    assert graphs_on_the_cpu[0].resets == 1
    # the same parameters as the per-step path throughout (float64, see F64)
    monkeypatch.setattr(_jstep, "JSTEP_DEVICES", frozenset())
    monkeypatch.setattr(_jstep, "EVERY_ROW_DEVICES", frozenset())
    reference = _net()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for d in data:
            _train(reference, d, batch_size=batch_size)
    torch.testing.assert_close(
        get_flat_parameters(net.module_), get_flat_parameters(reference.module_), **F64
    )
