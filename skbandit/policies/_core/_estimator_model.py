"""What every policy on a scikit-learn estimator shares: arms to models, and learning.

:class:`EstimatorModelMixin` turns contexts and pulled arms into the rows the
estimator's clones learn from and predict on, and updates them online (the
estimator's ``partial_fit``) or by refits from the logged history on a doubling
schedule (estimators without ``partial_fit``, and offline policies such as FALCON).
The estimator family's base adds the closed-form action law; ``EpsilonGreedy``
(linear family) takes this model alone.
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

from skbandit.policies._core._reward_models import RewardModels, stack_rows

__all__ = ["EstimatorModelMixin"]


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
