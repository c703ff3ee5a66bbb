"""Neural-linear Thompson sampling (Riquelme, Tucker, Snoek, ICLR 2018).

A baseline of Neural Thompson Sampling: a Bayesian linear regression on the *last
hidden layer* ``h(x_k; theta)`` of the network the core trains
(:class:`~skbandit.networks.BanditMLP`)::

    A = alpha I + sum_i w_i h_i h_i^T,    b = sum_i w_i r_i h_i,
    mu = A^{-1} b,    beta ~ N(mu, nu^2 A^{-1}),    score_k = h(x_k)^T beta

with ``h_i`` the pulled arm's features of every buffered round. When an update trains
the network (the representation moves), ``A`` and ``b`` are recomputed over the whole
buffer at the new parameters; when it does not (``train_every > 1`` between trainings,
``n_steps=0``, ``learning_rate=0``), they gain only the new rows (and lose the rows
``max_buffer_size`` evicted): a rank-``B`` update, equal to the recomputation. The
features are evaluated in float64 from the float32 network, so that a row's features
do not depend on the rows batched with it.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import copy
import functools

import numpy as np
import torch
from scipy.linalg import solve_triangular
from skorch.utils import to_numpy

from skbandit.exceptions import NumericalError, _as_numerical_error
from skbandit.networks import BanditMLP
from skbandit.networks._training import get_flat_parameters
from skbandit.policies._core._neural_params import (
    NETWORK_PARAMETERS,
    estimator_check_params,
    neural_constraints,
    neural_docstring,
)
from skbandit.policies._core._neural_policy import NeuralPolicy
from skbandit.utils._blas_threads import SCOPE

__all__ = ["NeuralLinear"]


def _rows(buffer):
    """A replay buffer's ``(X, actions, rewards, weights)``."""
    return buffer.X, buffer.actions, buffer.targets, buffer.weights


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


@neural_docstring("nu")
class NeuralLinear(NeuralPolicy):
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
    %(parameters)s

    Attributes
    ----------
    %(attributes)s
    precision_ : ndarray of shape (m_L, m_L)
        ``A``.
    coef_ : ndarray of shape (m_L,)
        Posterior mean ``mu = A^{-1} b``.
    covariance_ : ndarray of shape (m_L, m_L)
        ``A^{-1}`` (the posterior covariance is ``nu^2`` times this).

    See Also
    --------
    NeuralTS : Uncertainty over all layers' tangent features.

    Notes
    -----
    ``nu`` is the noise scale of the linear head: the posterior covariance is
    ``nu^2 A^{-1}``. ``n_steps=0`` never moves the network, and the regression then
    runs on the features of ``theta_0``. A custom ``module`` must hold one vector per
    arm at the input of its last registered ``nn.Linear`` layer, e.g. ``(n, K, m)``:
    the regression runs on it.

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

    _parameter_constraints = neural_constraints("n_actions", "nu", *NETWORK_PARAMETERS)

    def _work_scope(self, n_rows, update=False):
        """An update's head posterior (an ``m x m`` factor and products, ``O(m^3)``
        each round) is small dense numpy work: on the BLAS threads of small work,
        one by default, as the linear family's ridge blocks. On OpenBLAS's own two
        threads of a busy machine, 300 rounds of wine took 23 CPU-seconds, against
        3.4 on one. The training inside sets its own torch threads."""
        if update:
            return SCOPE
        return super()._work_scope(n_rows, update)

    def __init__(
        self,
        n_actions=None,
        *,
        nu=0.1,
        hidden_layer_sizes=(100,),
        alpha=1.0,
        n_steps=50,
        learning_rate=1e-3,
        batch_size=64,
        reduction="mean",
        init="ntk",
        mirror_inputs="auto",
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
        self.nu = nu
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

    # ----------------------------------------------------------------- state
    def _init_state(self):
        super()._init_state()
        K, d = self.n_actions_, self._n_inputs
        probe = np.zeros((1, K, d) if self._per_arm_contexts else (1, d), np.float32)
        self._head_dim = self._features(probe).shape[-1]  # checks a custom module
        self._set_posterior(self._posterior(self._core.buffer))

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
        # Keyed on the parameters' in-place versions: any step, rollback or load
        # changes them, whether or not the training has been committed yet.
        version = tuple(p._version for p in module.parameters())
        if cache is None or cache[0] is not module or cache[1] != version:
            net64 = copy.deepcopy(module)
            net64.zero_grad(set_to_none=True)
            net64 = net64.to(torch.float64).requires_grad_(False)
            cache = self._head_cache = (module, version, net64)
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
                self._tensor(actions),
            )
        return to_numpy(h)

    def _head_stats(self, X, actions, rewards, weights):
        """``(sum w h h^T, sum w r h)`` of buffered rows at the current parameters."""
        H = self._pulled_features(X, actions)
        w = weights.astype(np.float64)
        return (H * w[:, None]).T @ H, H.T @ (w * rewards.astype(np.float64))

    def _posterior(self, buffer):
        """The posterior recomputed over the whole buffer at the current parameters.

        Returns ``(A, b, mu, A^{-1}, a square root of A^{-1})``.
        """
        m = self._head_dim
        A, b = float(self.alpha) * np.eye(m), np.zeros(m)
        if len(buffer):
            dA, db = self._head_stats(*_rows(buffer))
            A, b = A + dA, b + db
        return self._factor(A, b)

    def _posterior_update(self, old_buffer, buffer, n_new):
        """The posterior after an update that left the network as it was.

        ``A`` and ``b`` gain the ``n_new`` rows just buffered and lose the rows the
        buffer evicted (the oldest of ``old_buffer``): ``O((n_new + evicted) m^2)``
        instead of ``O(buffer m^2)``, and the same result up to float64 rounding.
        """
        n_old, n_now = len(old_buffer), len(buffer)
        n_new = min(n_new, n_now)
        if n_new == n_now or float(self.alpha) != self._head_alpha:
            return self._posterior(buffer)  # nothing of the old sums survives
        dA, db = self._head_stats(*_rows(buffer.tail(n_new)))
        A, b = self.precision_ + dA, self._head_b + db
        evicted = n_old + n_new - n_now
        if evicted:
            dA, db = self._head_stats(*_rows(old_buffer.head(evicted)))
            A, b = A - dA, b - db
        return self._factor(A, b)

    def _factor(self, A, b):
        if not (np.all(np.isfinite(A)) and np.all(np.isfinite(b))):
            raise NumericalError("Non-finite last-layer features; posterior unchanged.")
        with _as_numerical_error(
            "The last-layer precision A is not positive definite; posterior "
            "unchanged. Increase alpha."
        ):
            L = np.linalg.cholesky(A)
        L_inv = solve_triangular(L, np.eye(A.shape[0]), lower=True)
        cov = L_inv.T @ L_inv
        return A, b, cov @ b, cov, L_inv.T  # cov = L_inv^T L_inv: a square root

    def _set_posterior(self, posterior):
        A, b, mu, cov, root = posterior
        self.precision_, self.coef_, self._head_cov, self._head_root = A, mu, cov, root
        self._head_b, self._head_alpha = b, float(self.alpha)

    # --------------------------------------------------------------- learning
    def _update_hooks(self, X, actions, rewards, sample_weight):
        module = self.net_.module_
        theta_before = get_flat_parameters(module)
        old_buffer, n_new = self._core.buffer, X.shape[0]

        def after(buffer):
            if torch.equal(get_flat_parameters(module), theta_before):
                return self._posterior_update(old_buffer, buffer, n_new)
            return self._posterior(buffer)  # the representation moved: recompute

        return None, after

    def _commit_update(self, before, after):
        self._set_posterior(after)

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

    def _score_sampler(self, X):
        return functools.partial(self._draw, self._features(X))  # network runs once

    @classmethod
    def _get_test_params(cls):
        return [
            estimator_check_params(n_actions=3, random_state=0),
            estimator_check_params(
                hidden_layer_sizes=(4, 4),
                nu=0.5,
                train_every=3,  # the incremental posterior between trainings
                max_buffer_size=40,
                random_state=1,
            ),
        ]
