"""Warnings and errors raised by skbandit."""
# SPDX-License-Identifier: BSD-3-Clause

from contextlib import contextmanager

import numpy as np

__all__ = ["ConfidenceConditionWarning", "NumericalError", "PropensityWarning"]


class NumericalError(ArithmeticError, ValueError):
    """Raised when an update would leave the policy with non-finite state.

    The policy is left exactly as it was before the failing call. It is both an
    :class:`ArithmeticError` and a :class:`ValueError`, so code written for either
    catches it.

    See Also
    --------
    PropensityWarning : Warns about exploding importance weights.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.exceptions import NumericalError
    >>> from skbandit.policies import LinUCB
    >>> policy = LinUCB(n_actions=2)
    >>> try:
    ...     policy.partial_fit(np.array([[1e300, 1e300]]), [0], [1e300])
    ... except NumericalError:
    ...     print("rejected; the policy is unchanged")
    rejected; the policy is unchanged
    """


class PropensityWarning(UserWarning):
    """Warning category for logged propensities so small that IPS weights explode.

    No estimator of skbandit issues it yet; it is public so that code can filter it
    with :func:`warnings.filterwarnings` ahead of the estimators that will.

    See Also
    --------
    NumericalError : Raised when an update would produce non-finite state.

    Examples
    --------
    >>> import warnings
    >>> from skbandit.exceptions import PropensityWarning
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warnings.warn("propensity 1e-9 gives a weight of 1e9", PropensityWarning)
    >>> caught[0].category.__name__
    'PropensityWarning'
    """


class ConfidenceConditionWarning(UserWarning):
    """Warning category for a data-dependent condition of a confidence set that failed.

    :class:`~skbandit.policies.ECOLog`'s adaptive radius is certified only on rounds
    where ``mu'(x^T theta_bar) <= 2 mu'(x^T theta)``; the authors' code raises when
    it fails. skbandit warns with this category instead and applies the documented
    fallback (the round cannot shrink the radius).

    See Also
    --------
    NumericalError : Raised when an update would produce non-finite state.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from skbandit.exceptions import ConfidenceConditionWarning
    >>> from skbandit.policies import ECOLog
    >>> policy = ECOLog(n_actions=1, solver="online", alpha=0.01, standardize=False)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     policy = policy.partial_fit(np.array([[1.0, 0.0]]), [0], [1.0])
    >>> caught[0].category.__name__, policy.n_condition_failures_
    ('ConfidenceConditionWarning', 1)
    """


def _divergence_hint(mean_reduction: bool) -> str:
    """What to do when a training diverges, for the ``NumericalError`` message.

    Unscaled features are the usual cause (NeuralTS on raw breast_cancer: objective
    0.197 -> 2.6e24), so the hint names them first; ``reduction='mean'`` only where
    the sum is in use, since ``"mean"`` is the default.
    """
    hint = (
        "scale the features (standardize=True, or "
        "make_bandit_pipeline(StandardScaler(), policy)), or lower learning_rate"
    )
    return hint if mean_reduction else hint + ", or use reduction='mean'"


def _non_finite_scores() -> NumericalError:
    """The error of scores that are NaN or infinite: the policy's state diverged."""
    return NumericalError(
        "The policy produced non-finite scores; its state has diverged. "
        "Refit it, or increase alpha."
    )


def _diverged(start, total):
    """Whether an objective overflowed or rose a thousandfold from ``start``.

    Gradient descent at a stable step size never raises the objective, so such a
    rise is divergence. ``start`` (None when no step ran) and ``total`` are floats
    or arrays of one objective per member; the answer has their shape.
    """
    bad = ~np.isfinite(total)
    if start is not None:
        bad |= total > 1e3 * start + 1e-6
    return bad


@contextmanager
def _as_numerical_error(message: str):
    """Raise numpy's ``LinAlgError`` (a factorisation failed) as a ``NumericalError``.

    ``message`` says which matrix failed and what to change; the caller has written
    nothing yet, so the policy is unchanged.
    """
    try:
        yield
    except np.linalg.LinAlgError as exc:
        raise NumericalError(message) from exc
