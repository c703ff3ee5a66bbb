"""Neural baselines of paper 000: NeuralLinear and bootstrapped networks.

:class:`NeuralLinear` (Riquelme, Tucker, Snoek, ICLR 2018) keeps a Bayesian linear
regression on the *last hidden layer* ``h(x_k; theta)`` of the shared network core
(:class:`~skbandit.networks.BanditMLP`)::

    A = alpha I + sum_i w_i h_i h_i^T,    b = sum_i w_i r_i h_i,
    mu = A^{-1} b,    beta ~ N(mu, nu^2 A^{-1}),    score_k = h(x_k)^T beta

with ``h_i`` the pulled arm's features of every buffered round, recomputed at the
current network parameters after each update (the representation moves with
training). The network is trained by the core's routine (:class:`NeuralTS`'s).

:class:`NeuralBootstrap` (Osband et al. 2016; Riquelme et al. 2018) trains
``n_models`` networks, each on the rounds it keeps (probability ``bootstrap_prob``
per round and model, drawn when the round arrives); each round plays the greedy arm
of one model drawn uniformly.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import copy
from numbers import Integral, Real

import numpy as np
import torch
from skorch.utils import to_numpy

from skbandit.base import BasePolicy, greedy_proba, random_argmax
from skbandit.exceptions import NumericalError
from skbandit.networks import get_flat_parameters, set_flat_parameters
from skbandit.policies._neural import NeuralEpsilonGreedy, _BaseNeuralPolicy
from skbandit.utils._param_validation import Interval, StrOptions

__all__ = ["NeuralBootstrap", "NeuralLinear"]


def _last_hidden(module, X):
    """Last hidden layer ``h(x_k)`` of a :class:`BanditMLP`, shape (n, K, m_L).

    Equals the output-layer block of :func:`~skbandit.networks.tangent_features`.
    """
    z = module.first_layer(X)
    for layer in module.layers[1:-1]:
        z = layer(torch.relu(z))
    return torch.relu(z)


class NeuralLinear(_BaseNeuralPolicy):
    """Thompson sampling on a Bayesian linear head over the network's last layer.

    The network is trained as in :class:`NeuralTS`. Its last hidden layer
    ``h(x_k; theta)`` (width ``m_L``) feeds one Bayesian linear regression shared by
    the arms (shared contexts are arm-specific through the disjoint first layer):
    prior ``beta ~ N(0, nu^2 / alpha I)``, noise scale ``nu``, posterior
    ``N(A^{-1} b, nu^2 A^{-1})`` with ``A = alpha I + sum w h h^T`` and
    ``b = sum w r h`` over the replay buffer, recomputed at the current parameters
    after every update. Each round draws its own ``beta`` and plays
    ``argmax_k h(x_k)^T beta``.

    Parameters
    ----------
    n_actions : int or None, default=None
        Number of arms; ``None`` infers it in ``fit``.
    hidden_layer_sizes : tuple of int, default=(100,)
        Hidden widths; the regression runs on the last one.
    alpha : float, default=1.0
        Prior precision of the linear head, and the network's proximal penalty.
    nu : float, default=0.1
        Noise scale: the posterior covariance is ``nu^2 A^{-1}``. ``nu=0`` is greedy
        on the posterior mean.
    n_steps : int, default=100
        Gradient steps per training.
    learning_rate : float, default=1e-3
        SGD step.
    batch_size : int or None, default=None
        Rows per gradient step; ``None`` is full batch.
    reduction : {"mean", "sum"}, default="mean"
        Loss reduction.
    init : {"ntk", "default"}, default="ntk"
        Network parameterisation.
    train_every : int, default=1
        Train only when the rounds seen cross a multiple of this.
    max_train_rounds : int or None, default=None
        Ignore feedback after this many rounds.
    max_buffer_size : int or None, default=None
        Keep only the most recent rows (network and regression).
    warm_start : bool, default=True
        Start each training from the current parameters; ``False`` from ``theta_0``.
    device : str, default="cpu"
        Torch device of the network.
    random_state : int, RandomState instance or None, default=None
        Seeds ``theta_0``, the mini-batches and the posterior draws.
    verbose : int, default=0
        Print the objective after each training.

    Attributes
    ----------
    net_ : skorch.NeuralNetRegressor
        The network.
    theta0_ : ndarray of shape (n_parameters_,)
        The initial parameters.
    precision_ : ndarray of shape (m_L, m_L)
        ``A``.
    coef_ : ndarray of shape (m_L,)
        Posterior mean ``mu = A^{-1} b``.
    covariance_ : ndarray of shape (m_L, m_L)
        ``A^{-1}`` (the posterior covariance is ``nu^2`` times this).
    n_trainings_ : int
        Trainings run so far.
    n_actions_ : int
        Number of arms.
    n_features_in_ : int
        Number of context features.
    n_samples_seen_ : int
        Rounds of feedback seen.
    action_counts_ : ndarray of shape (n_actions_,)
        Feedback rounds per arm.

    See Also
    --------
    NeuralTS : Uncertainty over all layers' tangent features.

    References
    ----------
    .. [1] Riquelme, Tucker, Snoek. "Deep Bayesian Bandits Showdown". ICLR 2018.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import NeuralLinear
    >>> X = np.random.RandomState(0).normal(size=(8, 4))
    >>> policy = NeuralLinear(n_actions=3, hidden_layer_sizes=(8,), n_steps=5,
    ...                       random_state=0)
    >>> a = policy.select(X[:4])
    >>> policy = policy.partial_fit(X[:4], a, np.ones(4))
    >>> policy.predict_scores(X).shape
    (8, 3)
    """

    _tracks_covariance = False
    _parameter_constraints = {
        **_BaseNeuralPolicy._parameter_constraints,
        "nu": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(
        self,
        n_actions=None,
        *,
        hidden_layer_sizes=(100,),
        alpha=1.0,
        nu=0.1,
        n_steps=100,
        learning_rate=1e-3,
        batch_size=None,
        reduction="mean",
        init="ntk",
        train_every=1,
        max_train_rounds=None,
        max_buffer_size=None,
        warm_start=True,
        device="cpu",
        random_state=None,
        verbose=0,
    ):
        self.n_actions = n_actions
        self.hidden_layer_sizes = hidden_layer_sizes
        self.alpha = alpha
        self.nu = nu
        self.n_steps = n_steps
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.reduction = reduction
        self.init = init
        self.train_every = train_every
        self.max_train_rounds = max_train_rounds
        self.max_buffer_size = max_buffer_size
        self.warm_start = warm_start
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    # ----------------------------------------------------------------- state
    def _init_state(self):
        super()._init_state()
        self._set_posterior(*self._posterior())

    @property
    def covariance_(self):
        """``A^{-1}``, shape (m_L, m_L)."""
        return self._head_cov

    def _features(self, X):
        """Last-hidden features of every arm, float64 (n, K, m_L)."""
        with torch.no_grad():
            h = _last_hidden(self.net_.module_, self._tensor(X))
        return to_numpy(h).astype(np.float64)

    def _posterior(self):
        """``(A, mu, A^{-1}, cholesky(A^{-1}))`` on the buffer at current parameters."""
        n = self._buffer_X.shape[0]
        X = self._buffer_X
        if not self._per_arm_contexts or n == 0:
            H = self._features(X) if n else None
        else:  # buffered rows are the pulled arms' rows: score them as any arm
            H = self._features(X[:, None, :])
        if n:
            H = H[np.arange(n), self._buffer_actions if H.shape[1] > 1 else 0]
        m = self.net_.module_.layers[-1].weight.shape[1]
        A = float(self.alpha) * np.eye(m)
        b = np.zeros(m)
        if n:
            w = self._buffer_weights.astype(np.float64)
            A += (H * w[:, None]).T @ H
            b += H.T @ (w * self._buffer_rewards.astype(np.float64))
        if not (np.all(np.isfinite(A)) and np.all(np.isfinite(b))):
            raise NumericalError("Non-finite last-layer features; posterior unchanged.")
        L = np.linalg.cholesky(A)
        L_inv = np.linalg.solve(L, np.eye(m))
        cov = L_inv.T @ L_inv
        mu = cov @ b
        return A, mu, cov, L_inv.T  # cov = L_inv^T L_inv: a square root of cov

    def _set_posterior(self, A, mu, cov, root):
        self.precision_, self.coef_, self._head_cov, self._head_root = A, mu, cov, root

    # --------------------------------------------------------------- learning
    def _update(self, X, actions, rewards, sample_weight):
        module = self.net_.module_
        theta_before = get_flat_parameters(module).detach().clone()
        state = dict(self.__dict__)
        super()._update(X, actions, rewards, sample_weight)
        try:
            posterior = self._posterior()
        except BaseException:
            set_flat_parameters(module, theta_before)
            self.__dict__.clear()
            self.__dict__.update(state)
            raise
        self._set_posterior(*posterior)

    # --------------------------------------------------------------- deciding
    def _mean_std(self, H, return_std):
        mean = H @ self.coef_
        if not return_std:
            return mean, None
        q = np.einsum("nkm,ml,nkl->nk", H, self._head_cov, H)
        return mean, self.nu * np.sqrt(np.maximum(q, 0.0))

    def _scores(self, X, return_std):
        return self._mean_std(self._features(X), return_std)

    def _draw(self, H, rng):
        if self.nu == 0:
            return H @ self.coef_
        z = rng.standard_normal((H.shape[0], self.coef_.size))
        beta = self.coef_ + self.nu * z @ self._head_root.T  # (n, m) per-round draws
        return np.einsum("nkm,nm->nk", H, beta)

    def _sample_scores(self, X, rng):
        return self._draw(self._features(X), rng)

    def _action_proba(self, X, mask):
        H = self._features(X)  # the network evaluated once
        rng = np.random.default_rng(0)
        counts = np.zeros(H.shape[:2])
        rows = np.arange(X.shape[0])
        for _ in range(self._n_proba_draws):
            counts[rows, random_argmax(self._draw(H, rng), rng, mask)] += 1
        return counts / self._n_proba_draws

    @classmethod
    def _get_test_params(cls):
        return [
            {
                "n_actions": 3,
                "hidden_layer_sizes": (4,),
                "n_steps": 2,
                "learning_rate": 1e-6,  # sklearn checks feed X ~ N(100, 1)
                "random_state": 0,
            },
            {
                "hidden_layer_sizes": (4, 4),
                "n_steps": 2,
                "learning_rate": 1e-6,
                "nu": 0.5,
                "random_state": 1,
            },
        ]


class NeuralBootstrap(BasePolicy):
    """Bootstrapped neural networks (Osband et al. 2016; paper 000's BootstrapNN).

    ``n_models`` networks, each trained by the core routine (as in
    :class:`NeuralEpsilonGreedy` with ``epsilon=0``) on the rounds it keeps: each
    fed-back round is kept by each model with probability ``bootstrap_prob``, drawn
    from the policy's random state when the round arrives. Each selected round plays
    the greedy arm of one model drawn uniformly.

    Parameters
    ----------
    n_actions : int or None, default=None
        Number of arms; ``None`` infers it in ``fit``.
    n_models : int, default=10
        Number of networks. Paper 000: 10.
    bootstrap_prob : float, default=0.8
        Probability that a model keeps a round. Paper 000: 0.8.
    hidden_layer_sizes : tuple of int, default=(100,)
        Hidden widths of every network.
    alpha : float, default=1.0
        Strength of the proximal penalty.
    n_steps : int, default=100
        Gradient steps per training.
    learning_rate : float, default=1e-3
        SGD step.
    batch_size : int or None, default=None
        Rows per gradient step; ``None`` is full batch.
    reduction : {"mean", "sum"}, default="mean"
        Loss reduction.
    init : {"ntk", "default"}, default="ntk"
        Network parameterisation.
    warm_start : bool, default=True
        Start each training from the current parameters.
    device : str, default="cpu"
        Torch device of the networks.
    random_state : int, RandomState instance or None, default=None
        Seeds the networks, the kept masks and the model draws.
    verbose : int, default=0
        Print the objective after each training.

    Attributes
    ----------
    estimators_ : list of NeuralEpsilonGreedy
        The ``n_models`` networks (greedy policies).
    n_actions_ : int
        Number of arms.
    n_features_in_ : int
        Number of context features.
    n_samples_seen_ : int
        Rounds of feedback seen.
    action_counts_ : ndarray of shape (n_actions_,)
        Feedback rounds per arm.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import NeuralBootstrap
    >>> X = np.random.RandomState(0).normal(size=(5, 4))
    >>> NeuralBootstrap(n_actions=3, n_models=2, hidden_layer_sizes=(8,),
    ...                 random_state=0).select(X).shape
    (5,)
    """

    _context_dtype = np.float32
    _parameter_constraints: dict = {
        **BasePolicy._parameter_constraints,
        "n_models": [Interval(Integral, 1, None, closed="left")],
        "bootstrap_prob": [Interval(Real, 0, 1, closed="both")],
        "hidden_layer_sizes": [
            "array-like",
            Interval(Integral, 1, None, closed="left"),
        ],
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "n_steps": [Interval(Integral, 0, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left"), None],
        "reduction": [StrOptions({"mean", "sum"})],
        "init": [StrOptions({"ntk", "default"})],
        "warm_start": ["boolean"],
        "device": [str, torch.device],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        n_actions=None,
        *,
        n_models=10,
        bootstrap_prob=0.8,
        hidden_layer_sizes=(100,),
        alpha=1.0,
        n_steps=100,
        learning_rate=1e-3,
        batch_size=None,
        reduction="mean",
        init="ntk",
        warm_start=True,
        device="cpu",
        random_state=None,
        verbose=0,
    ):
        self.n_actions = n_actions
        self.n_models = n_models
        self.bootstrap_prob = bootstrap_prob
        self.hidden_layer_sizes = hidden_layer_sizes
        self.alpha = alpha
        self.n_steps = n_steps
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.reduction = reduction
        self.init = init
        self.warm_start = warm_start
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    def _init_state(self):
        d = self.n_features_in_
        shape = (0, self.n_actions_, d) if self._per_arm_contexts else (0, d)
        self.estimators_ = []
        for _ in range(self.n_models):
            sub = NeuralEpsilonGreedy(
                n_actions=self.n_actions_,
                hidden_layer_sizes=self.hidden_layer_sizes,
                alpha=self.alpha,
                epsilon=0.0,
                n_steps=self.n_steps,
                learning_rate=self.learning_rate,
                batch_size=self.batch_size,
                reduction=self.reduction,
                init=self.init,
                warm_start=self.warm_start,
                device=self.device,
                random_state=int(self._rng.integers(np.iinfo(np.int32).max)),
                verbose=self.verbose,
            )
            sub._validate_params()
            sub.n_features_in_ = d
            sub._initialize(np.empty(shape, np.float32), self.n_actions_)
            self.estimators_.append(sub)
        self.kept_counts_ = np.zeros(self.n_models, dtype=np.int64)

    def _update(self, X, actions, rewards, sample_weight):
        keep = self._rng.random((self.n_models, X.shape[0])) < self.bootstrap_prob
        new = []
        for sub, rows in zip(self.estimators_, keep, strict=True):
            if rows.any():
                sub = copy.deepcopy(sub)  # committed only if every model succeeds
                sub._update(
                    X[rows],
                    actions[rows],
                    rewards[rows],
                    None if sample_weight is None else sample_weight[rows],
                )
                sub.n_samples_seen_ += int(rows.sum())
                sub.action_counts_ = sub.action_counts_ + np.bincount(
                    actions[rows], minlength=self.n_actions_
                )
            new.append(sub)
        self.estimators_ = new
        self.kept_counts_ = self.kept_counts_ + keep.sum(axis=1)

    def _all_scores(self, X):
        return np.stack([sub._scores(X, False)[0] for sub in self.estimators_])

    def _scores(self, X, return_std):
        scores = self._all_scores(X)
        return scores.mean(0), (scores.std(0) if return_std else None)

    def _select(self, X, mask):
        models = self._rng.integers(self.n_models, size=X.shape[0])
        scores = self._all_scores(X)[models, np.arange(X.shape[0])]
        return random_argmax(scores, self._rng, mask)

    def _action_proba(self, X, mask):
        # Exact: the mean over models of each model's greedy distribution.
        return np.mean([greedy_proba(s, mask) for s in self._all_scores(X)], axis=0)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.policy_tags.exact_action_proba = True
        return tags

    @classmethod
    def _get_test_params(cls):
        return [
            {
                "n_actions": 3,
                "n_models": 2,
                "hidden_layer_sizes": (4,),
                "n_steps": 2,
                "learning_rate": 1e-6,  # sklearn checks feed X ~ N(100, 1)
                "random_state": 0,
            },
            {
                "n_models": 3,
                "hidden_layer_sizes": (4,),
                "n_steps": 2,
                "learning_rate": 1e-6,
                "bootstrap_prob": 0.5,
                "random_state": 1,
            },
        ]
