"""NeuralLog-UCB-1 and NeuralLog-UCB-2 (Bae and Lee, ICML 2025, Algorithms 1 and 2)."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math

from scipy.special import expit

from skbandit.policies._neural._logistic_base import (
    NeuralLogisticPolicy,
    R,
    logistic_docstring,
)
from skbandit.utils._tags import DeterministicSelectMixin

__all__ = ["NeuralLogUCB"]


@logistic_docstring()
class NeuralLogUCB(DeterministicSelectMixin, NeuralLogisticPolicy):
    """Neural logistic UCB (Bae and Lee, "Neural Logistic Bandits", ICML 2025).

    Rewards are Bernoulli with mean ``mu(h(x))``, ``mu`` the sigmoid; a network
    ``f(x; theta)`` learns the logit ``h`` on the binary cross-entropy with the
    penalty ``m lambda ||theta - c||^2 / 2`` (``c = theta_0`` in theory, ``c = 0`` in
    the experiments), and each round plays the arm with the largest upper
    confidence bound:

    * ``variant=1`` (NeuralLog-UCB-1, Algorithm 1), in probability space:
      ``mu(f(x; theta)) + nu R sqrt(kappa) w_{t-1} ||g(x)||_{V^-1}`` with the
      unweighted ``V = sum_i g_i g_i^T + kappa lambda I`` and ``R = 1/4``;
    * ``variant=2`` (NeuralLog-UCB-2, Algorithm 2), in logit space:
      ``f(x; theta) + nu w_{t-1} ||g(x)||_{W^-1}`` with
      ``W = sum_i mu'(f(x_i; theta_i)) g_i g_i^T + lambda I``; no ``kappa``.

    ``g`` is the gradient of the network at the parameters of the selection; each
    round enters the matrix with the gradient it was selected with, and (variant
    2) the variance the network, once trained on it, estimates for it; that weight
    is never recomputed. ``w_t`` is the width of the confidence set, grown with the
    effective dimension of the pulled arms and ``log(4 t^2 / delta)``.

    :meth:`predict_scores` is in probability space, as for every neural logistic
    policy: the mean ``mu(f(x; theta))`` and, with ``return_std=True``, the bonus
    in that space (variant 1's own; variant 2's logit-space bonus ``b`` carried
    there exactly, ``mu(f + b) - mu(f)``, so that ``mean + std`` orders the arms as
    the selection does).

    The defaults are the experiments' practical form (Section 7, App. A): one
    hidden layer of 20, diagonal matrices, the current gradient without the
    ``1 / sqrt(m)``, a fixed ``lambda``, the penalty centred at zero and an
    exploration multiplier ``nu``, 100 gradient steps at learning rate 0.01 every
    50 rounds. The theory's form is the preset ``confidence="theory"``
    (``gradient="init", normalize_gradient=True, mean="linearized",
    warm_start=False, penalty_center="init"``, with mirrored inputs, the default
    ``mirror_inputs="auto"``).

    Read more in :ref:`the paper's page <paper_neural_logistic>`.

    Parameters
    ----------
    %(parameters)s

    Attributes
    ----------
    %(attributes)s
    covariance_ : ndarray of shape (p,) or (p, p)
        ``V^{-1}`` (variant 1) or ``W^{-1}`` (variant 2) in units of ``g / s``
        (``s = sqrt(m)``), or the inverse of the diagonal.
    effective_dimension_ : float
        ``log det(I + R sum g g^T / lambda)`` over the pulled arms.
    confidence_width_ : float
        ``w_t``, the width the next selection uses before the factor ``nu``.
    regularization_ : float
        ``lambda_t``.

    See Also
    --------
    NeuralLogTS : Sampling instead of optimism, on the same state.
    NeuralUCB : The same exploration on the squared loss.
    GLMUCB : A linear logistic model.

    Notes
    -----
    Choices where the paper is ambiguous, each with its alternative as a parameter:
    the width's effective dimension divides by ``lambda`` (App. A prints
    ``log det(sum R g g^T + I)``; the same for ``lambda = 1``); variant 2's mean is
    the network's ``f`` (``mean="linearized"``: the theory's linearisation); the
    weights are taken after the round's own update (``variance_weights="block"``:
    after the training that closes its block). The objective is averaged over the
    buffer (``reduction="mean"``: the same minimiser as the printed sum, stable at
    the step 0.01).

    References
    ----------
    .. [1] Bae, Lee. "Neural Logistic Bandits". ICML 2025. arXiv:2505.02069.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import NeuralLogUCB
    >>> X = np.random.RandomState(0).uniform(-1, 1, size=(6, 3, 4))
    >>> policy = NeuralLogUCB(variant=2, n_steps=5, random_state=0)
    >>> a = policy.select(X)
    >>> policy = policy.partial_fit(X, a, np.array([1.0, 0, 1, 1, 0, 1]))
    >>> policy.predict_scores(X).shape
    (6, 3)
    """

    def _bonus_factor(self):
        # Variant 1: R turns the logit-space width into probability space, sqrt(kappa)
        # pays for V_t / kappa <= H_t(theta*) (Lemma 4.5).
        return R * math.sqrt(float(self.kappa)) if int(self.variant) == 1 else 1.0

    def _scores(self, X, return_std):
        logits, bonus = self._mean_and_width(X, with_width=return_std)
        mean = expit(logits)
        if bonus is None or int(self.variant) == 1:  # variant 1: probability space
            return mean, bonus
        # Variant 2's bonus lives in logit space: carried to probability space, it
        # is the optimistic probability minus the mean, the same space as the mean
        # (mu is increasing, so the index orders the arms as Algorithm 2 does).
        return mean, expit(logits + bonus) - mean

    def _score_sampler(self, X):
        logits, bonus = self._mean_and_width(X)
        if int(self.variant) == 1:  # probability space (Algorithm 1, line 2)
            ucb = expit(logits) + bonus
        else:
            ucb = logits + bonus  # logit space (Algorithm 2, line 2)
        return lambda rng: ucb
