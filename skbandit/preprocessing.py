"""Context transformers of the neural bandit papers.

:class:`MirrorNormalizer`
    ``x -> [x; x] / (sqrt(2) ||x||)``: unit norm with equal halves, Assumption 3.4 of
    Zhang, Zhou, Li, Gu, "Neural Thompson Sampling" (ICLR 2021), under which the
    mirrored initialisation gives ``f(x; theta_0) = 0``;
:class:`DisjointEncoder`
    shared contexts ``(n, d)`` to per-arm contexts ``(n, K, K d)`` with ``x`` in arm
    ``k``'s block (Li et al. 2010). Neural policies do this internally, block-wise and
    without the zeros; the dense form is the reference and for custom models.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils import check_array
from sklearn.utils.validation import check_is_fitted, validate_data

from skbandit.utils._param_validation import Interval

__all__ = ["DisjointEncoder", "MirrorNormalizer"]


class MirrorNormalizer(TransformerMixin, BaseEstimator):
    """Map every context vector to ``[x; x] / (sqrt(2) ||x||_2)``.

    The output has unit norm and two equal halves (Assumption 3.4(ii) of the NeuralTS
    paper, Zhang et al., ICLR 2021);
    the feature count doubles. Works on shared ``(n, d)`` and per-arm ``(n, K, d)``
    contexts (on the last axis). An all-zero vector stays zero. Stateless: it
    transforms without being fitted (so a :class:`~skbandit.pipeline.BanditPipeline`
    can ``select`` from the prior) and its ``partial_fit`` only records the width.

    Attributes
    ----------
    n_features_in_ : int
        Number of input features.

    See Also
    --------
    DisjointEncoder : The disjoint encoding of shared contexts.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.preprocessing import MirrorNormalizer
    >>> MirrorNormalizer().fit_transform(np.array([[3.0, 4.0]]))
    array([[0.42426407, 0.56568542, 0.42426407, 0.56568542]])
    """

    def fit(self, X, y=None):
        """Record the number of features.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or (n_samples, K, n_features)
            Contexts.
        y : None
            Ignored.

        Returns
        -------
        self : object
            Fitted transformer.
        """
        X = self._check(X, reset=True)
        return self

    def partial_fit(self, X, y=None):
        """Record the number of features on the first call; check it afterwards.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or (n_samples, K, n_features)
            Contexts.
        y : None
            Ignored.

        Returns
        -------
        self : object
            Fitted transformer.
        """
        self._check(X, reset=not hasattr(self, "n_features_in_"))
        return self

    def transform(self, X):
        """Mirror and normalise.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or (n_samples, K, n_features)
            Contexts.

        Returns
        -------
        X_new : ndarray of shape (..., 2 * n_features)
            Mirrored unit-norm contexts.
        """
        X = self._check(X, reset=False)
        norm = np.linalg.norm(X, axis=-1, keepdims=True) * np.sqrt(2.0)
        Z = np.divide(X, norm, out=np.zeros_like(X), where=norm > 0)
        return np.concatenate([Z, Z], axis=-1)

    def _check(self, X, reset):
        if np.ndim(X) == 3:
            X = check_array(X, allow_nd=True, dtype=(np.float64, np.float32))
            if reset:
                self.n_features_in_ = X.shape[2]
            elif X.shape[2] != getattr(self, "n_features_in_", X.shape[2]):
                raise ValueError(
                    f"X has {X.shape[2]} features, but MirrorNormalizer is expecting "
                    f"{self.n_features_in_} features as input."
                )
            return X
        return validate_data(self, X, reset=reset, dtype=(np.float64, np.float32))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = False
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


class DisjointEncoder(TransformerMixin, BaseEstimator):
    """Shared contexts to the disjoint per-arm contexts of Li et al. (2010).

    Arm ``k`` of round ``i`` gets the ``n_actions * n_features`` vector with
    ``X[i]`` in block ``k`` and zeros elsewhere. The neural policies apply this
    encoding block-wise without building it; use this transformer to feed a dense
    per-arm model, or as the reference the block-wise form is tested against.

    Parameters
    ----------
    n_actions : int
        Number of arms.

    Attributes
    ----------
    n_features_in_ : int
        Number of input features.

    See Also
    --------
    MirrorNormalizer : The mirrored unit-norm map.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.preprocessing import DisjointEncoder
    >>> DisjointEncoder(n_actions=2).fit_transform(np.array([[1.0, 2.0]]))
    array([[[1., 2., 0., 0.],
            [0., 0., 1., 2.]]])
    """

    _parameter_constraints: dict = {
        "n_actions": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, n_actions=2):
        self.n_actions = n_actions

    def fit(self, X, y=None):
        """Record the number of features.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Shared contexts.
        y : None
            Ignored.

        Returns
        -------
        self : object
            Fitted transformer.
        """
        self._validate_params()
        validate_data(self, X, reset=True, dtype=(np.float64, np.float32))
        return self

    def transform(self, X):
        """Encode.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Shared contexts.

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_actions, n_actions * n_features)
            Per-arm disjoint contexts.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=(np.float64, np.float32))
        n, d = X.shape
        out = np.zeros((n, self.n_actions, self.n_actions, d), dtype=X.dtype)
        arms = np.arange(self.n_actions)
        out[:, arms, arms, :] = X[:, None, :]
        return out.reshape(n, self.n_actions, self.n_actions * d)
