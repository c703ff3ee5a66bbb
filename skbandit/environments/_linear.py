"""Fixed-arm linear and logistic Bernoulli bandits (Kveton et al., UAI 2019)."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from numbers import Integral

import numpy as np
from numpy.typing import NDArray
from scipy.special import expit

from skbandit.environments._base import BaseEnvironment, _GivenSizes

__all__ = ["LinearBandit", "LogisticBandit"]


def _unit_sphere(rng, n, dim):
    g = rng.standard_normal((n, dim))
    return g / np.linalg.norm(g, axis=1, keepdims=True)


class LinearBandit(_GivenSizes, BaseEnvironment):
    """Stochastic linear bandit with a fixed arm set and Bernoulli rewards.

    The problem of Kveton et al. (UAI 2019), section 5.1: arm ``i`` has the feature
    vector ``x_i = (u_i, 1)`` with ``u_i`` uniform on the unit sphere of
    ``R^{d-1}`` (the last feature is a bias), the parameter is
    ``theta* = (0.5 v, 0.5)`` with ``v`` uniform on the same sphere, and a pull of
    arm ``i`` pays ``Bernoulli(x_i^T theta*)``, a mean in ``[0, 1]``. Every round
    shows the same arms as per-arm contexts of shape ``(n_rounds, n_actions,
    n_features)``; the policies need ``fit_intercept=False``, since the features
    carry the bias.

    :meth:`reset` draws a new instance from its seed, so seed ``i`` is instance
    ``i``; pass ``arm_features`` and ``theta`` to keep one instance across seeds.

    Parameters
    ----------
    n_actions : int, default=100
        Number of arms ``K``.
    n_features : int, default=5
        Dimension ``d``, bias included; the paper uses 5, 10 and 20.
    arm_features : array-like of shape (n_actions, n_features), default=None
        Fixed arms instead of random ones.
    theta : array-like of shape (n_features,), default=None
        Fixed parameter instead of a random one.
    random_state : int, RandomState instance or None, default=None
        Seed used by :meth:`reset` when it is called without one.

    Attributes
    ----------
    arm_features_ : ndarray of shape (n_actions, n_features)
        Arms of the current instance.
    theta_ : ndarray of shape (n_features,)
        Parameter of the current instance.
    means_ : ndarray of shape (n_actions,)
        Expected reward of each arm.

    References
    ----------
    .. [1] Kveton, Szepesvari, Ghavamzadeh, Boutilier. "Perturbed-history exploration
       in stochastic linear bandits". UAI 2019. arXiv:1903.09132.

    Examples
    --------
    >>> from skbandit.environments import LinearBandit
    >>> env = LinearBandit(n_actions=10, n_features=5).reset(0)
    >>> env.contexts(3).shape
    (3, 10, 5)
    >>> bool(((env.means_ >= 0) & (env.means_ <= 1)).all())
    True
    """

    per_arm_contexts = True
    #: Radius of the random part of theta* and its bias coordinate.
    _theta_scale, _theta_bias = 0.5, 0.5

    def __init__(
        self,
        n_actions=100,
        n_features=5,
        *,
        arm_features=None,
        theta=None,
        random_state=None,
    ):
        for name, value, low in (
            ("n_actions", n_actions, 2),
            ("n_features", n_features, 2),
        ):
            if not isinstance(value, Integral) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}.")
        self._n_actions = int(n_actions)
        self._n_features = int(n_features)
        self.arm_features = arm_features
        self.theta = theta
        self.random_state = random_state

    def _mean(self, z: NDArray) -> NDArray:
        """Mean reward as a function of the linear predictor."""
        return z

    def _setup(self, rng):
        K, d = self._n_actions, self._n_features
        if self.arm_features is None:
            arms = np.hstack([_unit_sphere(rng, K, d - 1), np.ones((K, 1))])
        else:
            arms = np.array(self.arm_features, dtype=np.float64)
        if self.theta is None:
            v = _unit_sphere(rng, 1, d - 1)[0]
            theta = np.append(self._theta_scale * v, self._theta_bias)
        else:
            theta = np.array(self.theta, dtype=np.float64)
        if arms.shape != (K, d) or theta.shape != (d,):
            raise ValueError(
                f"arm_features must have shape ({K}, {d}) and theta ({d},); got "
                f"{arms.shape} and {theta.shape}."
            )
        means = self._mean(arms @ theta)
        if np.any(means < 0) or np.any(means > 1):
            raise ValueError(
                "Expected rewards must lie in [0, 1] for Bernoulli rewards."
            )
        self.arm_features_, self.theta_, self.means_ = arms, theta, means
        self.arm_features_.setflags(write=False)

    def _draw(self, n_rounds, rng):
        K, d = self._n_actions, self._n_features
        X = np.broadcast_to(self.arm_features_, (n_rounds, K, d))
        expected = np.broadcast_to(self.means_, (n_rounds, K))
        return X, expected, None

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(n_actions={self._n_actions}, "
            f"n_features={self._n_features})"
        )


class LogisticBandit(LinearBandit):
    """Fixed-arm logistic bandit with Bernoulli rewards.

    Kveton et al. (UAI 2019), section 5.2: the arms of :class:`LinearBandit`, the
    parameter
    ``theta* = (1.5 v, 0)``, and rewards ``Bernoulli(sigmoid(x_i^T theta*))``, with
    means in ``[0.18, 0.82]``.

    Parameters
    ----------
    n_actions : int, default=100
        Number of arms ``K``.
    n_features : int, default=5
        Dimension ``d``, bias included.
    arm_features : array-like of shape (n_actions, n_features), default=None
        Fixed arms instead of random ones.
    theta : array-like of shape (n_features,), default=None
        Fixed parameter instead of a random one.
    random_state : int, RandomState instance or None, default=None
        Seed used by :meth:`reset` when it is called without one.

    Attributes
    ----------
    arm_features_ : ndarray of shape (n_actions, n_features)
        Arms of the current instance.
    theta_ : ndarray of shape (n_features,)
        Parameter of the current instance.
    means_ : ndarray of shape (n_actions,)
        Expected reward of each arm.

    Examples
    --------
    >>> from skbandit.environments import LogisticBandit
    >>> env = LogisticBandit(n_actions=10, n_features=5).reset(0)
    >>> env.contexts(1).shape
    (1, 10, 5)
    """

    _theta_scale, _theta_bias = 1.5, 0.0

    def _mean(self, z):
        return expit(z)
