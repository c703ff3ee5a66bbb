"""Neural baselines of paper 000: NeuralLinear and bootstrapped networks.

:class:`NeuralLinear` (Riquelme, Tucker, Snoek, ICLR 2018) keeps a Bayesian linear
regression on the *last hidden layer* ``h(x_k; theta)`` of the shared network core
(:class:`~skbandit.networks.BanditMLP`)::

    A = alpha I + sum_i w_i h_i h_i^T,    b = sum_i w_i r_i h_i,
    mu = A^{-1} b,    beta ~ N(mu, nu^2 A^{-1}),    score_k = h(x_k)^T beta

with ``h_i`` the pulled arm's features of every buffered round. When an update trains
the network (the representation moves), ``A`` and ``b`` are recomputed over the whole
buffer at the new parameters; when it does not (``train_every > 1`` between trainings,
``n_steps=0``, ``learning_rate=0``), they gain only the new rows (and lose the rows
``max_buffer_size`` evicted): a rank-``B`` update, equal to the recomputation. The
features are evaluated in float64 from the float32 network, so that a row's features
do not depend on the rows batched with it. The network is trained by the core's
routine (:class:`NeuralTS`'s).

:class:`NeuralBootstrap` (Osband et al. 2016; Riquelme et al. 2018) trains
``n_models`` networks, each on the rounds it keeps (probability ``bootstrap_prob``
per round and model, drawn when the round arrives); each round plays the greedy arm
of one model drawn uniformly. Every model is a core network
(:class:`NeuralEpsilonGreedy` with ``epsilon=0``) fed through its own ``partial_fit``;
the policy runs the core's schedule (``train_every``, ``max_train_rounds``) on its own
rounds, so that all the models train, and freeze, together.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import copy
from numbers import Integral, Real

import numpy as np
import torch
from scipy.linalg import solve_triangular
from skorch.utils import to_numpy

from skbandit.base import BasePolicy, greedy_proba, random_argmax
from skbandit.exceptions import NumericalError
from skbandit.networks import BanditMLP, get_flat_parameters, set_flat_parameters
from skbandit.policies._neural import NeuralEpsilonGreedy, _BaseNeuralPolicy
from skbandit.utils._param_validation import Interval

__all__ = ["NeuralBootstrap", "NeuralLinear"]

#: The core's replay buffer: contexts of the pulled arms, actions, rewards, weights.
_BUFFER_KEYS = ("_buffer_X", "_buffer_actions", "_buffer_rewards", "_buffer_weights")


# ------------------------------------------------------------ the core's schedule
# The same rules as _BaseNeuralPolicy._update (BasePolicy._learnable does the cut).
def _n_learnable(policy, n):
    """Rows of an ``n``-row update that are learnt from."""
    return policy._learnable(n)


def _train_due(policy, n):
    """Whether an update of ``n`` learnt rows trains: the rounds seen cross a
    multiple of ``train_every``."""
    seen = policy.n_samples_seen_
    return (seen + n) // policy.train_every > seen // policy.train_every


# ------------------------------------------------------- last-hidden features
def _last_hidden(module, X):
    """Last hidden layer ``h(x_k)`` of a :class:`BanditMLP`, shape (n, K, m_L).

    Equals the output-layer block of :func:`~skbandit.networks.tangent_features`.
    """
    z = module.first_layer(X)
    for layer in module.layers[1:-1]:
        z = layer(torch.relu(z))
    return torch.relu(z)


def _pulled_hidden(module, X, actions):
    """Last hidden layer of the pulled arms only, shape (n, m_L), for a disjoint
    :class:`BanditMLP` on shared contexts: one GEMM per arm block, not ``K`` per row.
    """
    first = module.layers[0]
    m = first.weight.shape[0]
    W = first.weight.view(m, module.n_actions, module.n_features)
    z = X.new_empty((X.shape[0], m))
    for k in torch.unique(actions).tolist():
        rows = torch.nonzero(actions == k)[:, 0]
        z[rows] = X[rows] @ W[:, k, :].T
    if first.bias is not None:
        z = z + first.bias
    for layer in module.layers[1:-1]:
        z = layer(torch.relu(z))
    return torch.relu(z)


def _hidden_features(module, X, n_arms):
    """Last hidden layer of any module, shape (n, n_arms, m).

    A :class:`BanditMLP` is read directly; another module's is the input of its last
    registered ``nn.Linear`` layer, which must hold ``m`` features per arm.
    """
    if isinstance(module, BanditMLP):
        return _last_hidden(module, X)
    linear = [m for m in module.modules() if isinstance(m, torch.nn.Linear)]
    if not linear:
        raise ValueError(
            "NeuralLinear regresses on the input of the network's last nn.Linear "
            f"layer; {type(module).__name__} has none."
        )
    seen = []
    handle = linear[-1].register_forward_pre_hook(lambda _, args: seen.append(args[0]))
    try:
        module(X)
    finally:
        handle.remove()
    h = seen[-1] if seen else None
    n = X.shape[0]
    if h is None or h.shape[-1] == 0 or h.numel() != n * n_arms * h.shape[-1]:
        shape = "nothing (the layer was not called)" if h is None else tuple(h.shape)
        raise ValueError(
            "NeuralLinear needs one feature vector per arm at the input of the "
            f"network's last nn.Linear layer ({n} rows x {n_arms} arms x m); "
            f"{type(module).__name__} gives {shape}."
        )
    return h.reshape(n, n_arms, -1)


class NeuralLinear(_BaseNeuralPolicy):
    """Thompson sampling on a Bayesian linear head over the network's last layer.

    The network is trained as in :class:`NeuralTS`. Its last hidden layer
    ``h(x_k; theta)`` (width ``m_L``) feeds one Bayesian linear regression shared by
    the arms (shared contexts are arm-specific through the disjoint first layer):
    prior ``beta ~ N(0, nu^2 / alpha I)``, noise scale ``nu``, posterior
    ``N(A^{-1} b, nu^2 A^{-1})`` with ``A = alpha I + sum w h h^T`` and
    ``b = sum w r h`` over the replay buffer, at the current parameters. An update
    that trains the network recomputes ``A`` and ``b`` over the whole buffer; one
    that does not (between trainings with ``train_every > 1``, or ``n_steps=0``)
    adds only its own rows, and removes those ``max_buffer_size`` evicted. Each
    round draws its own ``beta`` and plays ``argmax_k h(x_k)^T beta``.

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
        Gradient steps per training. ``0`` never moves the network: the
        regression then runs on the features of ``theta_0``.
    learning_rate : float, default=1e-3
        SGD step.
    batch_size : int or None, default=None
        Rows per gradient step; ``None`` is full batch.
    reduction : {"mean", "sum"}, default="mean"
        Loss reduction.
    init : {"ntk", "default"}, default="ntk"
        Network parameterisation, see :class:`NeuralTS`.
    module : torch.nn.Module class or instance, default=None
        Your own network instead of the papers' (contract of :class:`NeuralTS`).
        The regression runs on the input of its last registered ``nn.Linear``
        layer, which must hold one vector per arm, e.g. ``(n, K, m)``.
    net : skorch.NeuralNet, default=None
        A whole skorch net (its module, same contract, and its optimizer), see
        :class:`NeuralTS`.
    train_every : int, default=1
        Train only when the rounds seen cross a multiple of this. In between, the
        posterior is still updated on every feedback (incrementally).
    max_train_rounds : int or None, default=None
        Ignore feedback after this many rounds: the network and the posterior
        freeze (the paper's experiments stop at 1000). ``None`` learns forever.
    max_buffer_size : int or None, default=None
        Keep only the most recent rows, for the network and the regression alike;
        ``None`` keeps all (the paper).
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
    n_parameters_ : int
        Number of network parameters.
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
        module=None,
        net=None,
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
        self.module = module
        self.net = net
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
        K, d = self.n_actions_, self.n_features_in_
        probe = np.zeros((1, K, d) if self._per_arm_contexts else (1, d), np.float32)
        self._head_dim = self._features(probe).shape[-1]  # checks a custom module
        self._set_posterior(self._posterior())

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_head_cache", None)  # a float64 copy of the network: rebuilt
        return state

    @property
    def covariance_(self):
        """``A^{-1}``, shape (m_L, m_L)."""
        return self._head_cov

    def _head_net(self):
        """The network in float64, rebuilt whenever it was trained."""
        module = self.net_.module_
        cache = getattr(self, "_head_cache", None)
        if cache is None or cache[0] is not module or cache[1] != self.n_trainings_:
            net64 = copy.deepcopy(module)
            net64.zero_grad(set_to_none=True)
            net64 = net64.to(torch.float64).requires_grad_(False)
            cache = self._head_cache = (module, self.n_trainings_, net64)
        return cache[2]

    def _features(self, X):
        """Last-hidden features of every arm, float64 (n, K, m_L).

        Evaluated in float64 (from the float32 parameters and contexts), so that a
        row's features are the same whichever rows it is batched with: the
        incremental posterior then equals the recomputed one to float64 rounding.
        """
        net64 = self._head_net()
        X = np.asarray(X, dtype=np.float64)
        n_arms = X.shape[1] if X.ndim == 3 else self.n_actions_
        with torch.no_grad():
            h = _hidden_features(net64, self._tensor(X), n_arms)
        return to_numpy(h)

    def _pulled_features(self, X, actions):
        """Features of buffered rows (the pulled arms' contexts), float64 (n, m_L)."""
        if self._per_arm_contexts:  # score each row as the only arm
            return self._features(X[:, None, :])[:, 0]
        net64 = self._head_net()
        if not (isinstance(net64, BanditMLP) and net64.disjoint):
            return self._features(X)[np.arange(X.shape[0]), actions]
        with torch.no_grad():
            h = _pulled_hidden(
                net64,
                self._tensor(np.asarray(X, dtype=np.float64)),
                torch.as_tensor(actions, device=self._device),
            )
        return to_numpy(h)

    def _head_stats(self, X, actions, rewards, weights):
        """``(sum w h h^T, sum w r h)`` of buffered rows at the current parameters."""
        H = self._pulled_features(X, actions)
        w = weights.astype(np.float64)
        return (H * w[:, None]).T @ H, H.T @ (w * rewards.astype(np.float64))

    def _posterior(self):
        """The posterior recomputed over the whole buffer at the current parameters.

        Returns ``(A, b, mu, A^{-1}, a square root of A^{-1})``.
        """
        m = self._head_dim
        A, b = float(self.alpha) * np.eye(m), np.zeros(m)
        if self._buffer_X.shape[0]:
            dA, db = self._head_stats(*self._buffered_rows())
            A, b = A + dA, b + db
        return self._factor(A, b)

    def _posterior_update(self, old_buffer, n_new):
        """The posterior after an update that left the network as it was.

        ``A`` and ``b`` gain the ``n_new`` rows just buffered and lose the rows the
        buffer evicted (the oldest of ``old_buffer``): ``O((n_new + evicted) m^2)``
        instead of ``O(buffer m^2)``, and the same result up to float64 rounding.
        """
        buffer = self._buffered_rows()
        n_old, n_now = old_buffer[0].shape[0], buffer[0].shape[0]
        n_new = min(n_new, n_now)
        if n_new == n_now or float(self.alpha) != self._head_alpha:
            return self._posterior()  # nothing of the old sums survives
        dA, db = self._head_stats(*(a[n_now - n_new :] for a in buffer))
        A, b = self.precision_ + dA, self._head_b + db
        evicted = n_old + n_new - n_now
        if evicted:
            dA, db = self._head_stats(*(a[:evicted] for a in old_buffer))
            A, b = A - dA, b - db
        return self._factor(A, b)

    def _buffered_rows(self):
        return tuple(getattr(self, k) for k in _BUFFER_KEYS)

    def _factor(self, A, b):
        if not (np.all(np.isfinite(A)) and np.all(np.isfinite(b))):
            raise NumericalError("Non-finite last-layer features; posterior unchanged.")
        try:
            L = np.linalg.cholesky(A)
        except np.linalg.LinAlgError as exc:
            raise NumericalError(
                "The last-layer precision A is not positive definite; posterior "
                "unchanged. Increase alpha."
            ) from exc
        L_inv = solve_triangular(L, np.eye(A.shape[0]), lower=True)
        cov = L_inv.T @ L_inv
        return A, b, cov @ b, cov, L_inv.T  # cov = L_inv^T L_inv: a square root

    def _set_posterior(self, posterior):
        A, b, mu, cov, root = posterior
        self.precision_, self.coef_, self._head_cov, self._head_root = A, mu, cov, root
        self._head_b, self._head_alpha = b, float(self.alpha)

    # --------------------------------------------------------------- learning
    def _update(self, X, actions, rewards, sample_weight):
        n_new = _n_learnable(self, X.shape[0])
        if n_new == 0:  # after max_train_rounds: the core ignores it, and so do we
            return
        module = self.net_.module_
        theta_before = get_flat_parameters(module).detach().clone()
        state = dict(self.__dict__)
        super()._update(X, actions, rewards, sample_weight)
        try:
            if torch.equal(get_flat_parameters(module), theta_before):
                posterior = self._posterior_update(
                    tuple(state[k] for k in _BUFFER_KEYS), n_new
                )
            else:  # the representation moved: every row's features changed
                posterior = self._posterior()
        except BaseException:
            set_flat_parameters(module, theta_before)
            self.__dict__.clear()
            self.__dict__.update(state)
            raise
        self._set_posterior(posterior)

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
                "train_every": 3,  # the incremental posterior between trainings
                "max_buffer_size": 40,
                "random_state": 1,
            },
        ]


class NeuralBootstrap(BasePolicy):
    """Bootstrapped neural networks (Osband et al. 2016; paper 000's BootstrapNN).

    ``n_models`` networks, each trained by the core routine (as in
    :class:`NeuralEpsilonGreedy` with ``epsilon=0``) on the rounds it keeps: each
    fed-back round is kept by each model with probability ``bootstrap_prob``, drawn
    from the policy's random state when the round arrives. Each selected round plays
    the greedy arm of one model drawn uniformly. The training schedule is the core's,
    counted in the policy's rounds: every model trains (on the rows it kept so far)
    when the rounds seen cross a multiple of ``train_every``, and they all freeze
    after ``max_train_rounds`` rounds.

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
        Network parameterisation, see :class:`NeuralTS`.
    module : torch.nn.Module class or instance, default=None
        Your own network instead of the papers' (contract of :class:`NeuralTS`).
        A class is instantiated once per model, under the model's own seed; an
        instance is copied, so every model starts from the same weights.
    net : skorch.NeuralNet, default=None
        A whole skorch net (its module, same contract, and its optimizer), cloned
        for every model; see :class:`NeuralTS`.
    train_every : int, default=1
        Train the models only when the policy's rounds seen cross a multiple of
        this (paper 000's delay experiment). The rows kept in between wait for the
        next training; a model that kept none since its last training skips it.
    max_train_rounds : int or None, default=None
        Ignore feedback after this many rounds of the policy: every network
        freezes (the paper's experiments stop at 1000). ``None`` learns forever.
    max_buffer_size : int or None, default=None
        Keep only each model's most recent kept rows for training; ``None`` keeps
        all (the paper).
    warm_start : bool, default=True
        Start each training from the current parameters; ``False`` from ``theta_0``.
    device : str, default="cpu"
        Torch device of the networks.
    random_state : int, RandomState instance or None, default=None
        Seeds the networks, the kept masks and the model draws.
    verbose : int, default=0
        Print the objective after each training of each model.

    Attributes
    ----------
    estimators_ : list of NeuralEpsilonGreedy
        The ``n_models`` networks (greedy policies); each one's ``n_samples_seen_``
        counts the rows it has learnt from.
    kept_counts_ : ndarray of shape (n_models,)
        Rounds each model kept, including those waiting for the next training.
    n_trainings_ : int
        Updates at which training was due (``train_every``); each model's own
        ``n_trainings_`` counts those at which it had new rows to learn.
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
    NeuralEpsilonGreedy : One network, exploring uniformly.
    NeuralTS : Exploration from the network's tangent features.

    References
    ----------
    .. [1] Osband, Blundell, Pritzel, Van Roy. "Deep Exploration via Bootstrapped
       DQN". NeurIPS 2016.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import NeuralBootstrap
    >>> X = np.random.RandomState(0).normal(size=(5, 4))
    >>> NeuralBootstrap(n_actions=3, n_models=2, hidden_layer_sizes=(8,),
    ...                 random_state=0).select(X).shape
    (5,)
    """

    _context_dtype = _BaseNeuralPolicy._context_dtype
    _parameter_constraints: dict = {
        **_BaseNeuralPolicy._parameter_constraints,
        "n_models": [Interval(Integral, 1, None, closed="left")],
        "bootstrap_prob": [Interval(Real, 0, 1, closed="both")],
    }
    #: Parameters a model keeps from its construction (its network and its seed);
    #: the others follow ``set_params`` on the policy at the next training.
    _structural = frozenset(
        {
            "n_actions",
            "hidden_layer_sizes",
            "init",
            "module",
            "net",
            "device",
            "random_state",
        }
    )

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
        module=None,
        net=None,
        train_every=1,
        max_train_rounds=None,
        max_buffer_size=None,
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
        self.module = module
        self.net = net
        self.train_every = train_every
        self.max_train_rounds = max_train_rounds
        self.max_buffer_size = max_buffer_size
        self.warm_start = warm_start
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    def _model_params(self):
        """A model's parameters: the policy's, with the schedule left to the policy
        (a model trains on every ``partial_fit`` it gets) and greedy selection."""
        names = NeuralEpsilonGreedy._get_param_names()
        params = {k: v for k, v in self.get_params(deep=False).items() if k in names}
        params.update(
            n_actions=self.n_actions_, epsilon=0.0, train_every=1, max_train_rounds=None
        )
        return params

    def _init_state(self):
        d = self.n_features_in_
        shape = (0, self.n_actions_, d) if self._per_arm_contexts else (0, d)
        params = self._model_params()
        self.estimators_ = []
        for _ in range(self.n_models):
            seed = int(self._rng.integers(np.iinfo(np.int32).max))
            sub = NeuralEpsilonGreedy(**{**params, "random_state": seed})
            sub._validate_params()
            sub.n_features_in_ = d
            sub._initialize(np.empty(shape, np.float32), self.n_actions_)
            self.estimators_.append(sub)
        empty = (
            np.empty(shape, np.float32),
            np.empty(0, np.int64),
            np.empty(0, np.float64),
            np.empty(0, np.float64),
        )
        self._waiting = [empty] * self.n_models  # kept rows not yet learnt from
        self.kept_counts_ = np.zeros(self.n_models, dtype=np.int64)
        self.n_trainings_ = 0

    def _update(self, X, actions, rewards, sample_weight):
        n = _n_learnable(self, X.shape[0])
        if n == 0:  # after max_train_rounds: ignored, as by the core
            return
        rows = (
            X[:n],
            actions[:n],
            rewards[:n],
            np.ones(n) if sample_weight is None else sample_weight[:n],
        )
        keep = self._rng.random((self.n_models, n)) < self.bootstrap_prob
        # A model's buffer keeps its last max_buffer_size rows: so may its queue.
        start = -self.max_buffer_size if self.max_buffer_size else 0
        waiting = [
            tuple(
                np.concatenate([old, new[kept]])[start:]
                for old, new in zip(queue, rows, strict=True)
            )
            for queue, kept in zip(self._waiting, keep, strict=True)
        ]
        estimators = self.estimators_
        trained = _train_due(self, n)
        if trained:
            estimators, waiting = self._train_models(waiting)
        self.estimators_, self._waiting = estimators, waiting
        self.kept_counts_ = self.kept_counts_ + keep.sum(axis=1)
        self.n_trainings_ += int(trained)

    def _train_models(self, waiting):
        """Feed every model its waiting rows, through the core's ``partial_fit``.

        Works on copies, committed by the caller only once every model succeeded.
        """
        live = {
            k: v for k, v in self._model_params().items() if k not in self._structural
        }
        estimators, left = [], []
        for sub, queue in zip(self.estimators_, waiting, strict=True):
            if queue[0].shape[0]:
                sub = copy.deepcopy(sub).set_params(**live)
                X, actions, rewards, weights = queue
                sub.partial_fit(X, actions, rewards, sample_weight=weights)
                queue = tuple(a[:0] for a in queue)
            estimators.append(sub)
            left.append(queue)
        return estimators, left

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
                "train_every": 3,
                "max_buffer_size": 40,
                "random_state": 1,
            },
        ]
