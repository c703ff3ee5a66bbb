"""Warm-starting an online policy from logs collected by another policy."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import copy
from numbers import Integral, Real

import numpy as np

from skbandit.utils._param_validation import Interval, StrOptions, validate_params
from skbandit.utils._tags import is_policy, is_slate_policy
from skbandit.utils.validation import check_bandit_data

__all__ = ["warm_start_from_logs", "warm_start_weights"]


def warm_start_weights(actions, propensities, n_actions, clip=None):
    """Per-arm normalised importance weights of logged rounds.

    Each round of arm ``k`` gets ``min(1 / p_i, clip)`` divided by the mean of
    those over arm ``k``'s rounds: within an arm, the rounds are reweighted to the
    context distribution of the whole logs (a covariate-shift correction), while
    the arm keeps its count of rounds, so that a regularised model's balance
    between prior and data is that of the unweighted logs.
    """
    weights = 1.0 / propensities
    if clip is not None:
        weights = np.minimum(weights, clip)
    sums = np.bincount(actions, weights=weights, minlength=n_actions)
    counts = np.bincount(actions, minlength=n_actions)
    means = np.divide(sums, counts, out=np.ones(n_actions), where=counts > 0)
    return weights / means[actions]


@validate_params(
    {
        "policy": [object],
        "X": ["array-like", "sparse matrix"],
        "actions": ["array-like"],
        "rewards": ["array-like"],
        "propensities": ["array-like", None],
        "weighting": [StrOptions({"none", "importance"})],
        "clip": [Interval(Real, 0, None, closed="neither"), None],
        "batch_size": [Interval(Integral, 1, None, closed="left"), None],
    },
    prefer_skip_nested_validation=True,
)
def warm_start_from_logs(
    policy,
    X,
    actions,
    rewards,
    propensities=None,
    *,
    weighting="none",
    clip=None,
    batch_size=None,
):
    """Teach an online policy from logs of another policy, in one call.

    Feeds the logged rounds to ``policy.partial_fit`` (so the policy keeps what it
    knew and goes on learning online), with the weights the logs need:

    - ``weighting="none"``: the rounds as they are. Right for every policy that
      learns a reward model per arm (the linear, GLM, neural, ensemble and
      estimator families): given the context and the arm, the reward does not
      depend on who chose the arm, so the logs train an unbiased model of each
      arm wherever the logger played it (no unmeasured confounding, overlap),
      and importance weights would only add variance;
    - ``weighting="importance"``: each arm's rounds reweighted by ``1 / p_i``
      (clipped at ``clip``, normalised to the arm's count,
      :func:`warm_start_weights`), which moves each arm's fit to the context
      distribution of all the logs. Use it where the model is misspecified and
      the logger played arms in very different contexts (its fit is then
      accurate where the logger used the arm, not where the new policy will),
      or for a model that ignores context the logger used.

    A policy that does not learn a reward model (a softmax or gradient policy
    updated from its own choices) would need ``pi / p`` weights of its own action
    law, which change as it learns; none of skbandit's online policies is one.

    Parameters
    ----------
    policy : BasePolicy
        An online policy (or a :class:`~skbandit.pipeline.BanditPipeline` ending
        in one), updated in place through ``partial_fit``.
    X : array-like of shape (n_samples, n_features)
        Logged contexts.
    actions : array-like of shape (n_samples,)
        Logged actions.
    rewards : array-like of shape (n_samples,)
        Logged rewards.
    propensities : array-like of shape (n_samples,), default=None
        The logger's probability of each logged action; required by
        ``weighting="importance"``.
    weighting : {"none", "importance"}, default="none"
        How the rounds are weighted (above).
    clip : float or None, default=None
        Upper bound of the importance weights ``1 / p_i``.
    batch_size : int or None, default=None
        Rounds per ``partial_fit`` call; None feeds all the logs as one batch (one
        delayed-feedback update).

    Returns
    -------
    policy : BasePolicy
        The same policy, warm-started.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.offpolicy import warm_start_from_logs
    >>> from skbandit.policies import LinUCB
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3))
    >>> actions = rng.integers(2, size=200)
    >>> rewards = X[:, 0] * (2 * actions - 1)
    >>> policy = warm_start_from_logs(LinUCB(n_actions=2), X, actions, rewards)
    >>> policy.n_samples_seen_
    200
    """
    final = policy.steps[-1][1] if hasattr(policy, "steps") else policy
    if not is_policy(final) or is_slate_policy(final):
        raise TypeError(
            "warm_start_from_logs takes an online single-arm policy (or a pipeline "
            f"ending in one); got {type(final).__name__}."
        )
    sample_weight = None
    if weighting == "importance":
        if propensities is None:
            raise ValueError('weighting="importance" needs the logged propensities.')
        n = np.shape(actions)[0]
        actions, _, propensities, _ = check_bandit_data(
            actions, np.zeros(n), propensities=propensities, n_samples=n,
            n_actions=None, estimator_name="warm_start_from_logs",
        )  # fmt: skip
        n_actions = getattr(final, "n_actions_", None) or final.n_actions
        n_actions = max(int(actions.max()) + 1, n_actions or 0)
        sample_weight = warm_start_weights(actions, propensities, n_actions, clip)
    X = X if hasattr(X, "shape") else np.asarray(X)
    actions, rewards = np.asarray(actions), np.asarray(rewards)
    n = X.shape[0]
    step = n if batch_size is None else batch_size
    # Each partial_fit is atomic; several batches are made so by a copy of the
    # policy's state, put back if a later batch fails.
    backup = copy.deepcopy(vars(policy)) if step < n else None
    try:
        for start in range(0, n, step):
            rows = slice(start, start + step)
            params = {}
            if sample_weight is not None:
                params["sample_weight"] = sample_weight[rows]
            policy.partial_fit(X[rows], actions[rows], rewards[rows], **params)
    except Exception:
        if backup is not None:
            vars(policy).clear()
            vars(policy).update(backup)
        raise
    return policy
