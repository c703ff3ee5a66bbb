"""CN-UCB and CN-TS under the default online standardisation: ``Z`` gains each round's
gradients at its rows as ``select`` scaled them.

``select`` scales a round by the moments of the rows learned before it; the learning
rows (the replay buffer's) are scaled prequentially, by moments that include their
own round. ``Z``'s update takes ``select``'s rows, so that the width a slate was
chosen with and the ``Z`` it updates are of the same gradient (Algorithms 1-2 use one
``g(x_{t,i}; theta_{t-1})`` for both), and so that the update reuses ``select``'s
products ``phi Z^{-1}``. The scaling here is redone independently (numpy means and
standard deviations of the rows learned so far), the gradients by autograd in float64.
"""
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pytest
from _tangent_autograd import phi64  # beside this file
from numpy.testing import assert_allclose

from skbandit.networks import TangentPrecision
from skbandit.policies import CNTS, CNUCB
from skbandit.utils._standardize import CLIP

pytestmark = pytest.mark.usefixtures("one_torch_thread")

N, K, D = 6, 3, 4


def _contexts(n, seed=0):
    """Raw rows: features of different offsets and scales (standardisation moves)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, N, D)) * [1.0, 30.0, 0.1, 2.0] + [0.0, 100.0, -1.0, 3.0]
    return X.astype(np.float32)


def _scaled(history, x):
    """``x`` standardised by the mean and deviation of ``history``'s rows (as given
    when there is none), clipped as the policies clip."""
    if history.shape[0] == 0:
        return x
    rows = history.reshape(-1, D).astype(np.float64)
    scale = rows.std(axis=0)
    z = (x - rows.mean(axis=0)) / np.where(scale > 0, scale, 1.0)
    return np.clip(z, -CLIP, CLIP).astype(np.float32)


def _policy(cls=CNUCB, **params):
    # Trained every round with a large step, so that theta moves between rounds.
    defaults = dict(
        slate_size=K,
        hidden_layer_sizes=(8,),
        n_steps=3,
        learning_rate=0.05,
        train_every=1,
        standardize=True,
        random_state=0,
    )
    return cls(**{**defaults, **params})


def _rewards(t, slate):
    return np.random.default_rng(100 + t).normal(size=slate.shape)


def _run_with_direct_z(cls, X):
    """The policy round by round, and ``Z`` built directly from autograd gradients
    at ``theta_{t-1}``: of the rows as selected, and of the learning rows."""
    policy = _policy(cls)
    Z_selected = Z_learned = None
    for t in range(X.shape[0]):
        slate = policy.select(X[t : t + 1])[0]
        module = policy.net_.module_
        phi_sel = phi64(module, _scaled(X[:t], X[t]))[slate]
        phi_learn = phi64(module, _scaled(X[: t + 1], X[t]))[slate]
        if Z_selected is None:
            Z_selected = policy.alpha * np.eye(phi_sel.shape[1])
            Z_learned = Z_selected.copy()
        Z_selected += phi_sel.T @ phi_sel
        Z_learned += phi_learn.T @ phi_learn
        policy.partial_fit(X[t : t + 1], slate[None], _rewards(t, slate[None]))
    return policy, Z_selected, Z_learned


@pytest.mark.parametrize("cls", [CNUCB, CNTS])
def test_z_gains_the_gradients_of_the_rows_as_selected(cls):
    X = _contexts(6)
    policy, Z_selected, Z_learned = _run_with_direct_z(cls, X)
    assert policy.n_trainings_ == 6
    # float32 network and moments summed about the first row against float64
    # autograd on numpy's moments: 1e-7 absolute on entries of order 1 (as the
    # contexts-as-given test of Z), the learning rows' Z is 1e-2 away.
    assert_allclose(policy.covariance_, np.linalg.inv(Z_selected), rtol=1e-5, atol=1e-7)
    # Can fail: the learning rows' gradients (their round in the moments) differ.
    assert not np.allclose(policy.covariance_, np.linalg.inv(Z_learned), rtol=1e-3)
    # the buffer keeps the learning rows (prequential), not select's. Both sides
    # scale in float64 and round once to float32 (measured equal): 1e-5 leaves a
    # float32 rounding of the largest clipped value (5 * 6e-8) many times over,
    # while select's rows of the same round are 0.2 away.
    chosen = policy._core.buffer.X[-K:]
    assert_allclose(chosen, _scaled(X, X[-1])[policy._core.buffer.actions[-K:]],
                    rtol=1e-5, atol=1e-5)  # fmt: skip


def _count_passes(monkeypatch):
    """Count the factors that read ``Z^{-1}`` (``select``'s products not reused)."""
    passes = []
    kept = TangentPrecision._cached_products

    def counted(self, Phi):
        products = kept(self, Phi)
        passes.append(products is None)
        return products

    monkeypatch.setattr(TangentPrecision, "_cached_products", counted)
    return passes


@pytest.mark.parametrize("init", ["default", "ntk"])  # ntk: mirrored inputs
@pytest.mark.parametrize("cls", [CNUCB, CNTS])
def test_the_update_reuses_select_products_when_standardising(monkeypatch, cls, init):
    X = _contexts(5, seed=1)
    passes = _count_passes(monkeypatch)
    policy, slates = _policy(cls, init=init, mirror_inputs="auto"), []
    for t in range(5):
        slates.append(policy.select(X[t : t + 1]))
        policy.partial_fit(X[t : t + 1], slates[-1], _rewards(t, slates[-1]))
    assert passes == [False] * 5  # every factor took select's products
    assert policy._mirror == (init == "ntk")
    assert "_rows_as_selected" not in vars(policy)
    # The same slates without select in between: each factor reads Z^{-1} itself,
    # with the same result (the products are the same rows' at the same Z).
    passes.clear()
    blind = _policy(cls, init=init, mirror_inputs="auto")
    blind.select(X[:1])  # initialise only
    for t in range(5):
        blind.partial_fit(X[t : t + 1], slates[t], _rewards(t, slates[t]))
    assert passes == [False] + [True] * 4  # the first round: select's products
    # One GEMM against Z^{-1} (select's) or another (the update's): rounding only.
    assert_allclose(blind.covariance_, policy.covariance_, rtol=1e-10, atol=1e-13)


def test_contexts_as_given_take_the_learning_rows():
    # standardize=False: no second view of the rows; Z's rows are the buffer's.
    X = _contexts(3, seed=4) / 100
    policy = _policy(standardize=False)
    for t in range(3):
        s = policy.select(X[t : t + 1])
        policy.partial_fit(X[t : t + 1], s, _rewards(t, s))
    assert policy._context_moments is None
    assert "_rows_as_selected" not in vars(policy)
