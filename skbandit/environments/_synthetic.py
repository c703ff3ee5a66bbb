"""Synthetic nonlinear bandits with per-arm contexts, as in the neural bandit papers."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from numpy.typing import NDArray

from skbandit.environments._base import BaseEnvironment, _GivenSizes

__all__ = ["SyntheticBandit"]

_REWARDS = (
    "linear",
    "logistic",
    "quadratic",
    "quadratic_form",
    "cosine",
    "cosine_pi",
    "distance",
)


def _unit_sphere(rng, shape):
    g = rng.standard_normal(shape)
    return g / np.linalg.norm(g, axis=-1, keepdims=True)


class SyntheticBandit(_GivenSizes, BaseEnvironment):
    """Synthetic contextual bandit with per-arm contexts and Gaussian noise.

    The problems of the Neural Thompson sampling and NeuralUCB experiments: every
    round shows ``n_actions`` contexts ``x`` drawn uniformly on the unit sphere of
    ``R^d``; the reward of an arm is ``h(x) + noise * N(0, 1)`` with

    * ``"linear"``: ``h(x) = a^T x``;
    * ``"logistic"``: ``h(x) = 1 / (1 + exp(-a^T x))``, with Gaussian noise (the
      logistic bandit of Sun, Wang, Xu, section 7.1);
    * ``"quadratic"``: ``h(x) = (a^T x)^2``;
    * ``"quadratic_form"``: ``h(x) = 10^-2 x^T A^T A x``;
    * ``"cosine"``: ``h(x) = cos(3 a^T x)``;
    * ``"cosine_pi"``: ``h(x) = cos(pi a^T x)`` (``h_3`` of Hwang, Chai, Oh,
      "Combinatorial Neural Bandits", ICML 2023);
    * ``"distance"``: ``h(x) = -||x - a||`` (the distance bandit of Sun, Wang, Xu,
      "Provable anytime ensemble sampling algorithms in nonlinear contextual
      bandits", with ``theta* = a``);

    where ``a`` is uniform on the unit sphere and ``A`` has i.i.d. ``N(0, 1)``
    entries, both drawn by :meth:`reset`. :attr:`expected_rewards` are the exact
    ``h(x)``. The noise of every arm of a round is drawn with the round, so
    policies run on the same seed face the same rewards.

    With ``fixed_arms=True`` the ``n_actions`` contexts are drawn once per instance
    (by :meth:`reset`) and shown every round: the fixed arm set of Sun, Wang and Xu's
    synthetic problems (``n_actions=50, n_features=20, noise=0.5`` with ``"linear"``,
    ``"logistic"``, ``"distance"`` and ``"quadratic_form"``, whose
    ``10^-2 x^T A^T A x`` has the law of their ``10^-2 x^T A A^T x``).

    Parameters
    ----------
    reward : {"cosine", "cosine_pi", "quadratic", "quadratic_form", "linear", \
            "distance"}, default="cosine"
        The reward function ``h``.
    n_actions : int, default=4
        Number of arms ``K``.
    n_features : int, default=20
        Dimension ``d`` of a context.
    noise : float, default=0.1
        Standard deviation of the Gaussian reward noise.
    fixed_arms : bool, default=False
        Draw the arms once per instance instead of every round.
    random_state : int, RandomState instance or None, default=None
        Seed used by :meth:`reset` when it is called without one.

    Attributes
    ----------
    a_ : ndarray of shape (n_features,)
        The unit vector of ``"linear"``, ``"quadratic"`` and ``"cosine"``.
    A_ : ndarray of shape (n_features, n_features)
        The matrix of ``"quadratic_form"``.
    arm_features_ : ndarray of shape (n_actions, n_features) or None
        The fixed arm set (``fixed_arms=True``), else None.

    Examples
    --------
    >>> from skbandit.environments import SyntheticBandit
    >>> env = SyntheticBandit("cosine").reset(0)
    >>> env.contexts(3).shape
    (3, 4, 20)
    >>> env.expected_rewards.shape
    (3, 4)
    """

    per_arm_contexts = True

    def __init__(
        self,
        reward="cosine",
        n_actions=4,
        n_features=20,
        *,
        noise=0.1,
        fixed_arms=False,
        random_state=None,
    ):
        if reward not in _REWARDS:
            raise ValueError(f"reward must be one of {_REWARDS}, got {reward!r}.")
        for name, value in (("n_actions", n_actions), ("n_features", n_features)):
            if not isinstance(value, Integral) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}.")
        if not isinstance(noise, Real) or noise < 0:
            raise ValueError(f"noise must be a non-negative number, got {noise!r}.")
        self.reward = reward
        self._n_actions = int(n_actions)
        self._n_features = int(n_features)
        self.noise = float(noise)
        self.fixed_arms = bool(fixed_arms)
        self.random_state = random_state

    def _h(self, X: NDArray) -> NDArray:
        """Expected reward of contexts ``X`` of shape (..., n_features)."""
        if self.reward == "quadratic_form":
            AX = X @ self.A_.T
            return 1e-2 * np.einsum("...i,...i->...", AX, AX)
        if self.reward == "distance":
            return -np.linalg.norm(X - self.a_, axis=-1)
        z = X @ self.a_
        if self.reward == "logistic":
            return 1.0 / (1.0 + np.exp(-z))
        if self.reward == "cosine_pi":
            return np.cos(np.pi * z)
        if self.reward == "linear":
            return z
        if self.reward == "quadratic":
            return z**2
        return np.cos(3.0 * z)

    def _setup(self, rng):
        d = self._n_features
        self.a_ = _unit_sphere(rng, (d,))
        self.A_ = rng.standard_normal((d, d))
        self.arm_features_ = None
        if self.fixed_arms:
            self.arm_features_ = _unit_sphere(rng, (self._n_actions, d))
            self.arm_features_.setflags(write=False)

    def _draw(self, n_rounds, rng):
        shape = (n_rounds, self._n_actions, self._n_features)
        if self.fixed_arms:
            X = np.broadcast_to(self.arm_features_, shape)
        else:
            X = _unit_sphere(rng, shape)
        self._noise = self.noise * rng.standard_normal((n_rounds, self._n_actions))
        return X, self._h(X), None

    def _realise(self, actions):
        rows = np.arange(actions.size)
        return (
            self._current.expected_rewards[rows, actions] + self._noise[rows, actions]
        )

    def __repr__(self) -> str:
        return (
            f"SyntheticBandit(reward={self.reward!r}, n_actions={self.n_actions}, "
            f"n_features={self.n_features})"
        )
