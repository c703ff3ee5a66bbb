"""An exact online ridge regressor: the default reward model of SquareCB and
BootstrappedTS.

A stochastic-gradient model (SquareCB's former ``SGDRegressor(learning_rate=
"constant", eta0=0.05)``) needs a step size matched to the features' scale: on raw
features it diverges, and even on standard-scaled breast cancer data its scores
reached |696| for 0/1 rewards. Ridge regression has no step: each ``partial_fit``
adds its rows to the precision ``alpha I + sum w x x^T`` and the moment
``sum w y x`` (by Sherman-Morrison for one row, the linear policies'
:class:`~skbandit.policies._core._ridge.RidgeBlocks`), so ``partial_fit`` in
chunks equals one ``fit`` and the model is the ridge solution of every row so far,
whatever the order or the scale of the rows.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import copy
from numbers import Real

import numpy as np
from scipy import sparse
from sklearn import get_config
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import (
    _check_sample_weight,
    check_is_fitted,
    validate_data,
)

from skbandit.policies._core._ridge import RidgeBlocks, add_intercept
from skbandit.utils._param_validation import Interval

__all__ = ["OnlineRidge"]


def _validated_rows(model, X, y):
    """Whether a policy has validated ``X`` and ``y`` already (scikit-learn's
    ``assume_finite``, set by the policies on scikit-learn estimators around their
    models' calls): then plain float64 arrays of the fitted width skip
    ``validate_data``, about 100 us a call, ten calls a round for BootstrappedTS."""
    return (
        get_config()["assume_finite"]
        and type(X) is np.ndarray
        and type(y) is np.ndarray
        and X.dtype == np.float64
        and y.dtype == np.float64
        and X.ndim == 2
        and X.shape[1] == model.n_features_in_
        and y.shape == (X.shape[0],)
    )


class OnlineRidge(RegressorMixin, BaseEstimator):
    """Ridge regression learned exactly online, by ``partial_fit``.

    Minimises ``sum w (y - x^T coef - intercept)^2 + alpha ||(coef, intercept)||^2``
    over every row seen: the intercept is a constant feature penalised like the
    others, as in the linear bandit policies. Sparse rows are densified (the state
    is ``(d + 1)^2`` numbers anyway).

    Parameters
    ----------
    alpha : float, default=1.0
        Ridge strength (the prior precision).
    fit_intercept : bool, default=True
        Learn an intercept (a constant feature).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features_in_,)
        Coefficients.
    intercept_ : float
        Intercept (0 without ``fit_intercept``).
    n_features_in_ : int
        Number of features.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies._core._online_ridge import OnlineRidge
    >>> X = np.arange(8.0).reshape(4, 2)
    >>> y = np.array([0.0, 1.0, 2.0, 3.0])
    >>> chunks = OnlineRidge().partial_fit(X[:2], y[:2]).partial_fit(X[2:], y[2:])
    >>> bool(np.allclose(chunks.coef_, OnlineRidge().fit(X, y).coef_))
    True
    """

    _parameter_constraints: dict = {
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "fit_intercept": ["boolean"],
    }

    def __init__(self, alpha=1.0, *, fit_intercept=True):
        self.alpha = alpha
        self.fit_intercept = fit_intercept

    def fit(self, X, y, sample_weight=None):
        """Forget earlier rows, then :meth:`partial_fit` these (same arguments)."""
        for name in ("_ridge", "coef_", "intercept_", "n_features_in_"):
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
        if first:
            self._init_features(X.shape[1])
        X = self._features(X)
        if sparse.issparse(X):
            X = X.toarray()
        # no weights: None, which the ridge reads as ones (no array of them)
        weight = sample_weight
        if weight is not None:
            weight = _check_sample_weight(weight, X)
        rows = add_intercept(X) if self.fit_intercept else X
        ridge = self._ridge if not first else RidgeBlocks(1, rows.shape[1], self.alpha)
        ridge.update(np.zeros(X.shape[0], dtype=np.intp), rows, y, weight)
        coef = ridge.coef[0]
        self._ridge = ridge
        self.coef_ = coef[: X.shape[1]].copy()
        self.intercept_ = float(coef[-1]) if self.fit_intercept else 0.0
        return self

    def _init_features(self, n_features):
        """Hook of a subclass that learns on features of the rows: set them up."""

    def _features(self, X):
        """The rows the ridge learns on and predicts from: ``X`` itself here."""
        return X

    def updatable_copy(self):
        """A copy that ``partial_fit`` may update without touching this model.

        The ridge state shares this model's arrays until its first update, which
        writes new ones (:meth:`RidgeBlocks.shared_copy`); the rest is shared (a
        subclass's features never change once drawn).
        """
        new = copy.copy(self)
        if hasattr(self, "_ridge"):
            new._ridge = self._ridge.shared_copy()
        return new

    def predict(self, X):
        """``X @ coef_ + intercept_``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows.

        Returns
        -------
        y : ndarray of shape (n_samples,)
            Predictions.
        """
        check_is_fitted(self)
        validated = (  # as _validated_rows: the policy has checked the rows
            get_config()["assume_finite"]
            and type(X) is np.ndarray
            and X.dtype == np.float64
            and X.ndim == 2
            and X.shape[1] == self.n_features_in_
        )
        if not validated:
            X = validate_data(self, X, reset=False, accept_sparse="csr")
        return np.asarray(self._features(X) @ self.coef_).ravel() + self.intercept_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
