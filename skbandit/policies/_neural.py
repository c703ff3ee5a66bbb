"""Neural bandits on one shared network: NeuralTS, NeuralUCB and neural epsilon-greedy.

Paper 000 (Zhang, Zhou, Li, Gu. "Neural Thompson Sampling", ICLR 2021), Algorithm 1,
and its NeuralUCB baseline (Zhou, Li, Gu. "Neural contextual bandits with UCB-based
exploration", ICML 2020). One network ``f(x; theta)`` scores every arm from that arm's
context; shared contexts ``(n, d)`` use the disjoint encoding, applied per arm block
(:class:`~skbandit.networks.BanditMLP`). The exploration width of arm ``k`` is::

    sigma^2 = alpha * phi^T U^{-1} phi,    phi = g(x_k; theta) / sqrt(m),
    U_0 = alpha I,    U += w phi(x_{i, a_i}) phi(x_{i, a_i})^T   per fed-back round

(``covariance="diag"`` keeps the diagonal of ``U`` only, as the experiments did;
``"full"`` keeps ``U^{-1}`` exactly, by Sherman-Morrison-Woodbury updates). Training
is ``n_steps`` gradient steps on (2.3) over the replay buffer, centred at
``theta_0``, driven directly on the skorch net's module and optimizer.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import torch
from skorch import NeuralNet
from skorch.utils import to_numpy, to_tensor

from skbandit.base import BasePolicy, greedy_proba, random_argmax
from skbandit.exceptions import NumericalError
from skbandit.networks import (
    get_flat_parameters,
    initialize_net,
    make_bandit_net,
    proximal_gradient_descent,
    set_flat_parameters,
    tangent_features,
    tangent_quadratic,
    tangent_square_sum,
)
from skbandit.utils._param_validation import Interval, StrOptions

__all__ = ["NeuralEpsilonGreedy", "NeuralTS", "NeuralUCB"]

#: Largest parameter count for ``covariance="full"`` (a p x p float64 inverse, 2 GiB).
_MAX_FULL_PARAMS = 16384


def _move_net(net, device):
    """Move a skorch net's module and optimizer state in place, not re-initialising."""
    net.module_.to(device)
    for state in net.optimizer_.state.values():
        for key, value in state.items():
            if isinstance(value, torch.Tensor):
                state[key] = value.to(device)
    net.device = str(device)


class _BaseNeuralPolicy(BasePolicy):
    """Network, replay buffer and training shared by the neural policies.

    Subclasses set ``_tracks_covariance`` and ``_covariance_before_training``.
    """

    _context_dtype = np.float32
    #: Whether the policy keeps ``U`` (the gradient-feature precision).
    _tracks_covariance = True
    #: Update ``U`` at ``theta_{t-1}`` before training (NeuralUCB) or at ``theta_t``
    #: after it (NeuralTS, Algorithm 1 line 10).
    _covariance_before_training = False

    _parameter_constraints: dict = {
        **BasePolicy._parameter_constraints,
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
        "module": [None, callable, torch.nn.Module],
        "net": [None, NeuralNet],
        "train_every": [Interval(Integral, 1, None, closed="left")],
        "max_train_rounds": [Interval(Integral, 0, None, closed="left"), None],
        "max_buffer_size": [Interval(Integral, 1, None, closed="left"), None],
        "warm_start": ["boolean"],
        "device": [str, torch.device],
        "verbose": ["verbose"],
    }

    # ----------------------------------------------------------------- state
    def _init_state(self):
        widths = tuple(int(m) for m in np.atleast_1d(self.hidden_layer_sizes))
        if not widths or min(widths) < 1:
            raise ValueError(
                "hidden_layer_sizes must be a non-empty sequence of positive ints; got "
                f"{self.hidden_layer_sizes!r}."
            )
        seed = int(self._rng.integers(np.iinfo(np.int32).max))
        self.net_ = initialize_net(
            make_bandit_net(
                self.n_features_in_,
                self.n_actions_,
                hidden_layer_sizes=widths,
                init=self.init,
                disjoint=not self._per_arm_contexts,
                learning_rate=self.learning_rate,
                n_steps=self.n_steps,
                batch_size=self.batch_size,
                reduction=self.reduction,
                device=self.device,
                verbose=self.verbose,
                module=self.module,
                net=self.net,
            ),
            seed,
        )
        self.theta0_ = to_numpy(get_flat_parameters(self.net_.module_))
        p = self.theta0_.size
        if self._tracks_covariance:
            if getattr(self, "covariance", "diag") == "full":
                if p > _MAX_FULL_PARAMS:
                    raise ValueError(
                        f'covariance="full" keeps a p x p matrix; this network has '
                        f"p={p} parameters (limit {_MAX_FULL_PARAMS}). Use "
                        'covariance="diag" (as paper 000\'s experiments do) or a '
                        "smaller network."
                    )
                self._covariance = np.eye(p) / self.alpha  # U^{-1}
            else:
                self._precision = np.full(p, float(self.alpha))  # diag(U)
        d = self.n_features_in_
        self._buffer_X = np.empty((0, d), dtype=np.float32)
        self._buffer_actions = np.empty(0, dtype=np.int64)
        self._buffer_rewards = np.empty(0, dtype=np.float32)
        self._buffer_weights = np.empty(0, dtype=np.float32)
        self._train_rng = np.random.default_rng(seed)
        self.n_trainings_ = 0
        self._torch_cache = None

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_torch_cache", None)  # device tensors: rebuilt on demand
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        self._torch_cache = None

    @property
    def n_parameters_(self):
        """Number ``p`` of network parameters (the length of the tangent features)."""
        return self.theta0_.size

    @property
    def covariance_(self):
        """``U^{-1}`` (``"full"``, shape (p, p)) or its diagonal approximation (p,)."""
        if hasattr(self, "_covariance"):
            return self._covariance
        return 1.0 / self._precision

    # ------------------------------------------------------------- torch side
    @property
    def _device(self):
        """The device to compute on, moving the network there if ``device`` changed.

        ``set_params(device=...)`` on a fitted policy takes effect here. A policy
        asking for CUDA on a machine without it (a GPU-fitted pickle loaded on a CPU
        server, which skorch maps to the CPU) computes on the CPU.
        """
        wanted = torch.device(self.device)
        if wanted.type == "cuda" and not torch.cuda.is_available():
            wanted = torch.device("cpu")
        current = next(self.net_.module_.parameters()).device
        if current != wanted:
            _move_net(self.net_, wanted)
            self._torch_cache = None
        return wanted

    def _tensor(self, X):
        return to_tensor(np.ascontiguousarray(X), device=self._device)

    def _torch_state(self):
        """Device copies of theta_0 and ``U^{-1}``, kept until they change.

        ``theta_0`` never changes, so only a move to another device drops it; ``U``
        changes with every update, which drops the ``"cov"``/``"inv_u"`` entry alone.
        """
        cache = getattr(self, "_torch_cache", None)
        if cache is None:
            cache = self._torch_cache = {}
        if "theta0" not in cache:
            cache["theta0"] = [
                self._tensor(t).view_as(p)
                for t, p in zip(
                    np.split(self.theta0_, np.cumsum(self._param_sizes())[:-1]),
                    self.net_.module_.parameters(),
                    strict=True,
                )
            ]
        if hasattr(self, "_covariance"):
            if "cov" not in cache:
                cache["cov"] = self._tensor(self._covariance.astype(np.float32))
        elif hasattr(self, "_precision") and "inv_u" not in cache:
            cache["inv_u"] = self._tensor((1.0 / self._precision).astype(np.float32))
        return cache

    def _param_sizes(self):
        return [p.numel() for p in self.net_.module_.parameters()]

    # --------------------------------------------------------------- learning
    def _update(self, X, actions, rewards, sample_weight):
        keep = self._learnable(X.shape[0])  # paper 000 stops training (and U) at 1000
        if keep == 0:
            return
        if keep < X.shape[0]:
            X, actions, rewards = X[:keep], actions[:keep], rewards[:keep]
            sample_weight = None if sample_weight is None else sample_weight[:keep]
        module = self.net_.module_
        theta_before = get_flat_parameters(module)
        try:
            Xt = self._tensor(X)
            at = torch.as_tensor(actions, device=self._device)
            wt = (
                None
                if sample_weight is None
                else self._tensor(sample_weight.astype(np.float32))
            )
            new_cov = None
            if self._tracks_covariance and self._covariance_before_training:
                new_cov = self._covariance_update(Xt, at, wt)
            buffer = self._grown_buffer(X, actions, rewards, sample_weight)
            seen = self.n_samples_seen_
            trained = (seen + X.shape[0]) // self.train_every > seen // self.train_every
            if trained:
                loss = self._train(*buffer)
                if self.verbose:
                    print(
                        f"[{type(self).__name__}] round {seen + X.shape[0]}: "
                        f"objective {loss:.6g} on {buffer[0].shape[0]} rows"
                    )
            if self._tracks_covariance and not self._covariance_before_training:
                new_cov = self._covariance_update(Xt, at, wt)
        except BaseException:
            set_flat_parameters(module, theta_before)
            raise
        # Nothing can fail past this point: commit.
        (
            self._buffer_X,
            self._buffer_actions,
            self._buffer_rewards,
            self._buffer_weights,
        ) = buffer
        self.n_trainings_ += int(trained)
        if new_cov is not None:
            setattr(self, *new_cov)
            for key in ("cov", "inv_u"):  # U changed; theta_0 did not
                (self._torch_cache or {}).pop(key, None)

    def _grown_buffer(self, X, actions, rewards, sample_weight):
        w = np.ones(X.shape[0], np.float32) if sample_weight is None else sample_weight
        rows = self._chosen_features(X, actions)
        parts = [
            np.concatenate([self._buffer_X, rows]),
            np.concatenate([self._buffer_actions, actions]),
            np.concatenate([self._buffer_rewards, rewards.astype(np.float32)]),
            np.concatenate([self._buffer_weights, w.astype(np.float32)]),
        ]
        if self.max_buffer_size is not None:
            parts = [a[-self.max_buffer_size :] for a in parts]
        return tuple(parts)

    def _train(self, X, actions, rewards, weights):
        # Parameters changed by set_params since the net was built take effect now.
        if (self.net_.lr, self.net_.criterion_.reduction) != (
            self.learning_rate,
            self.reduction,
        ):
            self.net_.set_params(
                lr=self.learning_rate, criterion__reduction=self.reduction
            )
        module = self.net_.module_
        state = self._torch_state()
        if not self.warm_start:  # restart from theta_0, as the theory does
            set_flat_parameters(
                module, torch.cat([t.reshape(-1) for t in state["theta0"]])
            )
        X, actions = self._tensor(X), torch.as_tensor(actions, device=self._device)
        if self._per_arm_contexts:
            # The buffer keeps the pulled arm's vector only: present it as the one
            # arm of an (n, 1, d) context, so any module scores it as it would in
            # select.
            X, actions = X[:, None, :], torch.zeros_like(actions)
        return proximal_gradient_descent(
            self.net_,
            X,
            actions,
            self._tensor(rewards),
            None if np.all(weights == 1) else self._tensor(weights),
            state["theta0"],
            alpha=float(self.alpha),
            n_steps=self.n_steps,
            batch_size=self.batch_size,
            rng=self._train_rng,
        )

    def _covariance_update(self, X, actions, weights):
        """New ``U`` state after adding the pulled arms' features at the current theta.

        Returns ``(attribute_name, new_value)``; raises before committing anything.
        """
        module = self.net_.module_
        if hasattr(self, "_precision"):
            inc = to_numpy(tangent_square_sum(module, X, actions, weights))
            new = self._precision + inc.astype(np.float64)
            if not np.all(np.isfinite(new)):
                raise NumericalError("Non-finite gradient features; U was not updated.")
            return "_precision", new
        _, phi = tangent_features(module, X)
        rows = torch.arange(X.shape[0], device=X.device)
        Phi = to_numpy(phi[rows, actions]).astype(np.float64)  # (n, p)
        w = (
            np.ones(Phi.shape[0])
            if weights is None
            else to_numpy(weights).astype(float)
        )
        keep = w > 0
        Phi, w = Phi[keep], w[keep]
        cov = self._covariance
        for start in range(0, Phi.shape[0], 256):  # Woodbury, 256 rows at a time
            P, wc = Phi[start : start + 256], w[start : start + 256]
            CP = cov @ P.T  # (p, b)
            inner = np.diag(1.0 / wc) + P @ CP
            cov = cov - CP @ np.linalg.solve(inner, CP.T)
        cov = (cov + cov.T) / 2
        if not np.all(np.isfinite(cov)):
            raise NumericalError("Non-finite gradient features; U was not updated.")
        return "_covariance", cov

    # --------------------------------------------------------------- deciding
    def _mean_and_sigma(self, X, with_sigma=True):
        """Network outputs and ``sigma = sqrt(alpha phi^T U^{-1} phi)`` per arm."""
        module = self.net_.module_
        Xt = self._tensor(X)
        with torch.no_grad():
            if not (with_sigma and self._tracks_covariance):
                return to_numpy(module(Xt)).astype(np.float64), None
            state = self._torch_state()
            if "inv_u" in state:
                f, q = tangent_quadratic(module, Xt, state["inv_u"])
            else:
                f, phi = tangent_features(module, Xt)
                q = ((phi @ state["cov"]) * phi).sum(-1)
        sigma = np.sqrt(self.alpha * np.maximum(to_numpy(q).astype(np.float64), 0.0))
        return to_numpy(f).astype(np.float64), sigma


class NeuralTS(_BaseNeuralPolicy):
    """Neural Thompson sampling (Zhang, Zhou, Li, Gu, ICLR 2021, Algorithm 1).

    Each round draws, independently per arm, ``r_k ~ N(f(x_k; theta), nu^2 sigma_k^2)``
    and plays the argmax, with ``sigma_k^2 = alpha phi_k^T U^{-1} phi_k`` on the
    neural tangent features ``phi_k = g(x_k; theta) / sqrt(m)`` of all layers. After
    the rewards arrive, the network is trained (``n_steps`` gradient steps on the
    papers' objective (2.3) over every observed round) and then ``U`` gains the pulled
    arms' ``phi phi^T`` at the *trained* parameters (Algorithm 1, line 10). A
    ``partial_fit`` batch of ``B`` rounds is one delayed update (Experiment II).

    Parameters
    ----------
    n_actions : int or None, default=None
        Number of arms; ``None`` infers it in ``fit``.
    hidden_layer_sizes : tuple of int, default=(100,)
        Hidden widths ``m`` (depth ``L = len + 1``). The papers use ``(100,)``.
    alpha : float, default=1.0
        lambda: the prior precision ``U_0 = alpha I``, the factor of ``sigma^2``, and
        the proximal penalty ``m alpha ||theta - theta_0||^2 / 2``. Paper grid:
        1, 0.1, 0.01, 0.001.
    nu : float, default=0.1
        Posterior scale: the sample variance is ``nu^2 sigma^2``. Paper grid
        1e-1 ... 1e-5 (diagonal ``U``); do not reuse values between ``"diag"`` and
        ``"full"``. ``nu=0`` is greedy on the network.
    n_steps : int, default=100
        J, gradient steps per training. Paper: 100.
    learning_rate : float, default=1e-3
        eta, the SGD step. Paper: 1e-3 (on the mean loss, see ``reduction``).
    batch_size : int or None, default=None
        Rows per gradient step; ``None`` is full-batch gradient descent (the paper).
    reduction : {"mean", "sum"}, default="mean"
        ``"sum"`` is (2.3) as printed; ``"mean"`` divides it by the number of
        buffered rows (same minimiser, stable with a fixed ``learning_rate``).
    covariance : {"diag", "full"}, default="diag"
        ``"diag"``: the inverse of ``U``'s diagonal, what the experiments used.
        ``"full"``: the exact ``U^{-1}`` (``p x p``; small networks only).
    init : {"ntk", "default"}, default="ntk"
        ``"ntk"``: the papers' network (no biases, ``sqrt(m)`` output scale,
        mirrored init; ``f(x; theta_0) = 0`` on mirrored inputs, see
        :class:`~skbandit.preprocessing.MirrorNormalizer`). ``"default"``: PyTorch's
        ``nn.Linear`` layers; then ``phi = g`` and the penalty is ``alpha ||.||^2/2``.
    module : torch.nn.Module class or instance, default=None
        Your own network instead of the papers' (``hidden_layer_sizes`` and
        ``init`` are then ignored): ``module(X)`` must return every arm's score,
        shape ``(n, K)``, for contexts ``(n, d)`` or ``(n, K, d)``; a class gets
        whichever of ``n_features``, ``n_actions`` its ``__init__`` takes. Its
        tangent features come from ``torch.func`` (slower than the closed form).
    net : skorch.NeuralNet, default=None
        A whole skorch net (its module, same contract, and its optimizer, e.g.
        Adam); the policy's loss, ``learning_rate``, ``device`` and ``verbose``
        replace the net's. Cloned, never fitted in place.
    train_every : int, default=1
        Train only when the rounds seen cross a multiple of this; ``U`` is still
        updated on every feedback.
    max_train_rounds : int or None, default=None
        Ignore feedback after this many rounds: the network and ``U`` freeze (the
        paper's experiments stop at 1000). ``None`` learns forever.
    max_buffer_size : int or None, default=None
        Keep only the most recent rows in the replay buffer; ``None`` keeps all
        (the paper).
    warm_start : bool, default=True
        Start each training from the current parameters (practice, and the authors'
        code); ``False`` restarts from ``theta_0`` every time (the theory).
    device : str, default="cpu"
        Torch device of the network, e.g. ``"cuda"``. Every fitted attribute but
        ``net_`` is a numpy array, so a policy fitted on a GPU loads on a CPU.
    random_state : int, RandomState instance or None, default=None
        Seeds ``theta_0``, the mini-batches and the posterior draws.
    verbose : int, default=0
        Print the objective after each training.

    Attributes
    ----------
    net_ : skorch.NeuralNetRegressor
        The network (``net_.module_``), its optimizer and device.
    theta0_ : ndarray of shape (n_parameters_,)
        The initial parameters, centre of the penalty.
    n_parameters_ : int
        ``p``, the number of network parameters.
    covariance_ : ndarray of shape (p,) or (p, p)
        ``U^{-1}``, or its diagonal approximation.
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
    NeuralUCB : The optimistic counterpart on the same network and ``U``.
    LinTS : Thompson sampling on a linear model.

    References
    ----------
    .. [1] Zhang, Zhou, Li, Gu. "Neural Thompson Sampling". ICLR 2021.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import NeuralTS
    >>> X = np.random.RandomState(0).normal(size=(8, 4))
    >>> policy = NeuralTS(n_actions=3, hidden_layer_sizes=(8,), n_steps=5,
    ...                   random_state=0)
    >>> a = policy.select(X[:4])
    >>> policy = policy.partial_fit(X[:4], a, np.ones(4))
    >>> policy.predict_scores(X).shape
    (8, 3)
    """

    _parameter_constraints = {
        **_BaseNeuralPolicy._parameter_constraints,
        "nu": [Interval(Real, 0, None, closed="left")],
        "covariance": [StrOptions({"diag", "full"})],
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
        covariance="diag",
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
        self.covariance = covariance
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

    def _scores(self, X, return_std):
        mean, sigma = self._mean_and_sigma(X, with_sigma=return_std)
        return mean, (None if sigma is None else self.nu * sigma)

    def _sample_scores(self, X, rng):
        if self.nu == 0:
            return self._scores(X, False)[0]
        mean, std = self._scores(X, True)
        return mean + std * rng.standard_normal(mean.shape)

    def _action_proba(self, X, mask):
        # Monte Carlo as in BasePolicy, with the network evaluated once.
        mean, std = self._scores(X, True)
        rng = np.random.default_rng(0)
        counts = np.zeros(mean.shape)
        rows = np.arange(X.shape[0])
        for _ in range(self._n_proba_draws):
            draw = mean + std * rng.standard_normal(mean.shape)
            counts[rows, random_argmax(draw, rng, mask)] += 1
        return counts / self._n_proba_draws

    @classmethod
    def _get_test_params(cls):
        return [
            {
                "n_actions": 3,
                "hidden_layer_sizes": (6,),
                "n_steps": 3,
                "learning_rate": 1e-6,  # sklearn checks feed X ~ N(100, 1)
                "random_state": 0,
            },
            {
                "hidden_layer_sizes": (4, 4),
                "n_steps": 2,
                "learning_rate": 1e-6,
                "covariance": "full",
                "nu": 0.5,
                "random_state": 1,
            },
        ]


class NeuralUCB(_BaseNeuralPolicy):
    """Neural upper confidence bound (Zhou, Li, Gu, ICML 2020; paper 000's baseline).

    Plays ``argmax_k f(x_k; theta) + beta * sigma_k`` with the same ``sigma`` as
    :class:`NeuralTS`. Following NeuralUCB's Algorithm 1, ``U`` gains the pulled arms'
    ``phi phi^T`` at the parameters they were *selected* with, before training.

    Parameters
    ----------
    n_actions : int or None, default=None
        Number of arms; ``None`` infers it in ``fit``.
    hidden_layer_sizes : tuple of int, default=(100,)
        Hidden widths ``m``.
    alpha : float, default=1.0
        lambda: prior precision, factor of ``sigma^2`` and penalty strength.
    beta : float, default=0.1
        gamma, the width multiplier of the bound. ``beta=0`` is greedy.
    n_steps : int, default=100
        J, gradient steps per training.
    learning_rate : float, default=1e-3
        eta, the SGD step.
    batch_size : int or None, default=None
        Rows per gradient step; ``None`` is full batch.
    reduction : {"mean", "sum"}, default="mean"
        Loss reduction, see :class:`NeuralTS`.
    covariance : {"diag", "full"}, default="diag"
        Diagonal approximation (the experiments) or exact ``U^{-1}``.
    init : {"ntk", "default"}, default="ntk"
        Network parameterisation, see :class:`NeuralTS`.
    module : torch.nn.Module class or instance, default=None
        Your own network instead of the papers', see :class:`NeuralTS`.
    net : skorch.NeuralNet, default=None
        A whole skorch net (module and optimizer), see :class:`NeuralTS`.
    train_every : int, default=1
        Train only when the rounds seen cross a multiple of this.
    max_train_rounds : int or None, default=None
        Ignore feedback after this many rounds.
    max_buffer_size : int or None, default=None
        Keep only the most recent rows in the replay buffer.
    warm_start : bool, default=True
        Start each training from the current parameters; ``False`` restarts from
        ``theta_0`` (NeuralUCB's TrainNN).
    device : str, default="cpu"
        Torch device of the network.
    random_state : int, RandomState instance or None, default=None
        Seeds ``theta_0``, the mini-batches and tie-breaking.
    verbose : int, default=0
        Print the objective after each training.

    Attributes
    ----------
    net_ : skorch.NeuralNetRegressor
        The network, its optimizer and device.
    theta0_ : ndarray of shape (n_parameters_,)
        The initial parameters.
    n_parameters_ : int
        Number of network parameters.
    covariance_ : ndarray of shape (p,) or (p, p)
        ``U^{-1}``, or its diagonal approximation.
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
    NeuralTS : Sampling instead of optimism.

    References
    ----------
    .. [1] Zhou, Li, Gu. "Neural contextual bandits with UCB-based exploration".
       ICML 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import NeuralUCB
    >>> X = np.random.RandomState(0).normal(size=(6, 2, 4))
    >>> policy = NeuralUCB(hidden_layer_sizes=(8,), n_steps=5, random_state=0)
    >>> policy.select(X).shape
    (6,)
    """

    _covariance_before_training = True
    _parameter_constraints = {
        **_BaseNeuralPolicy._parameter_constraints,
        "beta": [Interval(Real, 0, None, closed="left")],
        "covariance": [StrOptions({"diag", "full"})],
    }

    def __init__(
        self,
        n_actions=None,
        *,
        hidden_layer_sizes=(100,),
        alpha=1.0,
        beta=0.1,
        n_steps=100,
        learning_rate=1e-3,
        batch_size=None,
        reduction="mean",
        covariance="diag",
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
        self.beta = beta
        self.n_steps = n_steps
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.reduction = reduction
        self.covariance = covariance
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

    def _scores(self, X, return_std):
        return self._mean_and_sigma(X, with_sigma=return_std)

    def _sample_scores(self, X, rng):
        if self.beta == 0:
            return self._scores(X, False)[0]
        mean, sigma = self._scores(X, True)
        return mean + self.beta * sigma

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.policy_tags.stochastic_select = False
        tags.policy_tags.exact_action_proba = True
        return tags

    @classmethod
    def _get_test_params(cls):
        return [
            {
                "n_actions": 3,
                "hidden_layer_sizes": (6,),
                "n_steps": 3,
                "learning_rate": 1e-6,  # sklearn checks feed X ~ N(100, 1)
                "random_state": 0,
            },
            {
                "hidden_layer_sizes": (4,),
                "n_steps": 2,
                "learning_rate": 1e-6,
                "covariance": "full",
                "beta": 1.0,
                "random_state": 1,
            },
        ]


class NeuralEpsilonGreedy(_BaseNeuralPolicy):
    """Epsilon-greedy on the neural network (paper 000's neural baseline).

    With probability ``epsilon`` plays a uniformly random available arm, otherwise
    ``argmax_k f(x_k; theta)``; the network is trained as in :class:`NeuralTS`.

    Parameters
    ----------
    n_actions : int or None, default=None
        Number of arms; ``None`` infers it in ``fit``.
    hidden_layer_sizes : tuple of int, default=(100,)
        Hidden widths ``m``.
    alpha : float, default=1.0
        Strength of the penalty ``m alpha ||theta - theta_0||^2 / 2``.
    epsilon : float, default=0.05
        Exploration probability. Paper grid: 0.01, 0.05, 0.1.
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
    module : torch.nn.Module class or instance, default=None
        Your own network instead of the papers', see :class:`NeuralTS`.
    net : skorch.NeuralNet, default=None
        A whole skorch net (module and optimizer), see :class:`NeuralTS`.
    train_every : int, default=1
        Train only when the rounds seen cross a multiple of this.
    max_train_rounds : int or None, default=None
        Ignore feedback after this many rounds.
    max_buffer_size : int or None, default=None
        Keep only the most recent rows in the replay buffer.
    warm_start : bool, default=True
        Start each training from the current parameters; ``False`` from ``theta_0``.
    device : str, default="cpu"
        Torch device of the network.
    random_state : int, RandomState instance or None, default=None
        Seeds ``theta_0``, the mini-batches and exploration.
    verbose : int, default=0
        Print the objective after each training.

    Attributes
    ----------
    net_ : skorch.NeuralNetRegressor
        The network, its optimizer and device.
    theta0_ : ndarray of shape (n_parameters_,)
        The initial parameters.
    n_parameters_ : int
        Number of network parameters.
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
    NeuralTS : Directed, posterior-driven exploration.
    EpsilonGreedy : The same on a ridge model.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import NeuralEpsilonGreedy
    >>> X = np.random.RandomState(0).normal(size=(5, 4))
    >>> NeuralEpsilonGreedy(n_actions=3, hidden_layer_sizes=(8,),
    ...                     random_state=0).select(X).shape
    (5,)
    """

    _tracks_covariance = False
    _parameter_constraints = {
        **_BaseNeuralPolicy._parameter_constraints,
        "epsilon": [Interval(Real, 0, 1, closed="both")],
    }

    def __init__(
        self,
        n_actions=None,
        *,
        hidden_layer_sizes=(100,),
        alpha=1.0,
        epsilon=0.05,
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
        self.epsilon = epsilon
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

    def _scores(self, X, return_std):
        return self._mean_and_sigma(X, with_sigma=False)

    def _select(self, X, mask):
        greedy = random_argmax(self._scores(X, False)[0], self._rng, mask)
        uniform = random_argmax(
            np.zeros((X.shape[0], self.n_actions_)), self._rng, mask
        )
        explore = self._rng.random(X.shape[0]) < self.epsilon
        return np.where(explore, uniform, greedy)

    def _action_proba(self, X, mask):
        uniform = greedy_proba(np.zeros((X.shape[0], self.n_actions_)), mask)
        greedy = greedy_proba(self._scores(X, False)[0], mask)
        return self.epsilon * uniform + (1 - self.epsilon) * greedy

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.policy_tags.exact_action_proba = True
        return tags

    @classmethod
    def _get_test_params(cls):
        return [
            {
                "n_actions": 3,
                "hidden_layer_sizes": (6,),
                "n_steps": 3,
                "learning_rate": 1e-6,  # sklearn checks feed X ~ N(100, 1)
                "random_state": 0,
            },
            {
                "hidden_layer_sizes": (4,),
                "n_steps": 2,
                "learning_rate": 1e-6,
                "epsilon": 0.5,
            },
        ]
