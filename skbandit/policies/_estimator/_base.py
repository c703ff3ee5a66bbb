"""What every policy on a scikit-learn estimator shares: arms to models, and learning.

:class:`EstimatorModelMixin` turns contexts and pulled arms into the rows the
estimator's clones learn from and predict on, and updates them online (the
estimator's ``partial_fit``) or by refits from the logged history on a doubling
schedule (estimators without ``partial_fit``, and offline policies such as FALCON).
:class:`BaseEstimatorPolicy` adds the closed-form action law that ``select`` draws
from and ``predict_action_proba`` returns.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from sklearn.base import clone
from sklearn.linear_model import Ridge
from sklearn.utils import check_random_state, get_tags
from sklearn.utils.validation import validate_data

from skbandit.base import BasePolicy
from skbandit.exceptions import NumericalError
from skbandit.policies._estimator._reward_models import RewardModels, stack_rows
from skbandit.utils._docstrings import Substitution
from skbandit.utils._param_validation import HasMethods, StrOptions

__all__ = ["BaseEstimatorPolicy", "EstimatorModelMixin", "draw_from"]


def draw_from(proba: NDArray, rng: np.random.Generator) -> NDArray[np.int64]:
    """One arm per row drawn from the rows of ``proba`` (one uniform per row)."""
    cumulative = np.cumsum(proba, axis=1)
    u = rng.random(proba.shape[0])[:, None] * cumulative[:, -1:]
    return np.argmax(cumulative > u, axis=1).astype(np.int64)


def _one_hot(arms: NDArray, n_arms: int) -> NDArray:
    out = np.zeros((arms.shape[0], n_arms))
    out[np.arange(arms.shape[0]), arms] = 1.0
    return out


class EstimatorModelMixin:
    """The reward model of a policy on a scikit-learn regressor.

    Shared contexts ``(n, d)`` give each arm its own clone of the estimator by
    default; per-arm contexts ``(n, K, d)`` give one clone learning from every
    pulled arm's row. ``arm_models`` chooses the other where wanted: one model of
    shared contexts learns from ``[x, one_hot(arm)]`` (it cannot gain arms), one
    model per arm of per-arm contexts learns from its own arm's rows.

    The host policy has the parameters ``estimator`` and, optionally,
    ``arm_models``; it calls ``_init_models``, ``_update_models``,
    ``_model_predictions`` and ``_grow_models`` from its hooks. The family's hooks,
    each with a default here: ``_default_estimator()`` (the regressor of
    ``estimator=None``), ``_arm_models()`` (one model per arm or one shared),
    ``_learns_online(estimator)``, ``_refit_due(n_old, n_new)`` and
    ``_refit_start(models)`` (the refit schedule and window),
    ``_bootstrap_weights(n_rows)`` and ``_n_replicas`` (bootstrap replicas).
    """

    _blas_small_work = True  # the models' products; OpenMP is limited apart

    #: Bootstrap replicas of the models (BootstrappedTS has ``n_models``).
    _n_replicas = 1

    def _default_estimator(self):
        """The regressor used when ``estimator=None``."""
        return Ridge()

    def _arm_models(self):
        return "auto"

    def _one_model(self) -> bool:
        choice = self._arm_models()
        if choice == "auto":
            return self._per_arm_contexts
        return choice == "shared"

    def _template(self):
        """A clone of the estimator, its unset random states seeded from the policy's.

        A policy with an integer ``random_state`` is then reproducible also with
        estimators that draw (SGDRegressor shuffles, forests bootstrap); a policy
        with ``random_state=None`` leaves them unseeded.
        """
        template = clone(
            self._default_estimator() if self.estimator is None else self.estimator
        )
        if self.random_state is None:
            return template
        seeds = check_random_state(self.random_state)
        unset = {
            name: int(seeds.randint(np.iinfo(np.int32).max))
            for name, value in sorted(template.get_params(deep=True).items())
            if (name == "random_state" or name.endswith("__random_state"))
            and value is None
        }
        return template.set_params(**unset)

    def _learns_online(self, estimator) -> bool:
        """Whether updates call ``partial_fit``; otherwise refits on a schedule."""
        return hasattr(estimator, "partial_fit")

    def _refit_due(self, n_old: int, n_new: int) -> bool:
        """Refit when the rounds seen cross a power of two: O(log T) refits."""
        return n_new.bit_length() > n_old.bit_length()

    def _refit_start(self, models: RewardModels) -> int:
        """First history row a refit learns from (all of them by default)."""
        return 0

    def _bootstrap_weights(self, n_rows: int):
        """Each replica's bootstrap weights of ``n_rows`` rows; None: no bootstrap."""
        return None

    # ------------------------------------------------------------------ state
    def _init_models(self):
        template = self._template()
        _check_regressor(template)
        self._online = self._learns_online(template)
        n_blocks = 1 if self._one_model() else self.n_actions_
        self._models = RewardModels(
            template, n_blocks, self._n_replicas, keep_history=not self._online
        )

    @property
    def last_refit_round_(self):
        """Feedback rounds the reward models had seen when they last learned.

        An estimator with ``partial_fit`` learns at every ``partial_fit``, so this
        is ``n_samples_seen_``; one refit on a schedule (FALCON's epochs, the
        doubling schedule of an estimator without ``partial_fit``) learns nothing
        between refits: rounds logged since then wait for the next one.
        """
        if not hasattr(self, "_models"):
            raise AttributeError(f"{type(self).__name__} keeps no reward model yet.")
        return self.n_samples_seen_ if self._online else self._models.n_rows_at_refit

    @property
    def n_refits_(self):
        """Refits of the reward models from the logged history (0 when online)."""
        if not hasattr(self, "_models"):
            raise AttributeError(f"{type(self).__name__} keeps no reward model yet.")
        return self._models.n_refits

    def _grow_models(self, n_new: int):
        if not self._one_model():
            self._models = self._models.grown(n_new)
        elif not self._per_arm_contexts:
            raise ValueError(
                f"{type(self).__name__} with arm_models='shared' learns from "
                "[x, one_hot(arm)] of shared contexts, whose width is fixed: it cannot "
                "add arms. Use arm_models='per_arm' (one model per arm) or per-arm "
                "contexts of shape (n_samples, n_actions, n_features)."
            )

    def _training_rows(self, X, actions):
        """Rows the models learn from, and the block (model) of each."""
        n = X.shape[0]
        if self._one_model():
            return self._one_model_rows(X, actions), np.zeros(n, dtype=np.int64)
        rows = X if X.ndim == 2 else X[np.arange(n), actions]
        return rows, actions

    def _one_model_rows(self, X, arms):
        if X.ndim == 3:
            return X[np.arange(X.shape[0]), arms]
        encoded = _one_hot(arms, self.n_actions_)
        if sparse.issparse(X):
            return sparse.hstack([X, encoded], format="csr")
        return np.hstack([X, encoded])

    def _update_models(self, X, actions, rewards, sample_weight):
        rows, blocks = self._training_rows(X, actions)
        n = X.shape[0]
        models = self._models
        if self._online:
            draws = [self._bootstrap_weights(n) for _ in range(self._n_replicas)]
            weights = [
                _times(sample_weight, draw) for draw in draws
            ]  # None where both are
            models = models.partial_fitted(rows, blocks, rewards, weights)
        else:
            weights = np.ones(n) if sample_weight is None else sample_weight
            models = models.appended(rows, blocks, rewards, weights)
            n_old = int(self.n_samples_seen_)
            if self._refit_due(n_old, n_old + n):
                models = models.refitted(
                    since=self._refit_start(models),
                    replica_weights=self._bootstrap_weights,
                )
        self._models = models  # rebound last: a failed fit leaves the policy as it was

    def _model_predictions(self, X):
        """Predictions ``(n_replicas, n, n_actions)`` and a fitted mask per arm."""
        n, n_arms = X.shape[0], self.n_actions_
        if not self._one_model():
            if X.ndim == 3:
                return self._models.predict(
                    lambda block: (X[:, block], [block]), n, n_arms
                )
            return self._models.predict(lambda block: (X, [block]), n, n_arms)
        if X.ndim == 3:  # arm-major rows: arm k's n rows, then arm k + 1's
            rows = X.transpose(1, 0, 2).reshape(n_arms * n, X.shape[2])
        else:
            rows = self._one_model_rows(
                stack_rows([X] * n_arms), np.repeat(np.arange(n_arms), n)
            )
        arms = np.arange(n_arms)
        return self._models.predict(lambda block: (rows, arms), n, n_arms)

    def _check_sparse_contexts(self, X, *, reset):
        if not reset and self._is_initialized() and self._per_arm_contexts:
            raise ValueError(
                f"{type(self).__name__} was fitted on per-arm contexts of shape "
                "(n_samples, n_actions, n_features); got a sparse matrix."
            )
        return validate_data(
            self, X, reset=reset, accept_sparse="csr", dtype=self._context_dtype
        )

    def _estimator_accepts_sparse(self) -> bool:
        try:
            estimator = self.estimator
            if estimator is None:
                estimator = self._default_estimator()
            return bool(get_tags(estimator).input_tags.sparse)
        except (AttributeError, TypeError, ValueError):  # no tags: say no
            return False


def _check_regressor(estimator):
    """Refuse an estimator whose tags say it is not a regressor.

    The policies read ``predict`` as each arm's expected reward: a classifier's
    labels or a clusterer's cluster indices are no such thing. An estimator
    without scikit-learn tags (a duck-typed regressor) is accepted.
    """
    try:
        kind = get_tags(estimator).estimator_type
    except (AttributeError, TypeError, ValueError):
        return
    if kind not in (None, "regressor"):
        raise ValueError(
            f"estimator must be a regressor: its predict is read as each arm's "
            f"expected reward. Got {type(estimator).__name__}, a {kind} (its "
            "predict returns labels). For 0/1 rewards use a regressor (Ridge, "
            "SGDRegressor, HistGradientBoostingRegressor...): its prediction is the "
            "probability of a 1."
        )


def _times(sample_weight, draw):
    if sample_weight is None:
        return draw
    return sample_weight if draw is None else sample_weight * draw


#: Docstring text shared by the family, filled by :class:`Substitution`.
FAMILY_DOCS = Substitution(
    arms_and_contexts="""Shared contexts ``(n, d)`` give each arm its own clone of the
estimator; per-arm contexts ``(n, K, d)`` give one clone learning from the pulled arms'
rows (``arm_models`` chooses the other). ``scipy.sparse`` shared contexts are
accepted wherever the estimator accepts them, mixed with dense batches.

Read more in the :ref:`User Guide <estimators>`.

Parameters
----------
n_actions : int or None, default=None
    Number of arms; ``None`` infers it in ``fit``.""",
    arm_models="""arm_models : {"auto", "per_arm", "shared"}, default="auto"
    ``"per_arm"``: one model per arm; ``"shared"``: one model of all arms (of
    ``[x, one_hot(arm)]`` for shared contexts, which then cannot gain arms);
    ``"auto"``: per arm for shared contexts, shared for per-arm contexts.""",
    fitted_attributes="""n_actions_ : int
    Number of arms.
n_features_in_ : int
    Number of context features.
n_samples_seen_ : int
    Rounds of feedback learnt from.
action_counts_ : ndarray of shape (n_actions_,)
    Feedback rounds per arm.
last_refit_round_ : int
    Feedback rounds the reward models had seen when they last learned:
    ``n_samples_seen_`` for an estimator that learns online, the last refit's
    round for a refit schedule (rounds since then wait for the next refit).
n_refits_ : int
    Refits of the reward models from the logged history (0 when online).""",
)

_ESTIMATOR_CONSTRAINTS = {
    **BasePolicy._parameter_constraints,
    "estimator": [HasMethods(["fit", "predict"]), None],
    "arm_models": [StrOptions({"auto", "per_arm", "shared"})],
}


class BaseEstimatorPolicy(EstimatorModelMixin, BasePolicy):
    """Base of the policies on any scikit-learn regressor.

    A subclass implements ``_action_law(X, mask)``: the exact probability of each
    arm, which ``select`` draws from (one uniform per round) and
    ``predict_action_proba`` returns.
    """

    _parameter_constraints = _ESTIMATOR_CONSTRAINTS

    def _arm_models(self):
        return self.arm_models

    def _init_state(self):
        self._init_models()

    def _update(self, X, actions, rewards, sample_weight):
        self._update_models(X, actions, rewards, sample_weight)

    def _add_arms(self, n_new):
        self._grow_models(n_new)

    def _scores(self, X, return_std):
        predictions, fitted = self._model_predictions(X)
        return predictions[0], None

    def _action_law(self, X, mask):
        raise NotImplementedError

    def _select_free(self, X, mask):
        return draw_from(self._action_law(X, mask), self._rng)

    def _action_proba_free(self, X, mask):
        return self._action_law(X, mask)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.policy_tags.exact_action_proba = True
        tags.input_tags.sparse = self._estimator_accepts_sparse()
        return tags


def inverse_gap_weights(scores: NDArray, gamma: float, mask=None) -> NDArray:
    """Inverse-gap weighting of predicted rewards, exact and row-wise.

    With ``b`` the best available arm, ``p_a = 1 / (K + gamma (y_b - y_a))`` for
    every other available arm (``K`` the arms available in the row) and ``p_b``
    takes the rest; arms tied at the best share the rest equally (the law of a
    uniformly random ``b`` among them). Masked arms get 0.
    """
    available = np.ones(scores.shape, dtype=bool) if mask is None else mask
    masked = np.where(available, scores, -np.inf)
    best = masked.max(axis=1, keepdims=True)
    if not np.isfinite(best).all() or np.isnan(scores[available]).any():
        raise NumericalError(
            "The estimator predicted non-finite rewards; refit it or check its "
            "parameters."
        )
    gap = np.where(available, best - masked, 0.0)
    n_available = available.sum(axis=1, keepdims=True)
    proba = np.where(available, 1.0 / (n_available + gamma * gap), 0.0)
    top = available & (gap <= 0.0)
    rest = 1.0 - np.where(top, 0.0, proba).sum(axis=1, keepdims=True)
    return np.where(top, rest / top.sum(axis=1, keepdims=True), proba)
