"""The papers'-case steps in their two forms: the Gram form equals the direct one."""
# SPDX-License-Identifier: BSD-3-Clause

import copy

import numpy as np
import pytest
import torch
from numpy.testing import assert_allclose

from skbandit.networks import BanditMLP, _tiled
from skbandit.networks._descent import HandGradientSGD
from skbandit.networks._training import get_flat_parameters
from skbandit.preprocessing import MirrorNormalizer

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _rows(counts, d, mirrored, dtype, seed=0):
    """Contexts of ``len(counts)`` arms pulled ``counts`` times, shuffled, and
    their rewards (the digits bandit's: one in ten rewarded)."""
    rng = np.random.RandomState(seed)
    arms = rng.permutation(np.repeat(np.arange(len(counts)), counts))
    X = rng.normal(size=(arms.size, d))
    X = MirrorNormalizer().fit_transform(X) if mirrored else X / np.sqrt(d)
    rewards = (rng.uniform(size=arms.size) < 0.1).astype(float)
    as_tensor = lambda a, t=dtype: torch.as_tensor(a, dtype=t)  # noqa: E731
    return as_tensor(X), as_tensor(arms, torch.int64), as_tensor(rewards)


def _spy_on_forms(monkeypatch):
    """The list that each run of a form appends its name to."""
    forms = []
    for name in ("_gram_loop", "_direct_loop"):
        real = getattr(_tiled, name)

        def spy(*args, _real=real, _name=name, **kwargs):
            forms.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(_tiled, name, spy)
    return forms


def _recorded(init, made):
    """``init``, recording the arms each call is given."""

    def recording(self, arms, *args, **kwargs):
        made.append(arms)
        return init(self, arms, *args, **kwargs)

    return recording


def _train(net, theta0, X, arms, r, w, n_steps, gram, monkeypatch, lr=0.05, coef=1.0):
    """Parameters, data terms and ``||theta - theta_0||^2`` after ``n_steps`` of the
    papers' case, the Gram form allowed (``gram``) or not."""
    monkeypatch.setattr(_tiled, "GRAM_ROWS_PER_FEATURE", np.inf if gram else 0.0)
    module = BanditMLP(
        net.n_features, net.n_actions, hidden_layer_sizes=(8,), disjoint=True
    ).to(X.dtype)
    module.load_state_dict(net.state_dict())
    stepper = HandGradientSGD(module, theta0, lr, coef)
    rows = stepper.prepare(module.pack(X, arms))
    c = module.pack_values(rows, w) / w.sum()
    with torch.no_grad():
        assert stepper._tiled_one_hidden(rows)
        before, after = stepper.steps(
            rows, module.pack_values(rows, r), c, n_steps, data_term=True
        )
    return get_flat_parameters(module), (before, after), stepper.sq_distance


def _start(d_in, K, dtype, centre):
    """A network moved away from its centre, so that the penalty acts."""
    torch.manual_seed(0)
    net = BanditMLP(d_in, K, hidden_layer_sizes=(8,), disjoint=True).to(dtype)
    with torch.no_grad():
        theta0 = [q.detach().clone() for q in net.parameters()]
        if centre == "zero":
            theta0 = [torch.zeros_like(q) for q in theta0]
        for q in net.parameters():
            q.add_(0.1 * torch.randn_like(q))
    return net, theta0


@pytest.mark.parametrize(
    ("counts", "groups"),
    [
        ([6, 6, 6], 1),  # no padding
        ([6, 4, 5], 1),  # padded to 6
        ([8, 4, 8, 3], 2),  # regrouped: arms 0 and 2 at 8 rows, 1 and 3 at 4
        ([9, 6, 3, 9, 6, 2], 3),  # arms 0 and 3 at 9 rows, 1 and 4 at 6, 2 and 5 at 3
    ],
)
@pytest.mark.parametrize("mirrored", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("centre", ["init", "zero"])
def test_the_gram_form_trains_as_the_direct_form(
    monkeypatch, counts, groups, mirrored, weighted, centre
):
    """Carrying ``Y = X U`` through the rows' Gram matrix, and rebuilding ``U`` from
    the decayed sum of the steps' ``D``, gives the direct steps' parameters, data
    terms and distance to the centre: the same sums in exact arithmetic. Arms of
    unlike counts regrouped (each group cut to its busiest arm) too."""
    d = 7  # mirrored: 14 inputs, the loop on the 7-wide half
    # A group costs as 200 multiply-adds here (the hidden width is 8): these few
    # rows regroup as many rows would (one group for [6, 4, 5]: 864 multiply-adds
    # against 688 + 200 for two groups).
    monkeypatch.setattr(_tiled, "_GROUP_COST", 200)
    made = []
    monkeypatch.setattr(
        _tiled._GramPart, "__init__", _recorded(_tiled._GramPart.__init__, made)
    )
    X, arms, r = _rows(counts, d, mirrored, torch.float64)
    w = torch.rand(r.shape, dtype=torch.float64) if weighted else torch.ones_like(r)
    net, theta0 = _start(X.shape[1], len(counts), torch.float64, centre)
    # A large penalty (decay 0.05 a step) shrinks the offset by 2e-7 over 300 steps:
    # the decayed sum's running scale is renormalised on the way (at 1e-3).
    forms = _spy_on_forms(monkeypatch)
    gram, gram_terms, gram_distance = _train(
        net, theta0, X, arms, r, w, 300, True, monkeypatch
    )
    direct, terms, distance = _train(
        net, theta0, X, arms, r, w, 300, False, monkeypatch
    )
    assert forms == ["_gram_loop", "_direct_loop"]
    assert len(made) == groups
    moved = float((direct - get_flat_parameters(net)).abs().max())
    assert moved > 1e-2  # the steps did something worth comparing
    # float64: Y carried over 300 steps instead of recomputed from U, and U rebuilt
    # from the decayed sum: other roundings of the same sums, ~1e-15 measured;
    # 1e-11 leaves room for 300 steps. A wrong decay or step is off by ~1e-2.
    assert_allclose(gram, direct, rtol=0, atol=1e-11)
    assert_allclose(gram_terms, terms, rtol=1e-11)
    assert gram_distance == pytest.approx(distance, rel=1e-11)


def test_the_gram_form_in_float32_stays_as_close_to_float64_as_the_direct_form(
    monkeypatch,
):
    """The papers' float32 training, 100 steps on 30 rows per arm: both forms'
    parameters against the float64 direct steps."""
    counts, d = [30] * 10, 32
    X, arms, r = _rows(counts, d, True, torch.float32)
    w = torch.ones_like(r)
    net32, theta0_32 = _start(X.shape[1], len(counts), torch.float32, "init")
    # The float64 run starts from the same (float32) parameters: the errors below
    # are the steps' rounding alone.
    net = copy.deepcopy(net32).double()
    theta0 = [t.double() for t in theta0_32]
    X64, r64, w64 = X.double(), r.double(), w.double()
    args = (100, False, monkeypatch, 0.01, 1e-3)
    exact = _train(net, theta0, X64, arms, r64, w64, *args)[0]
    forms, errors = _spy_on_forms(monkeypatch), {}
    for gram in (True, False):
        params = _train(
            net32, theta0_32, X, arms, r, w, 100, gram,
            monkeypatch, 0.01, 1e-3,
        )[0]  # fmt: skip
        errors[gram] = float((params.double() - exact).abs().max())
    assert forms == ["_gram_loop", "_direct_loop"]
    scale = float(exact.abs().max())
    # Each of the 100 steps rounds its sums at float32's 6e-8: 6e-6 of the largest
    # parameter if every rounding added up; both forms measured at 1e-6, so 1e-5
    # bounds them. A step of the wrong sign or size is off by more than 1e-2.
    assert errors[False] / scale < 1e-5
    assert errors[True] / scale < 1e-5
    # Carrying Y rather than recomputing it rounds about as the direct form does
    # (measured: the same 1e-6 within 2 %); 5x leaves room for another BLAS's order
    # of the sums.
    assert errors[True] < 5 * errors[False]


@pytest.mark.parametrize(
    ("counts", "form"),
    [
        ([6, 6, 6], "_gram_loop"),  # one tile per arm, 6 rows < 1.5 x 7
        ([12, 12, 12], "_direct_loop"),  # 12 rows >= 1.5 x 7: the Gram costs more
        ([25, 3, 2], "_direct_loop"),  # several tiles per arm
    ],
)
def test_the_gram_form_runs_on_one_tile_per_arm_of_few_rows(monkeypatch, counts, form):
    X, arms, r = _rows(counts, 7, False, torch.float64)
    net, theta0 = _start(7, 3, torch.float64, "init")
    monkeypatch.setattr(_tiled, "GRAM_ROWS_PER_FEATURE", 1.5)
    forms = _spy_on_forms(monkeypatch)
    stepper = HandGradientSGD(net, theta0, 0.05, 1.0)
    rows = stepper.prepare(net.pack(X, arms))
    with torch.no_grad():
        stepper.steps(rows, net.pack_values(rows, r), net.pack_values(rows, r), 3)
    assert forms == [form]


def test_the_groups_are_the_cheapest_split_into_at_most_three():
    """The split of arms sorted by count into one to three groups, each padded to
    its busiest arm, of the fewest multiply-adds plus the cost of a group: against
    every split, by enumeration."""
    import itertools

    rng = np.random.RandomState(0)
    m, cost = 100, _tiled._GROUP_COST
    for _ in range(200):
        counts = np.sort(rng.randint(1, 90, size=rng.randint(1, 12)))[::-1]
        K = counts.size

        def padded(starts, counts=counts, K=K):
            stops = [*starts[1:], K]
            work = sum(
                (b - a) * counts[a] ** 2 * m for a, b in zip(starts, stops, strict=True)
            )
            return work + cost * (len(starts) - 1)

        splits = [[0]] + [
            [0, *cut] for n in (1, 2) for cut in itertools.combinations(range(1, K), n)
        ]
        best = min(padded(split) for split in splits)
        assert padded(_tiled._group_starts(counts, m)) == best
