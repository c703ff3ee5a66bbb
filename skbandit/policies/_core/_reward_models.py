"""The fitted regressors of a policy on a scikit-learn estimator, kept immutable.

:class:`RewardModels` holds ``n_replicas`` x ``n_blocks`` clones of the user's
estimator (a block is an arm, or the one model of all arms) and the logged rows they
learn from. Every update returns a new object and never touches a fitted estimator in
place (an online update works on a copy), so a policy that rebinds its models last
is left exactly as it was when an update raises: the estimator's own error, a
diverging fit.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import contextlib
import copy
import inspect
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from sklearn import config_context, linear_model
from sklearn.base import clone
from sklearn.utils.extmath import safe_sparse_dot
from threadpoolctl import ThreadpoolController

from skbandit.policies._core._online_ridge import OnlineRidge
from skbandit.policies._core._random_features import RandomFeatureRidge

__all__ = ["RewardModels", "stack_rows", "weighted_call"]

#: History chunks kept before they are concatenated into one: appending stays
#: O(chunks) per round, and the concatenation's copy is paid once per this many.
_MAX_CHUNKS = 32


#: Predictions of up to this many rows, and fits of up to ``_SMALL_FIT`` rows,
#: run on one OpenMP thread.
_SMALL_BATCH = 256
_SMALL_FIT = 4096

#: The OpenMP runtimes loaded (gradient boosting's), found once on first use.
_OPENMP = None


def _validated_input(*, fitted=False):
    """Skip scikit-learn's finiteness scan of the rows a model is given.

    The policy has already checked its contexts, rewards and weights for NaN and
    inf (``validate_data``, ``check_bandit_data``); scanning them again in every
    model's ``fit``, ``partial_fit`` and ``predict`` (one call per arm) was most of
    a round's time. A ``fitted`` model's parameters were validated by its first
    fit and cannot have changed since (the policy owns its clones): its updates
    skip that validation too.
    """
    return config_context(assume_finite=True, skip_parameter_validation=fitted)


def _one_thread_if_small(n_rows: int, small: int = _SMALL_BATCH):
    """One OpenMP thread for work on at most ``small`` rows, the caller's otherwise.

    Gradient boosting bins, fits and predicts in OpenMP parallel regions: on a
    few rows, waking the threads costs far more than the work (on a loaded
    2-core machine, a prediction of one row took 27 ms against 1.6 ms on one
    thread, a fit of 16 rows 1.9 s against 0.14 s). The limit only lowers the
    thread count, for the duration of the call.
    """
    global _OPENMP
    if n_rows > small:
        return contextlib.nullcontext()
    if _OPENMP is None:
        _OPENMP = ThreadpoolController().select(user_api="openmp")
    return _OPENMP.limit(limits=1)


#: Regressors whose ``predict`` is ``X @ coef_ + intercept_``, by exact type (a
#: subclass may predict otherwise).
_LINEAR_PREDICT = frozenset(
    {
        linear_model.ElasticNet,
        linear_model.ElasticNetCV,
        linear_model.HuberRegressor,
        linear_model.Lasso,
        linear_model.LassoCV,
        linear_model.LinearRegression,
        linear_model.Ridge,
        linear_model.RidgeCV,
        linear_model.SGDRegressor,
        OnlineRidge,
    }
)

#: Online regressors whose whole fitted state is numbers and NumPy arrays.
_ARRAY_STATE = frozenset({linear_model.SGDRegressor})


def _is_linear(model) -> bool:
    """Whether ``_predict`` takes the linear shortcut (an unfitted arm: no call)."""
    return model is None or (
        type(model) in _LINEAR_PREDICT and np.ndim(model.coef_) == 1
    )


def _predict(model, rows, features=None) -> NDArray:
    """``model.predict(rows)``; a linear model's without its per-call checks.

    The policy has validated the rows (their width is the one the model was
    fitted on); scikit-learn's own checks of one row cost 50 times the product.
    """
    if _is_linear(model):
        return safe_sparse_dot(rows, model.coef_, dense_output=True) + model.intercept_
    if type(model) is RandomFeatureRidge:  # linear in its features
        # ``features`` memoises them per call for the arms' shared draws; it holds
        # the rows too, so that no other rows can take their id meanwhile
        key = (id(model.weights_), id(rows))
        if features is None or key not in features:
            phi = model._features(rows)
            if features is not None:
                features[key] = (rows, phi)
        else:
            phi = features[key][1]
        return phi @ model.coef_ + model.intercept_
    return np.asarray(model.predict(rows), dtype=np.float64)


def _copy_for_update(model):
    """A copy of a fitted model that its ``partial_fit`` may change in place.

    An SGD model's state is its arrays (coefficients, intercept, averages): a
    shallow copy with those copied (an array under two names stays one) is as
    independent as a deep copy, at a twentieth of its cost. Any other estimator
    is deep-copied.
    """
    if type(model) in (OnlineRidge, RandomFeatureRidge):
        return model.updatable_copy()
    if type(model) not in _ARRAY_STATE:
        return copy.deepcopy(model)
    new, copies = copy.copy(model), {}
    for name, value in vars(model).items():
        if isinstance(value, np.ndarray):
            if id(value) not in copies:
                copies[id(value)] = value.copy()
            setattr(new, name, copies[id(value)])
    return new


def stack_rows(chunks):
    """Concatenate row blocks, dense or ``scipy.sparse``: CSR if any block is sparse,
    so that a history of dense and sparse batches stays one matrix."""
    if len(chunks) == 1:
        return chunks[0]
    if any(sparse.issparse(chunk) for chunk in chunks):
        return sparse.vstack(chunks, format="csr")
    return np.concatenate(chunks)


def _take_rows(rows, index: NDArray):
    return rows[index]


def weighted_call(method: Callable, rows, targets: NDArray, weights: NDArray | None):
    """``method(rows, targets)``, weighted by ``weights`` where they are not all 1.

    Estimators whose ``fit`` / ``partial_fit`` take no ``sample_weight`` (a
    pipeline, a nearest-neighbour regressor) get integer weights as repeated rows,
    the bootstrap's resampling; other weights then raise.
    """
    if weights is None or np.all(weights == 1.0):
        return method(rows, targets)
    owner = method.__self__
    if "sample_weight" in inspect.signature(method).parameters:
        return method(rows, targets, sample_weight=weights)
    if not np.all(np.mod(weights, 1) == 0):
        raise ValueError(
            f"{type(owner).__name__}.{method.__name__} takes no sample_weight, and "
            "the weights are not integers (which would repeat rows)."
        )
    repeats = weights.astype(np.int64)
    index = np.repeat(np.arange(targets.shape[0]), repeats)
    return method(_take_rows(rows, index), targets[index])


class _History:
    """Logged training rows, block of each row, reward and weight; immutable."""

    __slots__ = ("chunks", "n_rows")

    def __init__(self, chunks=(), n_rows=0):
        self.chunks = chunks
        self.n_rows = n_rows

    def appended(self, rows, blocks, rewards, weights) -> _History:
        chunks = (*self.chunks, (rows, blocks, rewards, weights))
        if len(chunks) > _MAX_CHUNKS:
            chunks = (self._stacked(chunks),)
        return _History(chunks, self.n_rows + rewards.shape[0])

    @staticmethod
    def _stacked(chunks):
        rows, blocks, rewards, weights = zip(*chunks, strict=True)
        return (
            stack_rows(rows),
            np.concatenate(blocks),
            np.concatenate(rewards),
            np.concatenate(weights),
        )

    def since(self, start: int):
        """All four arrays of the rows from index ``start`` on."""
        if not self.chunks:
            return None
        rows, blocks, rewards, weights = self._stacked(self.chunks)
        return rows[start:], blocks[start:], rewards[start:], weights[start:]


class RewardModels:
    """Clones of an estimator by replica and block, fitted online or by refits.

    Parameters
    ----------
    estimator : regressor
        The unfitted template; each block of each replica gets its own clone when it
        first learns.
    n_blocks : int
        Arms with a model each, or 1 for one model of all arms.
    n_replicas : int
        Independent copies (bootstrap replicas); 1 otherwise.
    keep_history : bool
        Whether to keep the logged rows for refits (estimators without
        ``partial_fit``, or an offline policy); online models keep none.
    """

    def __init__(self, estimator, n_blocks: int, n_replicas: int, keep_history: bool):
        self.estimator = estimator
        self.models = tuple((None,) * n_blocks for _ in range(n_replicas))
        self.history = _History() if keep_history else None
        self.n_rows_at_refit = 0
        self.n_refits = 0

    def _replaced(self, **changes) -> RewardModels:
        new = copy.copy(self)
        for name, value in changes.items():
            setattr(new, name, value)
        return new

    # ------------------------------------------------------------------ learning
    def grown(self, n_new: int) -> RewardModels:
        """The models with ``n_new`` unfitted blocks appended (new arms)."""
        models = tuple(blocks + (None,) * n_new for blocks in self.models)
        return self._replaced(models=models)

    def partial_fitted(
        self, rows, blocks: NDArray, rewards: NDArray, weights: list
    ) -> RewardModels:
        """Online update: each touched block's ``partial_fit`` on a copy.

        ``weights[r]`` are replica ``r``'s row weights (``None``: all 1).
        """
        models = []
        for replica, fitted in enumerate(self.models):
            fitted = list(fitted)
            for block in np.unique(blocks):
                index = np.flatnonzero(blocks == block)
                w = None if weights[replica] is None else weights[replica][index]
                if w is not None and not w.any():
                    continue  # a bootstrap replica that drew weight 0 for every row
                model = fitted[block]
                was_fitted = model is not None
                model = _copy_for_update(model) if was_fitted else clone(self.estimator)
                with _validated_input(fitted=was_fitted):
                    weighted_call(
                        model.partial_fit, _take_rows(rows, index), rewards[index], w
                    )
                fitted[block] = model
            models.append(tuple(fitted))
        return self._replaced(models=tuple(models))

    def appended(self, rows, blocks, rewards, weights) -> RewardModels:
        """The models with the rows added to the history (no fit)."""
        return self._replaced(
            history=self.history.appended(rows, blocks, rewards, weights)
        )

    def refitted(self, *, since: int, replica_weights: Callable) -> RewardModels:
        """Every block refit from scratch on the history's rows from ``since`` on.

        ``replica_weights(n)`` gives each replica's bootstrap weights of ``n`` rows
        (``None``: the rows' own weights). A block without rows keeps its model.
        """
        rows, blocks, rewards, weights = self.history.since(since)
        models = []
        for fitted in self.models:
            fitted = list(fitted)
            for block in np.unique(blocks):
                index = np.flatnonzero(blocks == block)
                w = weights[index]
                draw = replica_weights(index.size)
                if draw is not None:
                    w = w * draw
                if not w.any():
                    continue
                model = clone(self.estimator)
                with _validated_input(), _one_thread_if_small(index.size, _SMALL_FIT):
                    weighted_call(model.fit, _take_rows(rows, index), rewards[index], w)
                fitted[block] = model
            models.append(tuple(fitted))
        return self._replaced(
            models=tuple(models),
            n_rows_at_refit=self.history.n_rows,
            n_refits=self.n_refits + 1,
        )

    # ------------------------------------------------------------------ scoring
    def predict(self, block_rows: Callable, n_rows: int, n_arms: int):
        """Predictions ``(n_replicas, n_rows, n_arms)`` and which were fitted.

        ``block_rows(block)`` gives the rows a block's model predicts on, and how
        its predictions map to arms; an unfitted model predicts 0.
        """
        out = np.zeros((len(self.models), n_rows, n_arms))
        fitted = np.zeros((len(self.models), n_arms), dtype=bool)
        shortcut = all(_is_linear(m) for models in self.models for m in models)
        if shortcut and _one_linear_model_per_arm(self.models, block_rows, n_arms):
            rows = block_rows(0)[0]
            for replica, models in enumerate(self.models):
                out[replica], fitted[replica] = _stacked_linear(models, rows)
            return out, fitted
        threads = contextlib.nullcontext() if shortcut else _one_thread_if_small(n_rows)
        features = {}  # random features of the rows, per shared draw
        with _validated_input(), threads:
            for replica, models in enumerate(self.models):
                for block, model in enumerate(models):
                    if model is None:
                        continue
                    rows, arms = block_rows(block)
                    pred = _predict(model, rows, features)
                    out[replica][:, arms] = pred.reshape(len(arms), n_rows).T
                    fitted[replica, arms] = True
        return out, fitted


def _one_linear_model_per_arm(models, block_rows: Callable, n_arms: int) -> bool:
    """Whether block ``k`` is arm ``k`` and every block predicts on the same rows."""
    if len(models[0]) != n_arms or n_arms == 0:
        return False
    rows = block_rows(0)[0]
    return all(block_rows(k)[0] is rows for k in range(1, n_arms))


def _stacked_linear(models, rows):
    """Every arm's linear model at once: ``rows @ W + b``, one product.

    Column ``k`` of ``W`` is arm ``k``'s coefficients (0 for an unfitted arm, which
    predicts 0): the predictions of :func:`_predict`, without one call per arm.
    """
    present = [m for m in models if m is not None]
    fitted = np.array([m is not None for m in models])
    if not present:
        return 0.0, fitted
    width = present[0].coef_.shape[0]
    coef = np.zeros((width, len(models)))
    intercept = np.zeros(len(models))
    for arm, model in enumerate(models):
        if model is not None:
            coef[:, arm] = model.coef_
            intercept[arm] = (
                np.ravel(model.intercept_)[0]
                if np.ndim(model.intercept_)
                else model.intercept_
            )
    return safe_sparse_dot(rows, coef, dense_output=True) + intercept, fitted
