"""CN-UCB (Hwang, Chai, Oh, ICML 2023), Algorithm 1."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from skbandit._docstrings import Substitution, parameter_block
from skbandit.policies._core._neural_params import (
    ATTRIBUTES,
    CONSTRAINTS,
    NETWORK_PARAMETERS,
)
from skbandit.policies._core._slate import SLATE_CONSTRAINTS, SlatePolicyMixin
from skbandit.policies._slate._cn_base import CN_TEXTS, CombinatorialNeuralPolicy

__all__ = ["CNUCB"]

_OWN = ("slate_size", "oracle", "beta", "covariance", "anchor_penalty")


@Substitution(
    parameters=parameter_block(CN_TEXTS, ("n_actions", *_OWN, *NETWORK_PARAMETERS)),
    attributes=ATTRIBUTES,
)
class CNUCB(SlatePolicyMixin, CombinatorialNeuralPolicy):
    """Combinatorial neural UCB (Hwang, Chai, Oh, ICML 2023, Algorithm 1).

    Each round scores every arm by its upper confidence bound::

        u_i = f(x_i; theta_{t-1}) + gamma ||g(x_i; theta_{t-1}) / sqrt(m)||_{Z^{-1}}

    and the oracle plays the slate of the ``slate_size`` best. ``Z_0 =
    lambda I`` gains the gradients of every chosen arm at ``theta_{t-1}`` (one
    rank-``K`` update), then the network is trained on eq. (4), its penalty
    centred at ``theta_0``. The constant ``gamma`` (``beta``) stands for the
    theoretical ``gamma_t``, whose constants are unknown; the offset ``e_t`` is the
    same for every arm and leaves a top-``K`` slate unchanged, so it is omitted.

    Parameters
    ----------
    %(parameters)s

    Attributes
    ----------
    %(attributes)s
    covariance_ : ndarray of shape (p, p) or (p,)
        ``Z^{-1}``, or the inverse of ``Z``'s diagonal.

    See Also
    --------
    CNTS : Optimistic sampling instead of the upper bound.
    NeuralUCB : The single-arm algorithm on the same network.

    Notes
    -----
    ``predict_scores(X, return_std=True)`` returns ``f`` and the width
    ``||g / sqrt(m)||_{Z^{-1}}``; the index is ``f + beta * width``. The paper's
    experiments (its Figures 1-2) ran ``beta=1``, ``alpha=1``, ``train_every=10``,
    ``n_steps=100``, ``max_buffer_size=400``, ``learning_rate=0.01`` on the summed
    loss, with PyTorch's initialisation and no penalty gradient
    (``anchor_penalty=False``); see the paper's page in the documentation.

    Under the default online standardisation (``standardize``), ``Z`` gains the
    gradients of each round's rows as ``select`` scaled them (by the moments of the
    rows learned before the round), the rows the slate's widths came from; the
    replay buffer keeps the rows scaled prequentially (moments including the round).

    References
    ----------
    .. [1] Hwang, Chai, Oh. "Combinatorial Neural Bandits". ICML 2023,
       arXiv:2306.00242.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import CNUCB
    >>> X = np.random.RandomState(0).normal(size=(3, 6, 4))  # 6 arms per round
    >>> policy = CNUCB(slate_size=2, hidden_layer_sizes=(8,), random_state=0)
    >>> slates = policy.select(X)
    >>> slates.shape
    (3, 2)
    >>> policy = policy.partial_fit(X, slates, np.ones((3, 2)))
    >>> policy.predict_scores(X).shape
    (3, 6)
    """

    #: Algorithm 7 adds each observed slot's ``g g^T / m`` to ``Z`` unweighted and
    #: trains on the scores ``r / psi_k``, all with weight 1 (set here: the slate
    #: mixin, leftmost, would otherwise give its ``w_k^2``).
    _slot_weighted = False
    _parameter_constraints = {
        "n_actions": CONSTRAINTS["n_actions"],
        **SLATE_CONSTRAINTS,
        "beta": CONSTRAINTS["beta"],
        "covariance": CONSTRAINTS["covariance"],
        "anchor_penalty": ["boolean"],
        **{name: CONSTRAINTS[name] for name in NETWORK_PARAMETERS},
    }

    def __init__(
        self,
        n_actions=None,
        *,
        slate_size=4,
        oracle="topk",
        beta=1.0,
        covariance="full",
        anchor_penalty=True,
        hidden_layer_sizes=(100,),
        alpha=1.0,
        n_steps=50,
        learning_rate=0.3,
        batch_size=64,
        reduction="mean",
        init="default",
        mirror_inputs=False,
        standardize="auto",
        module=None,
        net=None,
        train_every=10,
        max_train_rounds=None,
        max_buffer_size=1000,
        warm_start=True,
        device="cpu",
        random_state=None,
        verbose=0,
    ):
        self.n_actions = n_actions
        self.slate_size = slate_size
        self.oracle = oracle
        self.beta = beta
        self.covariance = covariance
        self.anchor_penalty = anchor_penalty
        self.hidden_layer_sizes = hidden_layer_sizes
        self.alpha = alpha
        self.n_steps = n_steps
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.reduction = reduction
        self.init = init
        self.mirror_inputs = mirror_inputs
        self.standardize = standardize
        self.module = module
        self.net = net
        self.train_every = train_every
        self.max_train_rounds = max_train_rounds
        self.max_buffer_size = max_buffer_size
        self.warm_start = warm_start
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    def _scores(self, X, return_std):
        return self._mean_and_width(X, with_width=return_std)

    def _score_sampler(self, X):
        mean, width = self._mean_and_width(X)  # Algorithm 1's u_{t,i}
        ucb = mean + self.beta * width
        return lambda rng: ucb

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.policy_tags.stochastic_select = False
        return tags
