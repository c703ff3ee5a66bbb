"""The policy base class: every public verb is implemented once, here.

A policy fills in the hooks below, and overrides nothing else of the base (a test walks
every policy's classes to hold this); no policy of skbandit overrides a public verb.
A class that must override one says which and why in ``_overridden_verbs``, a dict
from the verb to its reason; the test refuses any other override of a verb. A family
base (the public ones are in
:mod:`skbandit.policies.base`) may add hooks of its own for its policies, listed in
its docstring.

Required:

``_init_state()``
    create the prior state once ``n_features_in_``, ``n_actions_`` and the context form
    are known;
``_update(X, actions, rewards, sample_weight)``
    learn from one batch (one delayed-feedback update); rebind attributes, or write
    in place only after the last point where it can fail: the call's snapshot
    restores bindings, not arrays. A part written in place earlier holds its
    checkpoint (the rollback protocol of ``skbandit._base._rollback``);
``_scores(X, return_std)``
    the model's expected reward per arm (and its exploration std).

Optional, with the base's default:

``_score_sampler(X)``
    the one sampling hook: a function of an RNG (or of ``None``, for the exact law of a
    deterministic policy) returning one draw of the scores ``select`` maximises (a
    posterior draw, an upper confidence bound...). The expensive part (a network's
    forward pass, a Cholesky factor) runs in ``_score_sampler`` itself, once for
    all the Monte Carlo draws of ``predict_action_proba``. Default: the means;
``_forced_actions(X, mask)``
    forced-exploration (burn-in) rounds of a ``select`` batch, such as a warm-up over
    the arms or an experimental design on their features. Default: none;
``_exploration_rates(n_rows)``
    the probability of a uniformly random arm per round (the epsilon-mixture).
    Default: none;
``_decide_free(X, mask, with_proba)`` and ``_action_proba_free(X, mask)``
    the choice (and, ``with_proba``, its law) and the law alone of the rounds that
    are not forced, where the law has a closed form (ensembles: the mean of the
    members' greedy laws; inverse-gap weighting; the uniform policy): override both.
    Default: the sampler's argmax, epsilon-mixed; its law exact for deterministic
    scores, else a Monte Carlo estimate over ``_score_sampler``, from the same
    sampler as the arms;
``_decide(X, mask, with_proba)`` and ``_action_proba(X, mask)``
    the decision and its law, for a family that decides other than by the argmax of
    sampled scores (the slates' oracle). Default: forced rounds, then
    ``_decide_free``. ``_select(X, mask)`` is ``_decide`` without the law;
``_greedy_actions(scores)``
    ``predict``'s deterministic choice from ``predict_scores``. Default: the argmax
    (first on ties); the slates: the oracle's slate;
``_off_policy_value(X, actions, rewards, propensities)``
    ``score``'s estimate of the policy's value on logged data. Default:
    self-normalised IPS over ``predict_action_proba``; the slates: the weighted
    pseudo-inverse estimator;
``_work_scope(n_rows, update=False)``
    the context a verb's work over ``n_rows`` rows runs in (``update``: learning).
    Default: the BLAS threads of small dense work (``_blas_small_work``); the neural
    family: the torch threads of a network pass (one thread for small work);
``_transform_contexts(X, reset)``
    validated contexts as the model reads them (the neural family's mirrored inputs).
    Default: unchanged;
``_check_sparse_contexts(X, reset)``
    validate ``scipy.sparse`` contexts, which only the policies on scikit-learn
    estimators accept. Default: refused, with an error naming those;
``_add_arms(n_new)``
    give new arms the prior state when ``set_params(n_actions=K + 1)`` grows a fitted
    policy. Default: refused.

Class flags: ``_context_dtype`` (the dtype contexts are converted to, float64),
``_samples_scores`` (the sampled scores are random even where an epsilon-mixture gives
the exploration, False), ``_fails_cleanly`` (the online fast path may skip the
snapshot, False), ``_standardize_auto`` (``standardize="auto"`` standardises the
contexts online, False), ``_n_proba_draws`` (256), ``_batched_draws`` (the sampler's
function also takes ``n_draws`` and draws a stack at once, False),
``_blas_small_work`` (a verb's small dense numpy work runs on the BLAS threads of
:mod:`skbandit.utils.threads`, one by default, False) and ``_blas_history`` (an
update's work grows with the rows seen, False). A slate policy says so with the
``slate`` policy tag (:class:`PolicyTags`), set by its family base
(:class:`~skbandit.policies.base.SlatePolicyMixin`). The tag mixins
:class:`DeterministicSelectMixin` (an index policy: exact action probabilities) and
:class:`ExactPartialFitMixin` (chunks of feedback sum to the whole) set the others.

Parameters are constrained (``_parameter_constraints``) with scikit-learn's
constraint types, public in :mod:`skbandit.utils.validation`.

Helpers a hook may call: ``self._arm_features(X)`` (every arm's context rows,
``(n, n_actions, d)``, a view for shared contexts), ``self._chosen_features(X,
actions)`` (the pulled arms' rows), ``self._per_arm_contexts`` (the context form)
and ``self._rng`` (the policy's ``numpy`` Generator, the one ``select`` draws from).

The decision hooks and their defaults live in ``skbandit._base._decision``, the one
decision path of ``select`` (with or without propensities) and ``predict_action_proba``;
``_work_scope`` and the helpers in ``skbandit._base._helpers``.

The base knows nothing of models: no blocks, networks or training schedules.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from abc import ABCMeta, abstractmethod
from dataclasses import fields
from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state, metadata_routing
from sklearn.utils.validation import check_is_fitted

from skbandit._base._arms import grow_arms
from skbandit._base._decision import DecisionPath
from skbandit._base._helpers import PolicyHelpers
from skbandit._base._propensities import chosen_propensities
from skbandit._dask import dask_dispatch
from skbandit.evaluation._ope import snips_value
from skbandit.exceptions import NumericalError
from skbandit.utils._array_checks import _missing_rewards_error
from skbandit.utils._fast_path import contexts_fast_ok, feedback_fast_ok
from skbandit.utils._param_validation import Interval
from skbandit.utils._standardize import standardized
from skbandit.utils._tags import (
    BanditTags,
    DeterministicSelectMixin,
    ExactPartialFitMixin,
    PolicyTags,
    is_policy,
    is_slate_policy,
)
from skbandit.utils.validation import check_policy_call

__all__ = [
    "BanditTags",
    "BasePolicy",
    "DeterministicSelectMixin",
    "ExactPartialFitMixin",
    "PolicyTags",
    "is_policy",
]


class BasePolicy(DecisionPath, PolicyHelpers, BaseEstimator, metaclass=ABCMeta):
    """Base class of every skbandit policy.

    Implements ``fit``, ``partial_fit``, ``select``, ``predict_scores``, ``predict``,
    ``predict_action_proba`` and ``score`` once; subclasses fill in private hooks.
    Contexts are either shared, of shape ``(n_samples, n_features)``, or per-arm, of
    shape ``(n_samples, n_actions, n_features)``; the form is fixed by the first call.
    Any call that raises leaves the policy exactly as it was.

    Parameters
    ----------
    n_actions : int or None
        Number of arms. ``None`` infers it in :meth:`fit` from the actions or from
        per-arm contexts.
    random_state : int, RandomState instance or None
        Seeds the policy's random state, materialised once and carried across
        ``partial_fit`` calls and pickles.

    Examples
    --------
    A policy is a small subclass filling in the hooks; this one scores every arm 0:

    >>> import numpy as np
    >>> from skbandit.base import BasePolicy
    >>> class Indifferent(BasePolicy):
    ...     def __init__(self, n_actions=None, *, random_state=None):
    ...         self.n_actions, self.random_state = n_actions, random_state
    ...     def _init_state(self):
    ...         pass
    ...     def _update(self, X, actions, rewards, sample_weight):
    ...         pass
    ...     def _scores(self, X, return_std):
    ...         return np.zeros((X.shape[0], self.n_actions_)), None
    >>> Indifferent(n_actions=3, random_state=0).select(np.zeros((2, 4))).shape
    (2,)
    """

    # `actions` fills sklearn's `y` slot and is always passed positionally.
    __metadata_request__fit = {"actions": metadata_routing.UNUSED}
    __metadata_request__partial_fit = {"actions": metadata_routing.UNUSED}
    __metadata_request__score = {"actions": metadata_routing.UNUSED}

    _parameter_constraints: dict = {
        "n_actions": [Interval(Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
    }

    #: dtype contexts are converted to.
    _context_dtype = np.float64
    #: A verb's small dense numpy work runs on the BLAS threads of
    #: :mod:`skbandit.utils.threads` (one by default), for families on numpy models.
    _blas_small_work = False
    #: An update's dense work grows with the rows seen (refits over the history).
    _blas_history = False

    @abstractmethod
    def __init__(self, n_actions=None, *, random_state=None):
        self.n_actions = n_actions
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags = BanditTags(**{f.name: getattr(tags, f.name) for f in fields(tags)})
        tags.estimator_type = "policy"
        tags.target_tags.required = True
        return tags

    # ------------------------------------------------------------------ learning
    @dask_dispatch
    def fit(self, X, actions, rewards=None, *, sample_weight=None, action_mask=None):
        """Reset the policy, then learn from a batch of logged feedback.

        A slate policy (the ``slate`` policy tag) learns from slates: each round's
        actions and rewards are ``(slate_size,)`` rows.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or \
                (n_samples, n_actions, n_features)
            Contexts: shared, or one vector per arm.
        actions : array-like of shape (n_samples,) or (n_samples, slate_size)
            Pulled arms, integers in ``[0, n_actions)``; a slate policy's distinct
            arms shown in each round.
        rewards : array-like of shape (n_samples,) or (n_samples, slate_size)
            Observed rewards of the pulled arms (required: ``None`` raises); a slate
            policy's score of each shown arm, column by column, ``NaN`` where
            unobserved.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the rounds (e.g. ``1 / propensities``).
        action_mask : array-like of shape (n_samples, n_actions), default=None
            Arms that were available; a pulled (or shown) arm must be available.

        Returns
        -------
        self : object
            Fitted policy.
        """
        if rewards is None:  # scikit-learn's Pipeline or check_estimator: fit(X, y)
            raise _missing_rewards_error(type(self).__name__)
        self._validate_params()
        return self._partial_fit(
            X, actions, rewards, sample_weight, action_mask, reset=True, infer=True
        )

    def partial_fit(self, X, actions, rewards, *, sample_weight=None, action_mask=None):
        """Learn from one batch of feedback without forgetting earlier ones.

        A batch of any size is one delayed-feedback update: the rounds in it were
        all chosen before any of their rewards arrived.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or \
                (n_samples, n_actions, n_features)
            Contexts: shared, or one vector per arm.
        actions : array-like of shape (n_samples,) or (n_samples, slate_size)
            Pulled arms, integers in ``[0, n_actions)``; a slate policy's distinct
            arms shown in each round, as :meth:`select` returns them.
        rewards : array-like of shape (n_samples,) or (n_samples, slate_size)
            Observed rewards of the pulled arms; a slate policy's score of each shown
            arm, column by column, ``NaN`` where unobserved.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the rounds.
        action_mask : array-like of shape (n_samples, n_actions), default=None
            Arms that were available; a pulled (or shown) arm must be available.

        Returns
        -------
        self : object
            Fitted policy.
        """
        first_call = not self._is_initialized()
        if first_call:
            self._validate_params()
        return self._partial_fit(
            X, actions, rewards, sample_weight, action_mask, reset=first_call
        )

    def _partial_fit(
        self, X, actions, rewards, sample_weight, action_mask, *, reset, infer=False
    ):
        if (
            self._fails_cleanly
            and not reset
            and sample_weight is None
            and action_mask is None
            and contexts_fast_ok(self, X, finite=False)
            and feedback_fast_ok(actions, rewards, X.shape[0], self.n_actions_)
            and not is_slate_policy(self)  # 1-D actions are a slate's error
        ):
            # The online fast path: no snapshot, as the hooks write only once their
            # own finiteness checks pass (a NaN or inf in X fails them). A failure
            # is redone validated below, for the message that names the bad input.
            moments = self._context_moments
            try:
                rows = standardized(self, X, reset=False, learn=True)
                self._apply_feedback(
                    self._transform_contexts(rows, reset=False),
                    actions.astype(np.int64, copy=False),
                    rewards,
                )
                return self
            except NumericalError:
                self._context_moments = moments
        with self._unchanged_on_error():
            X, n_actions, _, feedback = self._validated(
                X, reset, action_mask, (actions, rewards, sample_weight), infer
            )
            if reset:
                self._initialize(X, n_actions)
            self._apply_feedback(X, *feedback)
        return self

    def _apply_feedback(self, X, actions, rewards, sample_weight=None):
        """``_update`` on validated feedback, then the counts (which cannot fail)."""
        if X.shape[0]:
            with self._work_scope(X.shape[0], update=True):
                self._update(X, actions, rewards, sample_weight)
        self.n_samples_seen_ = self.n_samples_seen_ + X.shape[0]
        if actions.size == 1:  # the online loop's round: no bincount
            counts = self.action_counts_.copy()
            counts[actions.item()] += 1
        else:
            counts = self.action_counts_ + np.bincount(
                actions.ravel(), minlength=self.n_actions_
            )
        self.action_counts_ = counts

    # ----------------------------------------------------------------- deciding
    @dask_dispatch
    def select(self, X, *, action_mask=None, return_propensities=False):
        """Choose an arm (or a slate of arms) for each round, exploring.

        The only random verb: each call advances the policy's random state, and nothing
        else. Works before any feedback, from the prior. A slate policy (the ``slate``
        policy tag) chooses ``slate_size`` distinct arms per round through its oracle,
        also for ``slate_size=1``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or \
                (n_samples, n_actions, n_features)
            Contexts of the rounds to decide.
        action_mask : array-like of shape (n_samples, n_actions), default=None
            Arms available in each round; a masked arm is never chosen (a slate
            policy needs ``slate_size`` available arms per round).
        return_propensities : bool, default=False
            Also return the probability that the policy, in its current state,
            picks each chosen arm: :meth:`predict_action_proba`'s, exact where it
            has a closed form, else its Monte Carlo estimate, never 0 for a drawn
            arm (:func:`~skbandit.evaluation.chosen_propensities`). The arms are
            the same as without it. A deterministic policy's propensities are 1:
            logs it writes evaluate off-policy only policies that play its arms. A
            slate policy's are each chosen arm's inclusion probability.

        Returns
        -------
        actions : ndarray of shape (n_samples,) or (n_samples, slate_size), dtype int64
            The chosen arms; a slate policy's distinct arms in the oracle's order
            (top-K: best first).
        propensities : ndarray of shape (n_samples,) or (n_samples, slate_size)
            Probability of each chosen arm; only with ``return_propensities=True``.
        """
        if (
            self._fails_cleanly
            and action_mask is None
            and self._is_initialized()
            and contexts_fast_ok(self, X, finite=False)
        ):  # the hooks fail before they draw (on a NaN score too): no snapshot
            try:
                rows = standardized(self, X, reset=False, learn=False)
                rows = self._transform_contexts(rows, reset=False)
                return self._decided(rows, None, return_propensities)
            except (ValueError, ArithmeticError, RuntimeWarning):
                pass  # redone validated, for the message that names the bad input
        with self._unchanged_on_error():
            reset = not self._is_initialized()
            if reset:
                self._validate_params()
            X, n_actions, mask, _ = self._validated(X, reset, action_mask)
            if reset:
                self._initialize(X, n_actions)
            return self._decided(X, mask, return_propensities)

    def _decided(self, X, mask, return_propensities):
        """``select``'s answer on validated rows: the arms, and their propensities
        from the law the arms were drawn from, in the same pass."""
        with self._work_scope(X.shape[0]):
            if not return_propensities:
                return self._select(X, mask).astype(np.int64, copy=False)
            actions, proba, n_draws = self._decide(X, mask, True)
        actions = actions.astype(np.int64, copy=False)
        return actions, chosen_propensities(proba, actions, n_draws=n_draws)

    @dask_dispatch
    def predict_scores(self, X, *, return_std=False):
        """Expected reward of every arm under the current model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or \
                (n_samples, n_actions, n_features)
            Contexts.
        return_std : bool, default=False
            Also return the exploration standard deviation of each arm's score
            (zeros for policies that explore without one).

        Returns
        -------
        scores : ndarray of shape (n_samples, n_actions)
            Expected rewards.
        std : ndarray of shape (n_samples, n_actions)
            Exploration standard deviations; only with ``return_std=True``.
        """
        check_is_fitted(self)
        X = self._validated(X, False)[0]
        with self._work_scope(X.shape[0]):
            mean, std = self._scores(X, return_std)
        if return_std:
            return mean, (np.zeros_like(mean) if std is None else std)
        return mean

    def predict(self, X):
        """Greedy arm of each round, ``argmax predict_scores`` (deterministic).

        A slate policy's greedy slate: its oracle on :meth:`predict_scores`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or \
                (n_samples, n_actions, n_features)
            Contexts.

        Returns
        -------
        actions : ndarray of shape (n_samples,) or (n_samples, slate_size), dtype int64
            The arm with the highest expected reward (first one on ties); a slate
            policy's slate of the expected scores (ties to the lower index).
        """
        return self._greedy_actions(self.predict_scores(X))

    @dask_dispatch
    def predict_action_proba(self, X, *, action_mask=None):
        """Probability that :meth:`select` picks each arm, given the current state.

        Exact for policies with a closed form (see the ``exact_action_proba`` policy
        tag); otherwise a Monte Carlo estimate over ``_n_proba_draws`` (256) draws
        from a fixed seed, so the result is a deterministic function of the state and
        the policy's own random state is not advanced. For a slate policy, each arm's
        probability of being in the slate.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or \
                (n_samples, n_actions, n_features)
            Contexts.
        action_mask : array-like of shape (n_samples, n_actions), default=None
            Arms available in each round.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_actions)
            Rows sum to one (to ``slate_size`` for a slate policy); masked arms have
            probability zero.
        """
        check_is_fitted(self)
        X, _, mask, _ = self._validated(X, False, action_mask)
        with self._work_scope(X.shape[0]):
            return self._action_proba(X, mask)

    def score(self, X, actions, rewards=None, *, propensities=None):
        """Self-normalised IPS value of the policy on logged data.

        The default score of :class:`~sklearn.model_selection.GridSearchCV`; enable
        metadata routing so that ``rewards`` and ``propensities`` reach it.

        A slate policy's value is Swaminathan et al. (2017)'s weighted pseudo-inverse
        estimate, for rewards that add up over the slate's arms (top-K), or over its
        (position, arm) pairs when the oracle weighs positions
        (:class:`~skbandit.oracles.PositionBased`: the ranked form); see
        :func:`~skbandit.evaluation.estimate_slate_value`. A cascade's reward does
        not add up (a click hides the arms after it), so the estimator would be
        biased: with a :class:`~skbandit.oracles.Cascade` oracle this raises
        ``ValueError``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or \
                (n_samples, n_actions, n_features)
            Logged contexts.
        actions : array-like of shape (n_samples,) or (n_samples, slate_size)
            Logged actions; a slate policy's logged slates, position 0 first.
        rewards : array-like of shape (n_samples,) or (n_samples, slate_size)
            Logged rewards; a slate policy's slate rewards, or the scores of the
            slate's arms (summed).
        propensities : array-like of shape (n_samples,), (n_samples, D, D) or (D, D)
            Probability the logging policy gave each logged action. A slate
            policy's are the logging policy's pairwise inclusion probabilities: of
            arms (``D = n_actions``), or of (position, arm) pairs for a
            position-based oracle (``D = slate_size * n_actions``; see
            :func:`~skbandit.evaluation.uniform_slate_propensities` and its
            ``ranked``).

        Returns
        -------
        value : float
            Estimated expected reward (a slate policy's: slate reward) per round of
            this policy.
        """
        if rewards is None or propensities is None:
            raise ValueError(
                "score needs rewards and propensities. In GridSearchCV, enable "
                "metadata routing (sklearn.set_config(enable_metadata_routing=True)) "
                "and call set_score_request(rewards=True, propensities=True)."
            )
        with self._unchanged_on_error():  # caches that predict_action_proba fills
            return self._off_policy_value(X, actions, rewards, propensities)

    def _off_policy_value(self, X, actions, rewards, propensities):
        """``score``'s estimate: self-normalised IPS over ``predict_action_proba``."""
        proba = self.predict_action_proba(X)
        return snips_value(proba, actions, rewards, propensities)

    # ------------------------------------------------------------ default hooks
    @abstractmethod
    def _init_state(self):
        """Create the prior state; ``n_features_in_`` and ``n_actions_`` are set."""

    @abstractmethod
    def _update(self, X, actions, rewards, sample_weight):
        """Learn from one validated batch. Must not mutate state before it can fail."""

    @abstractmethod
    def _scores(self, X, return_std):
        """Return ``(mean, std or None)``, each of shape (n_samples, n_actions)."""

    #: Whether ``standardize="auto"`` standardises contexts (``utils._standardize``).
    _standardize_auto, _context_moments = False, None
    #: True where ``_update`` and ``_select``'s hooks neither rebind an attribute nor
    #: draw from the RNG before their last possible failure: validated one-shape
    #: calls (the online loop) then skip the snapshot of ``_unchanged_on_error``.
    _fails_cleanly = False
    #: The public verbs this class overrides, each with its reason (see the module
    #: docstring): empty in the base, declared by the class that overrides.
    _overridden_verbs: dict = {}

    # ------------------------------------------------------------------ helpers
    def _is_initialized(self):
        return hasattr(self, "n_actions_")

    def _initialize(self, X, n_actions):
        self.n_actions_ = n_actions
        self._per_arm_contexts = X.ndim == 3
        # A numpy Generator seeded once from random_state: its state snapshot costs
        # 1 us (a RandomState's costs 26 us, more than a whole LinUCB round).
        seed = check_random_state(self.random_state).randint(np.iinfo(np.int32).max)
        self._rng = np.random.default_rng(seed)
        self.n_samples_seen_ = 0
        self.action_counts_ = np.zeros(n_actions, dtype=np.int64)
        self._init_state()

    def _add_arms(self, n_new):
        """Give ``n_new`` new arms the prior state (``set_params(n_actions=K + 1)``
        on a fitted policy); rebind, never write in place. Opt-in: refused here."""
        raise ValueError(
            f"{type(self).__name__} cannot add arms once fitted; refit it with "
            f"n_actions={self.n_actions} (arms can leave through action_mask)."
        )

    def _validated(self, X, reset, action_mask=None, feedback=None, infer=False):
        """The call's inputs, validated in one visit to ``utils.validation``, then
        as the model reads them; arms that ``set_params`` added join first."""
        if not reset:
            grow_arms(self)
        X, n_actions, mask, feedback = check_policy_call(
            self,
            X,
            reset=reset,
            action_mask=action_mask,
            feedback=feedback,
            infer=infer,
        )
        X = standardized(self, X, reset=reset, learn=feedback is not None)
        return self._transform_contexts(X, reset=reset), n_actions, mask, feedback

    def _transform_contexts(self, X, *, reset):
        """Validated contexts as the model reads them; ``reset`` on the first call."""
        return X

    def _check_sparse_contexts(self, X, *, reset):
        """Refuse ``scipy.sparse`` contexts; estimator-based policies accept them."""
        raise TypeError(
            f"{type(self).__name__} takes dense contexts; got a scipy.sparse "
            f"{type(X).__name__}. The policies on scikit-learn estimators (SquareCB, "
            "FALCON, BootstrappedTS, EpsilonGreedy(estimator=...)) accept sparse "
            "contexts wherever their estimator does (e.g. SGDRegressor, Ridge); "
            "otherwise densify them with X.toarray()."
        )
