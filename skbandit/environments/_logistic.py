"""The synthetic neural logistic bandits of Bae and Lee ("Neural Logistic Bandits")."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from numbers import Integral

import numpy as np
from numpy.typing import NDArray
from scipy.special import expit

from skbandit.environments._base import BaseEnvironment, _GivenSizes

__all__ = ["NeuralLogisticBandit"]

#: The latent functions of Fig. 1 (h1-h3) and Fig. 4 (h4-h6).
LATENT = {
    "h1": "0.2 (x^T theta)^4",
    "h2": "20 cos(x^T theta)",
    "h3": "5 x^T Theta x",
    "h4": "10 (x^T theta)^2",
    "h5": "x^T Theta^T Theta x",
    "h6": "cos(3 x^T theta)",
}


class NeuralLogisticBandit(_GivenSizes, BaseEnvironment):
    """Bernoulli rewards through the logistic link of a nonlinear latent function.

    The synthetic problems of Bae and Lee, "Neural Logistic Bandits" (ICML 2025),
    Section 7 and App. J: every round shows ``n_actions`` context-arm vectors ``x``,
    and a pull pays ``Bernoulli(mu(h(x)))`` with ``mu`` the sigmoid and

    * ``"h1"``: ``h(x) = 0.2 (x^T theta)^4`` (Fig. 1a);
    * ``"h2"``: ``h(x) = 20 cos(x^T theta)`` (Fig. 1b);
    * ``"h3"``: ``h(x) = 5 x^T Theta x`` (Fig. 1c; ``Theta`` not symmetrised);
    * ``"h4"``: ``h(x) = 10 (x^T theta)^2`` (Fig. 4a);
    * ``"h5"``: ``h(x) = x^T Theta^T Theta x`` (Fig. 4b);
    * ``"h6"``: ``h(x) = cos(3 x^T theta)`` (Fig. 4c);

    where ``theta`` and ``Theta`` have i.i.d. ``Unif(-1, 1)`` entries, drawn by
    :meth:`reset`. :attr:`expected_rewards` are the exact ``mu(h(x))``, so the
    regret is the paper's pseudo-regret. Rewards share one uniform per round.

    The paper leaves the context distribution unstated; its real data are rescaled
    to ``[-1, 1]`` "for consistency with the synthetic environment", hence
    ``context_distribution="uniform"``: i.i.d. ``Unif(-1, 1)`` coordinates (on the
    unit sphere ``h2`` is about 20 everywhere and the problem is trivial). The
    figures use 2,500 vectors in all ("we control the effective dimension by
    limiting the total number of context-arm feature vectors"): a pool of
    ``n_vectors`` drawn once per run, each round showing ``n_actions`` distinct
    ones of them drawn uniformly; ``n_vectors=None`` draws fresh vectors every
    round (Fig. 3's "high" effective dimension, 10,000 distinct vectors for
    T = 2000 and K = 5). Under this setting ``h5`` is about 44 for every vector,
    so every arm pays with probability about 1 and the problem is degenerate.

    Parameters
    ----------
    reward : {"h1", "h2", "h3", "h4", "h5", "h6"}, default="h1"
        The latent function.
    n_actions : int, default=5
        Number of arms ``K``.
    n_features : int, default=20
        Dimension ``d``.
    n_vectors : int or None, default=2500
        Size of the pool of context-arm vectors (at least ``n_actions``; Fig. 3
        and 6 also use 10 and 50), or None for fresh vectors every round.
    context_distribution : {"uniform", "sphere"}, default="uniform"
        ``Unif(-1, 1)^d``, or uniform on the unit sphere (the NeuralUCB problems).
    random_state : int, RandomState instance or None, default=None
        Seed used by :meth:`reset` when it is called without one.

    Attributes
    ----------
    latent_functions : dict of str to str
        Class attribute: each ``reward`` name and the formula of its ``h``, for the
        titles of tables and figures.
    theta_ : ndarray of shape (n_features,)
        ``theta`` of h1, h2, h4 and h6.
    Theta_ : ndarray of shape (n_features, n_features)
        ``Theta`` of h3 and h5.
    pool_ : ndarray of shape (n_vectors, n_features) or None
        The run's context-arm vectors.

    See Also
    --------
    SyntheticBandit : The same kind of latent functions with Gaussian rewards.
    LogisticBandit : A fixed arm set with a linear logit.

    References
    ----------
    .. [1] Bae, Lee. "Neural Logistic Bandits". ICML 2025. arXiv:2505.02069.

    Examples
    --------
    >>> from skbandit.environments import NeuralLogisticBandit
    >>> env = NeuralLogisticBandit("h2").reset(0)
    >>> env.contexts(3).shape
    (3, 5, 20)
    >>> bool(((env.expected_rewards > 0) & (env.expected_rewards < 1)).all())
    True
    >>> NeuralLogisticBandit.latent_functions["h2"]
    '20 cos(x^T theta)'
    """

    per_arm_contexts = True
    latent_functions = LATENT

    def __init__(
        self,
        reward="h1",
        n_actions=5,
        n_features=20,
        *,
        n_vectors=2500,
        context_distribution="uniform",
        random_state=None,
    ):
        if reward not in LATENT:
            raise ValueError(f"reward must be one of {tuple(LATENT)}, got {reward!r}.")
        for name, value in (("n_actions", n_actions), ("n_features", n_features)):
            if not isinstance(value, Integral) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}.")
        if n_vectors is not None and (
            not isinstance(n_vectors, Integral) or n_vectors < n_actions
        ):
            raise ValueError(
                "n_vectors must be None or an integer of at least n_actions "
                f"({n_actions}): each round shows distinct vectors; got {n_vectors!r}."
            )
        if context_distribution not in ("uniform", "sphere"):
            raise ValueError(
                'context_distribution must be "uniform" or "sphere", got '
                f"{context_distribution!r}."
            )
        super().__init__(random_state=random_state)
        self.reward = reward
        self._n_actions = int(n_actions)
        self._n_features = int(n_features)
        self.n_vectors = None if n_vectors is None else int(n_vectors)
        self.context_distribution = context_distribution

    def latent(self, X: NDArray) -> NDArray:
        """The latent logit ``h(x)`` of vectors ``X`` of shape (..., n_features).

        Parameters
        ----------
        X : ndarray of shape (..., n_features)
            Context-arm vectors.

        Returns
        -------
        h : ndarray of shape (...)
            ``h(x)``; the expected reward is ``mu(h(x))``.
        """
        X = np.asarray(X, dtype=float)
        if self.reward in ("h3", "h5"):
            TX = X @ self.Theta_.T  # (Theta x)
            if self.reward == "h3":
                return 5.0 * np.einsum("...i,...i->...", X, TX)
            return np.einsum("...i,...i->...", TX, TX)
        z = X @ self.theta_
        if self.reward == "h1":
            return 0.2 * z**4
        if self.reward == "h2":
            return 20.0 * np.cos(z)
        if self.reward == "h4":
            return 10.0 * z**2
        return np.cos(3.0 * z)

    def _vectors(self, rng, shape):
        if self.context_distribution == "uniform":
            return rng.uniform(-1.0, 1.0, size=(*shape, self._n_features))
        g = rng.standard_normal((*shape, self._n_features))
        return g / np.linalg.norm(g, axis=-1, keepdims=True)

    def _setup(self, rng):
        d = self._n_features
        self.theta_ = rng.uniform(-1.0, 1.0, size=d)
        self.Theta_ = rng.uniform(-1.0, 1.0, size=(d, d))
        self.pool_ = (
            None if self.n_vectors is None else self._vectors(rng, (self.n_vectors,))
        )

    def _draw(self, n_rounds, rng):
        if self.pool_ is None:
            X = self._vectors(rng, (n_rounds, self._n_actions))
        else:
            # K distinct pool vectors per round: the first K of a random order.
            keys = rng.random_sample((n_rounds, self.n_vectors))
            index = np.argpartition(keys, self._n_actions - 1, axis=1)
            X = self.pool_[index[:, : self._n_actions]]
        return X, expit(self.latent(X)), None

    def __repr__(self) -> str:
        return (
            f"NeuralLogisticBandit(reward={self.reward!r}, "
            f"n_actions={self.n_actions}, n_features={self.n_features}, "
            f"n_vectors={self.n_vectors})"
        )
