"""Off-policy evaluation of slate policies: the pseudo-inverse estimator.

Swaminathan, Krishnamurthy, Agarwal, Dudik, Langford, Jose and Zitouni,
"Off-policy evaluation for slate recommendation" (NeurIPS 2017, arXiv:1605.04812).
When a slate's expected reward adds up over its arms (or over its (position, arm)
pairs), ``E[r | x, S] = phi_x^T 1_S``, the value of a policy ``pi`` is
``E_x[phi_x^T q_pi(x)]`` with ``q_pi(x) = E_pi[1_S | x]`` the policy's inclusion
probabilities, and

.. math::

    \\hat V_{PI} = \\frac{1}{n} \\sum_i r_i \\, q_\\pi(x_i)^T \\Gamma_\\mu(x_i)^\\dagger
    1_{S_i}, \\qquad \\Gamma_\\mu(x) = E_\\mu[1_S 1_S^T | x]

is unbiased whenever the logging policy ``mu`` covers ``pi`` (its support). ``1_S``
indexes arms (``q`` of shape ``(n, N)``, the slate policies'
``predict_action_proba``) or (position, arm) pairs (``q`` of shape ``(n, K, N)``,
index ``k N + a``) for rewards that depend on where an arm is shown.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.stats import norm
from sklearn.utils import check_array

from skbandit.evaluation._policy_value import PolicyValue
from skbandit.utils._param_validation import Interval, StrOptions, validate_params
from skbandit.utils._slates import check_slates

__all__ = ["estimate_slate_value", "uniform_slate_propensities"]


def _not_scalar(value, name):
    """``value``, unless it is a scalar: scikit-learn's check_array raises a
    TypeError for those, where a bad argument deserves a ValueError."""
    if np.ndim(value) == 0:
        raise ValueError(f"{name} must be an array, got the scalar {value!r}.")
    return value


@validate_params(
    {
        "n_actions": [Interval(Integral, 1, None, closed="left")],
        "slate_size": [Interval(Integral, 1, None, closed="left")],
        "ranked": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def uniform_slate_propensities(
    n_actions: int, slate_size: int, *, ranked: bool = False
) -> NDArray:
    """Pairwise inclusion probabilities of a uniformly random slate.

    The ``Gamma`` of a logging policy that draws ``slate_size`` distinct arms
    uniformly (an ordered slate for ``ranked=True``), for
    :func:`estimate_slate_value`.

    Parameters
    ----------
    n_actions : int
        Number of arms ``N``.
    slate_size : int
        Arms per slate ``K <= N``.
    ranked : bool, default=False
        ``False``: ``P(i in S, j in S)``, shape ``(N, N)``. ``True``:
        ``P(s_j = a, s_k = b)`` over (position, arm) pairs indexed ``k N + a``,
        shape ``(K N, K N)``.

    Returns
    -------
    propensities : ndarray of shape (N, N) or (K N, K N)
        The second-moment matrix ``E[1_S 1_S^T]``.

    Examples
    --------
    >>> from skbandit.evaluation import uniform_slate_propensities
    >>> uniform_slate_propensities(3, 2)
    array([[0.66666667, 0.33333333, 0.33333333],
           [0.33333333, 0.66666667, 0.33333333],
           [0.33333333, 0.33333333, 0.66666667]])
    """
    N, K = n_actions, slate_size
    if K > N:
        raise ValueError(f"slate_size={K} exceeds n_actions={N}.")
    pair = 0.0 if N == 1 else 1.0 / (N * (N - 1))
    eye = np.eye(N)
    if not ranked:
        return K * (K - 1) * pair * (1 - eye) + (K / N) * eye
    same_slot = np.kron(np.eye(K), eye / N)
    other_slot = np.kron(1 - np.eye(K), (1 - eye) * pair)
    return same_slot + other_slot


def _indicators(actions: NDArray, dim: int, ranked: bool) -> NDArray:
    n, K = actions.shape
    onehot = np.zeros((n, dim))
    cols = actions + (np.arange(K) * (dim // K) if ranked else 0)
    onehot[np.arange(n)[:, None], cols] = 1.0
    return onehot


def _check_slate_logs(action_proba, actions, rewards, propensities):
    """The validated ``(action_proba, slates, slate rewards, propensities)``.

    Slot rewards of the shape of ``actions`` are summed per slate; ``propensities``
    are the pairwise inclusion probabilities, shared or per round.
    """
    q = check_array(
        _not_scalar(action_proba, "action_proba"),
        ensure_2d=False,
        allow_nd=True,
        input_name="action_proba",
    )
    if q.ndim not in (2, 3):
        raise ValueError(
            "action_proba must have shape (n_samples, n_actions) or (n_samples, "
            f"slate_size, n_actions), got {q.shape}."
        )
    ranked = q.ndim == 3
    n, N = q.shape[0], q.shape[-1]
    S = check_slates(
        actions,
        n_samples=n,
        n_actions=N,
        slate_size=q.shape[1] if ranked else None,
        estimator_name="action_proba",
    )
    r = check_array(
        _not_scalar(rewards, "rewards"), ensure_2d=False, input_name="rewards"
    )
    if r.ndim == 2 and r.shape == S.shape:
        r = r.sum(axis=1)
    if r.shape != (n,):
        raise ValueError(
            f"rewards must have shape (n_samples,)=({n},) or that of actions, "
            f"{S.shape}; got {r.shape}."
        )
    dim = q.shape[1] * N if ranked else N
    G = check_array(
        _not_scalar(propensities, "propensities"),
        ensure_2d=False,
        allow_nd=True,
        input_name="propensities",
    )
    if G.shape not in ((dim, dim), (n, dim, dim)):
        raise ValueError(
            f"propensities must have shape ({dim}, {dim}) or ({n}, {dim}, {dim}): "
            f"the logging policy's pairwise inclusion probabilities; got {G.shape}."
        )
    if np.any((G < 0) | (G > 1)):
        raise ValueError("propensities must be probabilities, in [0, 1].")
    return q, S, r, G


@validate_params(
    {
        "action_proba": ["array-like"],
        "actions": ["array-like"],
        "rewards": ["array-like"],
        "propensities": ["array-like"],
        "method": [StrOptions({"pi", "wpi"})],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
    },
    prefer_skip_nested_validation=True,
)
def estimate_slate_value(
    action_proba: ArrayLike,
    actions: ArrayLike,
    rewards: ArrayLike,
    propensities: ArrayLike,
    *,
    method: str = "pi",
    alpha: float = 0.05,
) -> PolicyValue:
    """Pseudo-inverse estimate of a slate policy's value, with its interval.

    The estimator of Swaminathan et al. (2017) for slate rewards that add up over
    the slate's arms: ``method="pi"`` is the unbiased mean of
    ``w_i r_i`` with ``w_i = q_pi(x_i)^T Gamma_mu(x_i)^+ 1_{S_i}``, and
    ``method="wpi"`` its self-normalised form ``sum w_i r_i / sum w_i``. The
    interval is the normal one, ``value +- z_{1-alpha/2} std_error``, with the
    standard error of the mean of the terms (PI) or of the ratio by the delta
    method (wPI).

    Parameters
    ----------
    action_proba : array-like of shape (n_samples, n_actions) or \
            (n_samples, slate_size, n_actions)
        The evaluated policy's inclusion probabilities ``q_pi``: of each arm being
        in the slate (a slate policy's ``predict_action_proba``, rows summing to
        ``slate_size``), or of each arm at each position.
    actions : array-like of shape (n_samples, slate_size)
        Logged slates (distinct arms, position 0 first).
    rewards : array-like of shape (n_samples,) or (n_samples, slate_size)
        Logged slate rewards, or the scores of the slate's arms (summed).
    propensities : array-like of shape (n_samples, D, D) or (D, D)
        The logging policy's ``Gamma = E[1_S 1_S^T | x]``: pairwise inclusion
        probabilities of arms (``D = n_actions``) or of (position, arm) pairs
        (``D = slate_size * n_actions``, index ``k n_actions + a``). A 2-D matrix
        is shared by every round; see :func:`uniform_slate_propensities`.
    method : {"pi", "wpi"}, default="pi"
        Pseudo-inverse or weighted (self-normalised) pseudo-inverse.
    alpha : float, default=0.05
        One minus the confidence level of the interval.

    Returns
    -------
    value : PolicyValue
        Estimate, standard error, interval, sample count and method.

    References
    ----------
    .. [1] Swaminathan, Krishnamurthy, Agarwal, Dudik, Langford, Jose, Zitouni.
       "Off-policy evaluation for slate recommendation". NeurIPS 2017.
       arXiv:1605.04812.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.evaluation import estimate_slate_value, uniform_slate_propensities
    >>> proba = np.array([[1.0, 1.0, 0.0]] * 2)        # always slate {0, 1}
    >>> v = estimate_slate_value(proba, [[0, 1], [1, 2]], [1.5, 0.5],
    ...                          uniform_slate_propensities(3, 2))
    >>> round(v.value, 6)
    2.25
    """
    q, S, r, G = _check_slate_logs(action_proba, actions, rewards, propensities)
    ranked, n, dim = q.ndim == 3, q.shape[0], G.shape[-1]
    if n == 0:
        raise ValueError("estimate_slate_value needs at least one logged round.")
    # w_i = q_i^T Gamma_i^+ 1_{S_i}; Gamma is symmetric positive semi-definite.
    q_gamma = np.einsum("nd,nde->ne", q.reshape(n, dim), np.broadcast_to(
        np.linalg.pinv(G, hermitian=True), (n, dim, dim)))  # fmt: skip
    w = np.einsum("nd,nd->n", q_gamma, _indicators(S, dim, ranked))
    if method == "pi":
        terms = w * r
        value = float(terms.mean())
        spread = terms
    else:
        total = w.sum()
        if total <= 0:
            raise ValueError(
                "The pseudo-inverse weights sum to a non-positive number; the "
                "weighted estimator is undefined (does the logging policy cover the "
                "evaluated one?)."
            )
        value = float((w * r).sum() / total)
        spread = w * (r - value) / w.mean()
    std_error = float(spread.std(ddof=1) / np.sqrt(n)) if n > 1 else float("inf")
    z = float(norm.ppf(1 - alpha / 2))
    return PolicyValue(
        value=value,
        std_error=std_error,
        ci_low=value - z * std_error,
        ci_high=value + z * std_error,
        n_samples=int(n),
        method=method,
    )
