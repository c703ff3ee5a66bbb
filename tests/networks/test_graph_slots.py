"""The bound on captured CUDA graphs, checked on the CPU with stand-in graphs."""
# SPDX-License-Identifier: BSD-3-Clause

import threading

import pytest
import torch

from skbandit.networks import _descent, initialize_net, make_bandit_net
from skbandit.networks._descent import GraphSlots
from skbandit.networks._training import proximal_gradient_descent


class _Graph:
    """Stands in for ``torch.cuda.CUDAGraph``: counts its resets."""

    made = 0

    def __init__(self):
        _Graph.made += 1
        self.resets = 0

    def reset(self):
        self.resets += 1


def test_no_more_graphs_than_the_limit_are_alive():
    slots = GraphSlots(2)
    with slots.graph(_Graph) as first, slots.graph(_Graph) as second:
        assert isinstance(first, _Graph) and isinstance(second, _Graph)
        assert slots.live == 2
        with slots.graph(_Graph) as third:
            assert third is None  # no slot: the caller steps eagerly
            assert slots.live == 2
        assert first.resets == second.resets == 0  # in use: never evicted
    # Each reset once (its pool released) as its block ended; the slots are free.
    assert first.resets == second.resets == 1
    assert slots.live == 0 and slots.peak == 2
    with slots.graph(_Graph) as again:
        assert isinstance(again, _Graph)


def test_a_graph_is_reset_and_its_slot_freed_when_its_steps_fail():
    slots = GraphSlots(1)
    with pytest.raises(RuntimeError, match="replay failed"):
        with slots.graph(_Graph) as graph:
            raise RuntimeError("replay failed")
    assert graph.resets == 1 and slots.live == 0

    def failing():
        raise RuntimeError("capture failed")

    with pytest.raises(RuntimeError, match="capture failed"):
        with slots.graph(failing):
            pass  # pragma: no cover
    assert slots.live == 0


def test_a_training_on_another_thread_steps_eagerly_while_the_slot_is_taken():
    slots, held, done = GraphSlots(1), threading.Event(), threading.Event()
    seen = []

    def other():
        with slots.graph(_Graph) as graph:
            seen.append(graph)
            held.set()
            done.wait(10)

    thread = threading.Thread(target=other)
    thread.start()
    assert held.wait(10)
    with slots.graph(_Graph) as graph:
        assert graph is None
    done.set()
    thread.join(10)
    assert isinstance(seen[0], _Graph) and seen[0].resets == 1
    assert slots.live == 0 and slots.peak == 1


def test_the_process_keeps_at_most_the_documented_number_of_graphs(monkeypatch):
    # One slot for the whole process: a training's graph pool is released before
    # another's is captured. The CPU steps take no slot at all.
    assert _descent.GRAPHS.limit == _descent.MAX_LIVE_GRAPHS == 1
    slots = GraphSlots(_descent.MAX_LIVE_GRAPHS)
    monkeypatch.setattr(_descent, "GRAPHS", slots)
    net = initialize_net(
        make_bandit_net(4, 2, hidden_layer_sizes=(6,), disjoint=True), seed=0
    )
    theta0 = [p.detach().clone() for p in net.module_.parameters()]
    X, actions = torch.randn(8, 4), torch.arange(8) % 2
    proximal_gradient_descent(
        net, X, actions, torch.ones(8), None, theta0, alpha=1.0, n_steps=20
    )
    assert slots.peak == 0 and slots.live == 0


def test_a_kept_graph_comes_back_by_its_key_and_gives_its_slot_up_when_idle():
    # A J-step graph outlives its training (the next training of the same shapes
    # replays it), but not the limit: a graph of other shapes, or a per-step
    # graph, takes the slot of a kept graph not in use, which is reset then.
    slots = GraphSlots(1)
    with slots.graph(_Graph, key="a") as a:
        pass
    assert a.resets == 0 and slots.live == 1 and slots.kept("a")
    with slots.graph(_Graph, key="a") as again:
        assert again is a and not slots.kept("a")  # in use
    with slots.graph(_Graph, key="b") as b:
        assert b is not a and a.resets == 1 and not slots.kept("a")
    with slots.graph(_Graph) as per_step:
        assert isinstance(per_step, _Graph) and b.resets == 1
    assert per_step.resets == 1 and slots.live == 0 and slots.peak == 1


def test_a_kept_graph_in_use_is_never_taken_and_a_failure_drops_it():
    slots = GraphSlots(1)
    with slots.graph(_Graph, key="a") as a:
        with slots.graph(_Graph, key="b") as b:
            assert b is None
        with slots.graph(_Graph, key="a") as twin:
            assert twin is None  # a is in use: the caller steps eagerly
    with pytest.raises(RuntimeError, match="replay failed"):
        with slots.graph(_Graph, key="a") as again:
            raise RuntimeError("replay failed")
    assert again is a and a.resets == 1 and slots.live == 0 and not slots.kept("a")


def test_two_graphs_made_for_one_key_at_once_keep_one():
    # Two threads training the same shapes at once (two slots): each gets a graph;
    # the first to end is kept, the second reset (no graph alive but counted).
    slots = GraphSlots(2)
    with slots.graph(_Graph, key="a") as first:
        with slots.graph(_Graph, key="a") as second:
            assert second is not None and second is not first
        assert slots.kept("a") and second.resets == 0
    assert first.resets == 1 and second.resets == 0 and slots.live == 1
