"""The base of the neural policies: a ``NetworkCore`` behind
the verbs.

A neural policy is a :class:`~skbandit.base.BasePolicy` whose model is a network
trained through the core (its module, ``theta_0``, replay buffer, schedule, loss,
steps and rollback). :class:`NeuralPolicy` builds the core from the policy's
parameters and runs each update through it; a policy that explores with the
tangent-feature precision ``U`` (:class:`~skbandit.networks.TangentPrecision`) sets
``_precision_kind`` and says whether ``U`` gains the pulled arms before training
(NeuralUCB) or after it (NeuralTS, Algorithm 1, line 10). What is left to a policy is
its scores and its exploration: a small file beside its algorithm box.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import contextlib
import functools

import numpy as np
import torch
from skorch.utils import to_numpy

from skbandit._base._selection import greedy_proba
from skbandit.base import BasePolicy
from skbandit.networks import (
    TangentPrecision,
    _training,
    initialize_net,
    make_bandit_net,
)
from skbandit.networks._core import NetworkCore, TrainingSettings, check_device
from skbandit.networks._device_buffer import HostStaging
from skbandit.networks._threads import policy_threads
from skbandit.policies._core._neural_params import (
    NETWORK_PARAMETERS,
    PAPER_SCHEDULE,
    estimator_check_params,
    neural_constraints,
)

__all__ = ["EnsembleScoresMixin", "NeuralPolicy"]


class NeuralPolicy(BasePolicy):
    """Network, replay buffer, training and (optionally) ``U`` of a neural policy.

    The neural family's hooks, each with a default here: ``_loss`` ("squared" or
    "logistic"), ``_covariance_before_training`` (when ``U`` gains the pulled arms),
    ``_net_options()`` (further arguments of the network), ``_training_settings()``,
    ``_training_due(n_seen, n_new)`` (a schedule other than ``train_every``),
    ``_training_targets()`` (targets other than the stored rewards),
    ``_buffer_rows(X, actions, rewards, sample_weight)`` (the rows the replay buffer
    gains), ``_update_hooks(X, actions, rewards, sample_weight)`` (what runs before
    and after training), ``_commit_update(before, after)`` (adopting what they
    computed once the core has committed), ``_initial_precision(kind)`` (the
    prior ``U_0``) and ``_serial_small_work`` (whether small work runs on one
    thread).

    The base of every neural policy (:class:`~skbandit.policies.NeuralTS`,
    :class:`~skbandit.policies.NeuralUCB` and the rest of the neural family, and the
    combinatorial neural bandits). It fills in ``_init_state``, ``_update`` (through
    the training core: replay buffer, schedule, steps, rollback),
    ``_transform_contexts`` (the papers' mirrored inputs) and ``_add_arms``; a
    policy writes out ``__init__`` with the network parameters (those of
    ``NeuralPolicy._parameter_constraints``, with their defaults as in
    :class:`~skbandit.policies.NeuralEpsilonGreedy`) and its own, and fills in
    ``_scores`` (``self._mean_and_sigma(X, with_sigma)`` gives the network's scores
    and, for a policy with a ``covariance`` parameter, the width
    ``sqrt(g^T U^{-1} g / m)``) and its exploration (``_score_sampler`` or
    ``_exploration_rates``).

    Parameters
    ----------
    n_actions : int or None, default=None
        Number of arms; ``None`` infers it in ``fit``.
    random_state : int, RandomState instance or None, default=None
        Seeds the network's initialisation, its training and ``select``.

    See Also
    --------
    skbandit.base.BasePolicy : The verbs and the hooks of every policy.

    Examples
    --------
    >>> from skbandit.policies import NeuralEpsilonGreedy, NeuralTS
    >>> from skbandit.policies.base import NeuralPolicy
    >>> [issubclass(P, NeuralPolicy) for P in (NeuralTS, NeuralEpsilonGreedy)]
    [True, True]
    >>> "hidden_layer_sizes" in NeuralPolicy._parameter_constraints
    True
    """

    _context_dtype = np.float32
    #: Unscaled inputs make the first trainings diverge: standardise them.
    _standardize_auto = True
    _parameter_constraints: dict = neural_constraints("n_actions", *NETWORK_PARAMETERS)
    #: The loss the network is trained on: "squared" or "logistic".
    _loss = "squared"
    #: Update ``U`` at ``theta_{t-1}`` before training (NeuralUCB) or at ``theta_t``
    #: after it (NeuralTS).
    _covariance_before_training = False
    #: The paper's training schedule, one parameter set away from the defaults'
    #: flat-cost one: ``NeuralTS(**NeuralTS.PAPER_SCHEDULE)``.
    PAPER_SCHEDULE = PAPER_SCHEDULE

    #: Run each verb under :func:`~skbandit.networks._threads.policy_threads` (small
    #: work on one thread); the combinatorial policies split their rounds themselves.
    _serial_small_work = True

    def _precision_kind(self):
        """``"diag"``/``"full"`` for a policy that keeps ``U``, ``None`` otherwise.

        A policy keeps ``U`` exactly when it has a ``covariance`` parameter.
        """
        return getattr(self, "covariance", None)

    def _add_arms(self, n_new):
        if not self._per_arm_contexts:
            raise ValueError(
                f"{type(self).__name__} reads shared contexts through the disjoint "
                "encoding, one input block per arm, so its network cannot gain an "
                f"arm: refit it with n_actions={self.n_actions}, or use per-arm "
                "contexts of shape (n_samples, n_actions, n_features), whose one "
                "network scores any number of arms."
            )
        # Per-arm contexts: one network (and U, buffer, posterior) for all arms.

    # ----------------------------------------------------------------- state
    def _init_state(self):
        widths = tuple(int(m) for m in np.atleast_1d(self.hidden_layer_sizes))
        if not widths or min(widths) < 1:
            raise ValueError(
                "hidden_layer_sizes must be a non-empty sequence of positive ints; got "
                f"{self.hidden_layer_sizes!r}."
            )
        check_device(self.device)  # before skorch's AssertionError or device list
        seed = int(self._rng.integers(np.iinfo(np.int32).max))
        net = initialize_net(
            make_bandit_net(
                self._n_inputs,
                self.n_actions_,
                hidden_layer_sizes=widths,
                init=self.init,
                disjoint=not self._per_arm_contexts,
                learning_rate=self.learning_rate,
                n_steps=self.n_steps,
                batch_size=self.batch_size,
                reduction=self.reduction,
                loss=self._loss,
                device=self.device,
                verbose=self.verbose,
                **self._net_options(),
            ),
            seed,
        )
        self._core = NetworkCore(
            net,
            n_features=self._n_inputs,
            per_arm=self._per_arm_contexts,
            train_seed=seed,
        )
        # The stream of the draws that shape the training data (NeuralBootstrap's
        # keep masks, NeuralPHE's perturbations), apart from select's: select draws
        # to break ties, and which scores tie depends on the device's rounding (a
        # CPU gives exact zeros where a GPU's reductions may not), so with one
        # stream a CUDA copy would train on other data than its CPU twin. The
        # rollback saves its state with the policy's attributes.
        self._data_rng = np.random.default_rng([seed, 1])
        self.net_ = net
        kind = self._precision_kind()
        self._precision = None if kind is None else self._initial_precision(kind)

    def _initial_precision(self, kind):
        """``U_0 = alpha I``; a policy with another prior overrides this hook (built
        once: a full ``U^{-1}`` is ``p x p``, 525 MB at ``p`` = 8,100)."""
        return TangentPrecision(self.n_parameters_, float(self.alpha), kind)

    # ---------------------------------------------------------------- inputs
    def _transform_contexts(self, X, *, reset):
        """Contexts as the network reads them: ``[x; x] / sqrt(2)`` on the last axis
        when the inputs are mirrored (fixed when the policy is fitted)."""
        if reset:
            self._mirror = self._mirrors_inputs(X)
        if self._mirror:
            X = np.concatenate([X, X], axis=-1) * np.float32(1 / np.sqrt(2))
        return X

    @property
    def _n_inputs(self):
        """Width of a context vector as the network reads it."""
        return self.n_features_in_ * (2 if self._mirror else 1)

    def _mirrors_inputs(self, X):
        """``mirror_inputs`` resolved on the first batch ``X``: ``"auto"`` mirrors
        for the papers' ntk network, unless ``X`` arrives mirrored already (equal
        non-zero halves, as from :class:`~skbandit.preprocessing.MirrorNormalizer`)."""
        if self.mirror_inputs != "auto":
            return bool(self.mirror_inputs)
        custom = getattr(self, "module", None) is not None or (
            getattr(self, "net", None) is not None
        )
        moments = self._context_moments
        if moments is not None and moments.count:  # standardised: the first raw row
            X = moments.shift
        half = X.shape[-1] // 2
        mirrored = (
            X.shape[-1] % 2 == 0
            and np.array_equal(X[..., :half], X[..., half:])
            and np.any(X)
        )
        return self.init == "ntk" and not custom and not mirrored

    @property
    def theta0_(self):
        """The initial parameters, centre of the penalty, shape (n_parameters_,)."""
        return self._core.theta0

    @property
    def n_parameters_(self):
        """Number ``p`` of network parameters (the length of the tangent features)."""
        return self._core.theta0.size

    @property
    def n_trainings_(self):
        """Trainings run so far."""
        return self._core.n_trainings

    @property
    def covariance_(self):
        """``U^{-1}`` (``"full"``, shape (p, p)) or its diagonal approximation (p,)."""
        if getattr(self, "_precision", None) is None:
            raise AttributeError(f"{type(self).__name__} keeps no covariance_.")
        return self._precision.covariance

    def _net_options(self):
        """Further arguments of :func:`~skbandit.networks.make_bandit_net`."""
        return {"module": self.module, "net": self.net}

    # ---------------------------------------------------------------- threads
    def _threads(self, n_rows):
        """:func:`policy_threads` for a pass of the network over ``n_rows`` rows."""
        if not self._serial_small_work or not hasattr(self, "_core"):
            return contextlib.nullcontext()
        work = n_rows * self.n_parameters_
        if not self._per_arm_contexts:  # a buffered row reads one arm's input block
            work //= self.n_actions_
        return policy_threads(work)

    def _work_scope(self, n_rows, update=False):
        """A verb's pass of the network over ``n_rows`` rounds of every arm, on as
        many torch threads as its work needs; an update's training sets its own."""
        if update:
            return super()._work_scope(n_rows, update)
        return self._threads(n_rows * self.n_actions_)

    # ------------------------------------------------------------- torch side
    @property
    def _device(self):
        """The device to compute on; ``set_params(device=...)`` takes effect here."""
        return self._core.device(self.device)

    def _tensor(self, X):
        X = np.ascontiguousarray(X)
        # torch warns that it cannot share a read-only array's memory (pandas 3's
        # arrays are read-only): a copy of it, then.
        return torch.as_tensor(
            X if X.flags.writeable else X.copy(), device=self._device
        )

    def _tensors(self, *arrays):
        """The host ``arrays`` as tensors on the device. On the host, as
        :meth:`_tensor` (their own memory); on a device, one copy through the
        core's reusable staging buffer (pinned on CUDA) rather than a pageable
        copy each."""
        device = self._device
        if device.type in _training.HOST_DEVICES or not HostStaging.holds(arrays):
            return [self._tensor(a) for a in arrays]
        return self._core._device_replay().staging.to_device(arrays, device)

    def _training_settings(self):
        return TrainingSettings(
            alpha=float(self.alpha),
            learning_rate=self.learning_rate,
            n_steps=self.n_steps,
            batch_size=self.batch_size,
            reduction=self.reduction,
            warm_start=self.warm_start,
            train_every=self.train_every,
            max_train_rounds=self.max_train_rounds,
            max_buffer_size=self.max_buffer_size,
        )

    # --------------------------------------------------------------- learning
    def _update(self, X, actions, rewards, sample_weight):
        self._learn(X, actions, rewards, sample_weight, self.n_samples_seen_)

    def _learn(self, X, actions, rewards, sample_weight, seen):
        """Learn from rows that follow the ``seen`` rounds learnt from so far."""
        with self._threads(len(self._core.buffer) + X.shape[0]):
            self._learn_rows(X, actions, rewards, sample_weight, seen)

    def _learn_rows(self, X, actions, rewards, sample_weight, seen):
        keep = self._core.learnable_rounds(seen, X.shape[0], self._training_settings())
        if keep == 0:  # past max_train_rounds: the network and U freeze
            return
        if keep < X.shape[0]:
            X, actions, rewards = X[:keep], actions[:keep], rewards[:keep]
            sample_weight = None if sample_weight is None else sample_weight[:keep]
        before, after = self._update_hooks(X, actions, rewards, sample_weight)
        # Read after the hooks: a penalty may follow the state they rebind (the
        # neural logistic bandits' lambda_t grows with the rounds just added).
        settings = self._training_settings()
        first, second, trained = self._core.update(
            self._buffer_rows(X, actions, rewards, sample_weight),
            n_seen=seen,
            n_rounds=keep,
            settings=settings,
            before=before,
            after=after,
            due=self._training_due(seen, keep),
            targets=self._training_targets(),
        )
        if trained and self.verbose:
            print(
                f"[{type(self).__name__}] round {seen + keep}: objective "
                f"{self._core.last_objective:.6g} on {len(self._core.buffer)} rows"
            )
        self._commit_update(first, second)

    def _training_due(self, n_seen, n_new):
        """Whether this update trains; ``None`` follows ``train_every``."""
        return None

    def _training_targets(self):
        """A map from the grown buffer to the targets fitted, or ``None`` (stored)."""
        return None

    def _buffer_rows(self, X, actions, rewards, sample_weight):
        """``(X, actions, targets, weights)`` rows the replay buffer gains."""
        w = np.ones(X.shape[0], np.float32) if sample_weight is None else sample_weight
        return (
            self._chosen_features(X, actions),
            actions,
            rewards.astype(np.float32),
            w.astype(np.float32),
        )

    def _update_hooks(self, X, actions, rewards, sample_weight):
        """The callables the core runs before and after training (or ``None``)."""
        if self._precision is None:
            return None, None
        if self._covariance_before_training:
            return functools.partial(
                self._precision_update, X, actions, sample_weight
            ), None
        return None, lambda buffer: self._precision_update(X, actions, sample_weight)

    def _precision_update(self, X, actions, sample_weight):
        """The pulled arms' ``w phi phi^T`` at the current parameters, to add to ``U``
        in place once the update commits (:meth:`TangentPrecision.increment`)."""
        weights = () if sample_weight is None else (sample_weight.astype(np.float32),)
        # the row, its arm (and weight) in one copy
        Xt, actions_t, *weights = self._tensors(X, actions, *weights)
        return self._precision.increment(
            self.net_.module_,
            Xt,
            actions_t,
            weights[0] if weights else None,
            host_actions=actions,
        )

    def _commit_update(self, before, after):
        """Adopt what the hooks computed, once the core has committed: a new ``U``,
        or the increment of :meth:`_precision_update`, written now."""
        new = before if before is not None else after
        if isinstance(new, TangentPrecision):
            self._precision = new
        elif new is not None:
            new()

    # --------------------------------------------------------------- deciding
    def _mean_and_sigma(self, X, with_sigma=True):
        """Network outputs and ``sigma = sqrt(alpha phi^T U^{-1} phi)`` per arm."""
        module = self.net_.module_
        (Xt,) = self._tensors(X)
        with torch.no_grad():
            if not (with_sigma and self._precision is not None):
                return to_numpy(module(Xt)).astype(np.float64), None
            f, q = self._precision.quadratic(module, Xt)
            # outputs and forms in one copy to the host (one wait on a GPU)
            both = to_numpy(torch.stack([f.to(torch.float64), q.to(torch.float64)]))
        sigma = np.sqrt(self.alpha * np.maximum(both[1], 0.0))
        return both[0], sigma

    @classmethod
    def _get_test_params(cls):
        return [
            estimator_check_params(
                n_actions=3, hidden_layer_sizes=(6,), n_steps=3, random_state=0
            )
        ]


class EnsembleScoresMixin:
    """Scores of a batch of networks: each round plays the greedy arm of one member
    drawn uniformly (bootstrapped networks, ensemble sampling).

    :meth:`predict_scores` is the members' mean and ``return_std`` their spread;
    ``predict_action_proba`` is exact, the mean of the members' greedy laws.
    """

    def _net_options(self):
        return {"n_members": self.n_models}  # one stacked batch of networks

    def _all_scores(self, X):
        """Every member's scores, shape (n_members, n_samples, n_actions)."""
        return to_numpy(self.net_.module_(self._tensor(X)).detach()).astype(np.float64)

    def _scores(self, X, return_std):
        scores = self._all_scores(X)
        return scores.mean(0), (scores.std(0) if return_std else None)

    def _score_sampler(self, X):
        scores, rows = self._all_scores(X), np.arange(X.shape[0])
        # j_t ~ Uniform over the members, independently per round.
        return lambda rng: scores[rng.integers(scores.shape[0], size=rows.size), rows]

    def _decide_free(self, X, mask, with_proba):
        return self._closed_form_decision(X, mask, with_proba)

    def _action_proba_free(self, X, mask):
        # Exact: the mean over members of each member's greedy distribution.
        return np.mean([greedy_proba(s, mask) for s in self._all_scores(X)], axis=0)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.policy_tags.exact_action_proba = True
        return tags
