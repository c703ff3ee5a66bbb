"""A kernel ridge regressor learned exactly online: ridge on random Fourier features.

SquareCB's default reward model. A linear oracle cannot fit a nonlinear reward, so
on such problems an inverse-gap policy over it is LinUCB with another exploration,
at best its equal. An exact kernel ridge (KernelUCB's model) costs a solve that
grows with the history. Random Fourier features (Rahimi and Recht, "Random Features
for Large-Scale Kernel Machines", 2007) map a row to ``n_components`` cosines whose
inner products approximate the Gaussian kernel ``exp(-gamma ||x - y||^2)``; an
:class:`~skbandit.policies._core._online_ridge.OnlineRidge` on them learns each row
by one Sherman-Morrison update, ``O(n_components^2)`` whatever the history, and
``partial_fit`` in chunks equals one ``fit``.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from functools import lru_cache
from numbers import Integral, Real

import numpy as np
from scipy import sparse
from sklearn.utils import check_random_state

from skbandit.policies._core._online_ridge import OnlineRidge
from skbandit.utils._param_validation import Interval

__all__ = ["RandomFeatureRidge"]


class RandomFeatureRidge(OnlineRidge):
    """Ridge regression on random Fourier features of a Gaussian kernel, online.

    A row ``x`` becomes ``sqrt(2 / D) cos(W^T x + b)``, with ``W`` of
    ``n_features x D`` entries drawn from ``N(0, 2 gamma)`` and ``b`` uniform on
    ``[0, 2 pi)``, drawn once at the first call; the ridge of
    :class:`~skbandit.policies._core._online_ridge.OnlineRidge` is learned on
    those features. The features' inner product approximates
    ``exp(-gamma ||x - x'||^2)``, so the model approximates a kernel ridge
    regression (``alpha`` its regulariser) at a fixed cost per row.

    Parameters
    ----------
    n_components : int, default=300
        ``D``, the number of random features.
    gamma : float or None, default=None
        Kernel scale; ``None`` is ``1 / n_features`` (KernelUCB's default): a
        length scale made for standardised features.
    alpha : float, default=0.1
        Ridge strength on the features.
    fit_intercept : bool, default=True
        Learn an intercept (a constant feature, penalised like the others).
    random_state : int, RandomState instance or None, default=None
        Draws ``W`` and ``b``. A policy with an integer ``random_state`` seeds an
        unset one, so each arm's model has the same features.

    Attributes
    ----------
    coef_ : ndarray of shape (n_components,)
        The ridge's coefficients on the features.
    intercept_ : float
        Its intercept.
    weights_ : ndarray of shape (n_features_in_, n_components)
        ``W``.
    offsets_ : ndarray of shape (n_components,)
        ``b``.
    n_features_in_ : int
        Number of features.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies._core._random_features import RandomFeatureRidge
    >>> X = np.random.default_rng(0).normal(size=(200, 2))
    >>> y = np.sin(2 * X[:, 0])
    >>> model = RandomFeatureRidge(random_state=0).partial_fit(X[:100], y[:100])
    >>> model = model.partial_fit(X[100:], y[100:])
    >>> bool(np.mean((model.predict(X) - y) ** 2) < 0.05)
    True
    """

    _parameter_constraints: dict = {
        **OnlineRidge._parameter_constraints,
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "gamma": [Interval(Real, 0, None, closed="neither"), None],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        n_components=300,
        *,
        gamma=None,
        alpha=0.1,
        fit_intercept=True,
        random_state=None,
    ):
        self.n_components = n_components
        self.gamma = gamma
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.random_state = random_state

    def _init_features(self, n_features):
        """Draw ``W`` and ``b`` (at the first call, and again at each ``fit``).

        An integer ``random_state`` gives the same arrays, read-only, to every
        model of that seed and shape (a policy's arms), so that a policy computes
        a row's features once for all its arms.
        """
        gamma = 1.0 / n_features if self.gamma is None else float(self.gamma)
        seed = self.random_state
        if isinstance(seed, Integral):
            draw = _shared_features(int(seed), n_features, self.n_components, gamma)
        else:
            draw = _draw(check_random_state(seed), n_features, self.n_components, gamma)
        self.weights_, self.offsets_ = draw

    def _features(self, X):
        """``sqrt(2 / D) cos(W^T x + b)`` of each row ``x`` of ``X``."""
        if sparse.issparse(X):
            X = X.toarray()
        scale = np.sqrt(2.0 / self.n_components)
        projections = np.asarray(X, dtype=np.float64) @ self.weights_
        return scale * np.cos(projections + self.offsets_)


def _draw(rng, n_features, n_components, gamma):
    weights = rng.normal(scale=np.sqrt(2.0 * gamma), size=(n_features, n_components))
    return weights, rng.uniform(0.0, 2.0 * np.pi, size=n_components)


@lru_cache(maxsize=16)
def _shared_features(seed, n_features, n_components, gamma):
    """The features of an integer seed, drawn once and shared read-only."""
    weights, offsets = _draw(check_random_state(seed), n_features, n_components, gamma)
    weights.flags.writeable = offsets.flags.writeable = False
    return weights, offsets
