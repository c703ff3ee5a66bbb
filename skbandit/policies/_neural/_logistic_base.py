"""What NeuralLog-UCB and NeuralLog-TS share (Bae and Lee, "Neural Logistic Bandits").

Both train the network on the regularised binary cross-entropy (the objective of
TrainNN, penalty ``m lambda ||theta - theta_0||^2 / 2`` centred at ``theta_0``; the
experiments' Section 7 centres it at zero, ``penalty_center="zero"``) and explore
with the gradient features ``g`` of the pulled arms:

* variant 1 (Algorithm 1) keeps the unweighted
  ``V_t = sum_i g_i g_i^T + kappa lambda I``;
* variant 2 (Algorithm 2) keeps
  ``W_t = sum_i mu'(f(x_i; theta_i)) g_i g_i^T + lambda I``, each round weighted by
  the variance the network estimates for it once it has been trained on it, and
  never reweighted later.

A round enters with the gradient it was *selected* with (``g(x_i; theta_{i-1})``, or
``g(x_i; theta_0)`` in theory), the weight comes after training. The width of the
confidence set, ``w_t = (1 + sqrt(L) S + L S^2) iota_t + 1`` (Eqs. 1 and 4), grows with
the data-adaptive effective dimension ``log det(I + R sum g g^T / lambda)`` of the
pulled arms (unweighted for both variants, App. A) and ``log(4 t^2 / delta)``.

Units. The core's tangent features are ``phi = g / s`` with ``s = sqrt(m)`` the output
scale of the papers' network. Dropping the ``1 / sqrt(m)`` (the experiments) is
``g^T (sum g g^T + c I)^{-1} g = phi^T (sum phi phi^T + (c / s^2) I)^{-1} phi``: the
same
precision on ``phi`` with its regulariser divided by ``s^2``, and the effective
dimension ``log det(I + R s^2 sum phi phi^T / lambda)``.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import copy
import dataclasses
import functools
import math

import numpy as np
import torch
from skorch.utils import to_numpy

from skbandit._base._schedule import training_due
from skbandit.networks import TangentPrecision, tangent_features
from skbandit.networks._training import set_flat_parameters
from skbandit.policies._core._neural_params import (
    CONSTRAINTS,
    LOGISTIC_PAPER_SCHEDULE,
    LOGISTIC_PARAMETERS,
    LOGISTIC_TEXTS,
    NETWORK_PARAMETERS,
    neural_constraints,
    neural_docstring,
)
from skbandit.policies._core._neural_policy import NeuralPolicy
from skbandit.utils._reward_range import check_reward_range

__all__ = ["NeuralLogisticPolicy", "logistic_docstring"]

#: ``R``, the largest variance ``mu'`` of a Bernoulli reward (Assumption 2.1).
R = 0.25
#: Rows of a shared context whose every arm's features are computed at once.
_FEATURE_ENTRIES = 1 << 22

logistic_docstring = functools.partial(
    neural_docstring, *LOGISTIC_PARAMETERS, texts=LOGISTIC_TEXTS
)


def mu_dot(z):
    """``mu'(z) = mu(z) (1 - mu(z))``, finite for every ``z`` (note, pitfall 1)."""
    return torch.sigmoid(z) * torch.sigmoid(-z)


class NeuralLogisticPolicy(NeuralPolicy):
    """The state and the widths of NeuralLog-UCB and NeuralLog-TS.

    A policy of this base names ``_bonus_factor()``, what multiplies ``||g||``
    before ``nu`` in its width, and may set ``_default_nu`` (the multiplier of
    ``nu=None``).
    """

    _loss = "logistic"
    PAPER_SCHEDULE = LOGISTIC_PAPER_SCHEDULE
    _parameter_constraints = {
        **neural_constraints("n_actions", *LOGISTIC_PARAMETERS, *NETWORK_PARAMETERS),
        # None: the value of the preset ``confidence`` names (see _resolved).
        **{
            name: [*CONSTRAINTS[name], None]
            for name in (
                "nu",
                "gradient",
                "normalize_gradient",
                "mean",
                "warm_start",
                "penalty_center",
            )
        },
    }
    #: ``nu=None``: the multiplier where the defaults learn (the policy's own).
    _default_nu = 1e-3
    #: What ``confidence`` sets when a flag is left at None: the experiments'
    #: practical form (its gradient in the units of a network without the
    #: ``sqrt(m)`` output scale) or the theory's, every flag at once.
    _PRESETS = {
        "practical": {
            "gradient": "current",
            "normalize_gradient": True,
            "mean": "network",
            "warm_start": True,
            "penalty_center": "zero",
        },
        "theory": {
            "gradient": "init",
            "normalize_gradient": True,
            "mean": "linearized",
            "warm_start": False,
            "penalty_center": "init",
        },
    }

    # One signature for NeuralLogUCB and NeuralLogTS (scikit-learn reads the
    # inherited __init__'s).
    def __init__(
        self,
        n_actions=None,
        *,
        variant=2,
        nu=None,
        kappa=10.0,
        norm_bound=1.0,
        delta=0.05,
        confidence="practical",
        gradient=None,
        normalize_gradient=None,
        mean=None,
        variance_weights="block",
        penalty_center=None,
        covariance="diag",
        hidden_layer_sizes=(20,),
        alpha=1.0,
        n_steps=100,
        learning_rate=0.01,
        batch_size=64,
        reduction="mean",
        init="ntk",
        mirror_inputs="auto",
        standardize="auto",
        module=None,
        net=None,
        train_every=50,
        max_train_rounds=None,
        max_buffer_size=1000,
        warm_start=None,
        device="cpu",
        random_state=None,
        verbose=0,
    ):

        self.n_actions = n_actions
        self.variant = variant
        self.nu = nu
        self.kappa = kappa
        self.norm_bound = norm_bound
        self.delta = delta
        self.confidence = confidence
        self.gradient = gradient
        self.normalize_gradient = normalize_gradient
        self.mean = mean
        self.variance_weights = variance_weights
        self.penalty_center = penalty_center
        self.covariance = covariance
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

    def _resolved(self, name):
        """A flag's value: as given, or the preset of ``confidence`` for None."""
        value = getattr(self, name)
        return self._PRESETS[self.confidence][name] if value is None else value

    @property
    def _nu(self):
        return self._default_nu if self.nu is None else float(self.nu)

    # ----------------------------------------------------------------- state
    def _initial_precision(self, kind):
        theory = self.confidence == "theory"
        self._lambda = self._lambda0() if theory else float(self.alpha)
        # V_0 = kappa lambda I or W_0 = lambda I, in phi units (module docstring).
        return TangentPrecision(
            self.n_parameters_,
            self._regulariser(self._lambda) / self._gradient_scale(),
            kind,
        )

    def _init_state(self):
        super()._init_state()
        p, kind = self.n_parameters_, self.covariance
        theory = self.confidence == "theory"
        # The effective dimension's Gram, unweighted: log det(I + R c G / lambda_d).
        self._gram_alpha = (self._lambda0() if theory else float(self.alpha)) / (
            R * self._gradient_scale()
        )
        self._gram = TangentPrecision(p, self._gram_alpha, kind)
        self._pending = None  # variance_weights="block": rounds waiting for a training
        self._new_rows = 0  # rows of the update in progress (the theory's step)
        self._width = self._confidence_width(self._gram, 0)

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_module0", None)  # a cache of theta_0's network, rebuilt on demand
        return state

    @property
    def _depth(self):
        return len(np.atleast_1d(self.hidden_layer_sizes)) + 1

    def _gradient_scale_raw(self):
        """``s^2``: ``m`` for the papers' network, 1 without an output scale."""
        return float(getattr(self.net_.module_, "scale", 1.0)) ** 2

    def _gradient_scale(self):
        """``c``: 1 for ``g / sqrt(m)``, ``s^2`` for ``g`` (module docstring)."""
        return (
            1.0 if self._resolved("normalize_gradient") else self._gradient_scale_raw()
        )

    def _regulariser(self, lam):
        return float(self.kappa) * lam if int(self.variant) == 1 else lam

    def _lambda0(self):
        """``lambda_0 = 8 sqrt(2) C_1 sqrt(L) log(4 / delta) / S`` with ``C_1 = 1``."""
        L, S = self._depth, float(self.norm_bound)
        return 8 * math.sqrt(2 * L) * math.log(4 / float(self.delta)) / S

    @property
    def effective_dimension_(self):
        """``log det(I + R sum_i g_i g_i^T / lambda)`` over the pulled arms so far."""
        return self._gram.logdet - self.n_parameters_ * math.log(self._gram_alpha)

    @property
    def confidence_width_(self):
        """The width ``w_t`` the next selection uses (before the ``nu`` factor)."""
        return self._width

    @property
    def regularization_(self):
        """``lambda_t``: ``alpha``, or Eq. (3)'s schedule under ``"theory"``."""
        return self._lambda

    def _log_term(self, t):
        # l_t = log(4 t^2 / delta), with max(t, 1): l_0 = log(0) would be -inf.
        return math.log(4 * max(t, 1) ** 2 / float(self.delta))

    def _confidence_width(self, gram, t):
        """``w_t = (1 + sqrt(L) S + L S^2) iota_t + 1`` (Eqs. 1, 2 and 4)."""
        L, S = self._depth, float(self.norm_bound)
        d_eff = max(gram.logdet - self.n_parameters_ * math.log(self._gram_alpha), 0)
        log_t = self._log_term(t)
        if self.confidence == "theory":
            iota = (
                16 * math.sqrt(d_eff * log_t)
                + 8 * math.sqrt(L / self._lambda0()) * log_t
            )
        else:  # absolute constants 1, the fixed lambda (App. A)
            iota = math.sqrt(d_eff * log_t) + math.sqrt(L / float(self.alpha)) * log_t
        return (1 + math.sqrt(L) * S + L * S * S) * iota + 1

    def _next_lambda(self, gram, t):
        """Eq. (3), kept non-decreasing and at least ``lambda_0`` (note, 2.0)."""
        if self.confidence != "theory":
            return float(self.alpha)
        L, S, lam0 = self._depth, float(self.norm_bound), self._lambda0()
        a_t = max(gram.logdet - self.n_parameters_ * math.log(self._gram_alpha), 0)
        log_t = self._log_term(t)
        eq3 = 64 / S**2 * a_t * log_t + 16 * L / (S**2 * lam0) * log_t**2
        return max(self._lambda, lam0, eq3)

    def _training_settings(self):
        settings = super()._training_settings()
        settings = dataclasses.replace(
            settings,
            warm_start=self._resolved("warm_start"),
            penalty_center=self._resolved("penalty_center"),
        )
        if self.confidence != "theory":
            return settings
        # TrainNN's penalty m lambda_t ||theta - theta_0||^2 / 2 with this round's
        # lambda_t (the update hooks have just computed it), and at most
        # Condition 4.4's step eta = C_5 / (m t L + m lambda_t), C_5 = 1, written for
        # the objective as reduced (divided by the t rows for "mean"): past it,
        # the penalty's m lambda_t alone makes gradient descent diverge.
        m, L = self._gradient_scale_raw(), self._depth
        t = max(len(self._core.buffer) + self._new_rows, 1)
        divisor = t if self.reduction == "mean" else 1
        step = divisor / (m * t * L + m * self._lambda)
        return dataclasses.replace(
            settings,
            alpha=self._lambda,
            learning_rate=min(float(settings.learning_rate), step),
        )

    # --------------------------------------------------------------- features
    def _feature_module(self):
        """The network the gradient features are taken at: current, or ``theta_0``."""
        at_init = self._resolved("gradient") == "init"
        return self._init_module() if at_init else self.net_.module_

    def _init_module(self):
        """A frozen copy of the network at ``theta_0`` (built once per device)."""
        device = self._device
        cached = getattr(self, "_module0", None)
        if cached is None or next(cached.parameters()).device != device:
            cached = copy.deepcopy(self.net_.module_)
            set_flat_parameters(cached, self._tensor(self._core.theta0))
            self._module0 = cached
        return cached

    def _chosen_tangents(self, X, actions):
        """``phi`` of each pulled arm at the feature parameters, shape (n, p)."""
        module, Xt = self._feature_module(), self._tensor(X)
        n = X.shape[0]
        a = self._tensor(actions)
        if X.ndim == 3:  # per-arm contexts: the pulled arm's vector alone
            rows = Xt[torch.arange(n, device=Xt.device), a][:, None, :]
            return tangent_features(module, rows)[1][:, 0]
        chunk = max(1, _FEATURE_ENTRIES // (self.n_actions_ * self.n_parameters_))
        parts = []
        for start in range(0, n, chunk):
            phi = tangent_features(module, Xt[start : start + chunk])[1]
            idx = torch.arange(phi.shape[0], device=Xt.device)
            parts.append(phi[idx, a[start : start + chunk]])
        return torch.cat(parts)

    def _pulled_logits(self, X, actions):
        """``f(x_i; theta)`` of each pulled arm at the current parameters."""
        module, Xt = self.net_.module_, self._tensor(X)
        a = self._tensor(actions)
        rows = torch.arange(X.shape[0], device=Xt.device)
        with torch.no_grad():
            if X.ndim == 3:
                return module(Xt[rows, a][:, None, :])[:, 0]
            return module(Xt)[rows, a]

    # --------------------------------------------------------------- learning
    def _update(self, X, actions, rewards, sample_weight):
        # At the door: a target outside [0, 1] makes the cross-entropy unbounded
        # below, and the training diverges rounds later (a NumericalError).
        check_reward_range(
            rewards, type(self).__name__, "the cross-entropy's clicks or probabilities"
        )
        super()._update(X, actions, rewards, sample_weight)

    def _update_hooks(self, X, actions, rewards, sample_weight):
        phi = self._chosen_tangents(X, actions)  # at the selection parameters
        seen, n = self.n_samples_seen_, X.shape[0]
        sw = np.ones(n) if sample_weight is None else sample_weight.astype(np.float64)
        gram = self._gram.updated_with(phi, sw)
        lam = self._next_lambda(gram, seen + n)
        shift = (self._regulariser(lam) - self._regulariser(self._lambda)) / (
            self._gradient_scale()
        )
        # Rebound before training (the base restores them if the update fails):
        # the penalty of this training is lambda_t.
        self._gram, self._lambda, self._new_rows = gram, lam, n
        self._width = self._confidence_width(gram, seen + n)
        if int(self.variant) == 1:  # V_t = sum g g^T + kappa lambda_t I: no weights
            self._precision = self._precision.updated_with(phi, sw).shifted(shift)
            return None, None
        precision = self._precision.shifted(shift)
        rows = (X, actions, phi, sw)
        if self.variance_weights == "block":
            if self._pending is not None:
                pairs = zip(self._pending, rows, strict=True)
                rows = tuple(_concat(a, b) for a, b in pairs)
            if not training_due(seen, n, self.train_every):
                self._pending, self._precision = rows, precision
                return None, None
            self._pending = None
        return None, lambda buffer: self._weighted(precision, *rows)

    def _weighted(self, precision, X, actions, phi, sample_weight):
        """``W`` plus the rounds weighted by ``mu'(f(x_i; theta_i))`` (trained)."""
        w = to_numpy(mu_dot(self._pulled_logits(X, actions))).astype(np.float64)
        return precision.updated_with(phi, w * sample_weight)

    # --------------------------------------------------------------- deciding
    def _logits_and_norms(self, X, with_norm=True):
        """Per arm: the mean logit and ``||g||_{V^-1}`` (or ``W``), numpy float64."""
        module, Xt = self.net_.module_, self._tensor(X)
        q, at_init = None, self._resolved("gradient") == "init"
        with torch.no_grad():
            if not with_norm or at_init:
                f = module(Xt)
            if with_norm:
                out = self._precision.quadratic(self._feature_module(), Xt)
                f, q = (f, out[1]) if at_init else out
            if int(self.variant) == 2 and self._resolved("mean") == "linearized":
                f = self._linearized_logits(Xt)
        f = to_numpy(f).astype(np.float64)
        if q is None:
            return f, None
        return f, np.sqrt(np.maximum(to_numpy(q).astype(np.float64), 0.0))

    def _linearized_logits(self, Xt):
        """``g(x; theta_0)^T (theta - theta_0)`` (Algorithm 2, line 2)."""
        module0 = self._init_module()
        _, phi0 = tangent_features(module0, Xt)
        theta = torch.cat(
            [p.detach().reshape(-1) for p in self.net_.module_.parameters()]
        )
        step = theta - self._tensor(self._core.theta0)
        return float(getattr(module0, "scale", 1.0)) * (phi0 @ step)

    def _bonus_factor(self):
        """What multiplies ``||g||`` (before ``nu``): the policy's own."""
        raise NotImplementedError

    def _mean_and_width(self, X, with_width=True):
        """The mean logit per arm and ``nu * factor * w * ||g||``, or ``None``."""
        logits, norms = self._logits_and_norms(X, with_norm=with_width and self._nu > 0)
        if norms is None:
            return logits, (np.zeros_like(logits) if with_width else None)
        return logits, self._nu * self._bonus_factor() * self._width * norms

    @classmethod
    def _get_test_params(cls):
        return [
            {
                "n_actions": 3,
                "hidden_layer_sizes": (6,),
                "n_steps": 3,
                "train_every": 2,
                "learning_rate": 1e-6,  # sklearn checks feed X ~ N(100, 1)
                "mirror_inputs": False,
                "standardize": False,
                "random_state": 0,
            },
            {
                "variant": 1,
                "hidden_layer_sizes": (4,),
                "n_steps": 2,
                "train_every": 1,
                "learning_rate": 1e-6,
                "mirror_inputs": False,
                "standardize": False,
                "covariance": "full",
                "confidence": "theory",  # the preset: gradient at theta_0, ...
                "random_state": 1,
            },
        ]


def _concat(a, b):
    if isinstance(a, torch.Tensor):
        return torch.cat([a, b])
    return np.concatenate([a, b])
