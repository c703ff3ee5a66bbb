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

import copy
from numbers import Integral, Real

import numpy as np
from scipy import sparse
from sklearn import get_config
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from skbandit.policies._core._online_ridge import OnlineRidge, _validated_rows
from skbandit.utils._param_validation import Interval

__all__ = ["RandomFeatureRidge"]


class RandomFeatureRidge(RegressorMixin, BaseEstimator):
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
    random_state : int, RandomState instance or None, default=None
        Draws ``W`` and ``b``. A policy with an integer ``random_state`` seeds an
        unset one, so each arm's model has the same features.

    Attributes
    ----------
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
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "gamma": [Interval(Real, 0, None, closed="neither"), None],
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "random_state": ["random_state"],
    }

    def __init__(self, n_components=300, *, gamma=None, alpha=0.1, random_state=None):
        self.n_components = n_components
        self.gamma = gamma
        self.alpha = alpha
        self.random_state = random_state

    def fit(self, X, y, sample_weight=None):
        """Forget earlier rows and features, then :meth:`partial_fit` these."""
        for name in ("_ridge", "weights_", "offsets_", "n_features_in_"):
            self.__dict__.pop(name, None)
        return self.partial_fit(X, y, sample_weight)

    def partial_fit(self, X, y, sample_weight=None):
        """Add the rows ``X``, ``y`` to those learned so far.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows.
        y : array-like of shape (n_samples,)
            Targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights.

        Returns
        -------
        self : object
            Updated model.
        """
        first = not hasattr(self, "_ridge")
        if first:
            self._validate_params()
        if first or not _validated_rows(self, X, y):
            X, y = validate_data(
                self, X, y, reset=first, accept_sparse="csr", y_numeric=True
            )
        ridge = OnlineRidge(alpha=self.alpha) if first else self._ridge
        if first:
            self._draw_features(X.shape[1])
        self._ridge = ridge.partial_fit(self._features(X), y, sample_weight)
        return self

    def _draw_features(self, n_features):
        rng = check_random_state(self.random_state)
        gamma = 1.0 / n_features if self.gamma is None else float(self.gamma)
        size = (n_features, self.n_components)
        self.weights_ = rng.normal(scale=np.sqrt(2.0 * gamma), size=size)
        self.offsets_ = rng.uniform(0.0, 2.0 * np.pi, size=self.n_components)

    def _features(self, X):
        if sparse.issparse(X):
            X = X.toarray()
        scale = np.sqrt(2.0 / self.n_components)
        projections = np.asarray(X, dtype=np.float64) @ self.weights_
        return scale * np.cos(projections + self.offsets_)

    def updatable_copy(self):
        """A copy that ``partial_fit`` may update without touching this model
        (the ridge state copied, the features shared: they never change)."""
        new = copy.copy(self)
        if hasattr(self, "_ridge"):
            new._ridge = self._ridge.updatable_copy()
        return new

    def predict(self, X):
        """The ridge's prediction on the random features of ``X``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows.

        Returns
        -------
        y : ndarray of shape (n_samples,)
            Predictions.
        """
        check_is_fitted(self, "_ridge")
        validated = (
            get_config()["assume_finite"]  # the policy validated the rows
            and type(X) is np.ndarray
            and X.dtype == np.float64
            and X.ndim == 2
            and X.shape[1] == self.n_features_in_
        )
        if not validated:
            X = validate_data(self, X, reset=False, accept_sparse="csr")
        ridge = self._ridge
        return self._features(X) @ ridge.coef_ + ridge.intercept_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
