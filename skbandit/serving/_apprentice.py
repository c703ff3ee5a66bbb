"""Apprentice mode's report: how the policy would have done against the caller.

In apprentice mode (:meth:`DecisionLog.apprentice`) the caller's own choice is
played, logged and learned from, and the policy's choice is logged beside it. The
report compares the two on the closed apprentice events:

- how often the policy agreed with the caller;
- the caller's value: the mean logged reward, with its standard error;
- the policy's value, doubly robust with the logged propensities: where the policy
  agreed, the logged reward; where it did not, the reward model's prediction for its
  arm, corrected by the propensity-weighted residual when the caller's choice was
  random. With a deterministic caller (propensity 1, the default) every estimate of
  a disagreeing round rests on the reward model; the report says how many;
- how often, and by how much, the reward model expects the policy's arm to do
  better than the caller's on the rounds where they disagreed.

The policy's choice in each round is one draw from its action distribution at that
time, so its one-hot vector is an unbiased stand-in for that distribution.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from skbandit.evaluation import PolicyValue, estimate_value
from skbandit.serving._reward_model import cross_fitted_rewards, describe

__all__ = ["ApprenticeReport", "apprentice_report"]


@dataclass(frozen=True)
class ApprenticeReport:
    """The policy against the caller, on the log's apprentice events.

    Parameters
    ----------
    n_events : int
        Closed apprentice events compared.
    agreement : float
        Fraction of them where the policy chose the caller's arm.
    caller : PolicyValue
        The caller's value: the mean logged reward, an on-policy estimate.
    policy : PolicyValue
        The policy's doubly robust value.
    lift : float
        ``policy.value - caller.value``.
    better_rate : float
        Of the disagreeing rounds, the fraction where the reward model predicts the
        policy's arm above the caller's (nan when they always agreed).
    mean_gain_when_disagreeing : float
        The reward model's mean predicted gain of the policy's arm over the
        caller's, on the disagreeing rounds (nan when they always agreed).
    reward_model : str
        The reward model of the estimates.

    Examples
    --------
    >>> from skbandit.evaluation import PolicyValue
    >>> from skbandit.serving import ApprenticeReport
    >>> v = PolicyValue(0.5, 0.01, 0.48, 0.52, 100, "dr")
    >>> ApprenticeReport(100, 0.9, v, v, 0.0, 0.5, 0.0, "ridge").agreement
    0.9
    """

    n_events: int
    agreement: float
    caller: PolicyValue
    policy: PolicyValue
    lift: float
    better_rate: float
    mean_gain_when_disagreeing: float
    reward_model: str

    def __str__(self) -> str:
        return (
            f"{self.n_events} apprentice events; the policy agreed with the caller "
            f"in {self.agreement:.1%}.\n"
            f"caller {self.caller.value:.4f} "
            f"[{self.caller.ci_low:.4f}, {self.caller.ci_high:.4f}]; policy (DR) "
            f"{self.policy.value:.4f} [{self.policy.ci_low:.4f}, "
            f"{self.policy.ci_high:.4f}]; lift {self.lift:+.4f}.\n"
            f"Where they disagreed, the reward model ({self.reward_model}) prefers "
            f"the policy's arm in {self.better_rate:.1%} of rounds, by "
            f"{self.mean_gain_when_disagreeing:+.4f} on average."
        )


def apprentice_report(
    log,
    *,
    reward_model=None,
    n_folds=2,
    alpha=0.05,
    start=None,
    stop=None,
    random_state=0,
) -> ApprenticeReport:
    """Compare the policy's logged choices with the caller's, off-policy.

    Read more in the :ref:`User Guide <running_the_loop>`.

    Parameters
    ----------
    log : DecisionLog
        Its closed events logged by :meth:`DecisionLog.apprentice`.
    reward_model : regressor, default=None
        The doubly robust estimate's reward model, cross-fitted per arm;
        ``Ridge(alpha=1.0)`` when None.
    n_folds : int, default=2
        Folds of the cross-fitting.
    alpha : float, default=0.05
        One minus the confidence level of the intervals.
    start, stop : int, default=None
        Only the events with ``start <= seq < stop``.
    random_state : int, default=0
        Seeds the cross-fitting's folds.

    Returns
    -------
    report : ApprenticeReport
        Agreement, both values, the lift and the disagreements' figures.

    See Also
    --------
    DecisionLog.apprentice : Logs an apprentice event.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from skbandit.policies import LinUCB
    >>> from skbandit.serving import DecisionLog, apprentice_report
    >>> log = DecisionLog(os.path.join(tempfile.mkdtemp(), "d.sqlite"))
    >>> policy, rng = LinUCB(n_actions=2, random_state=0), np.random.default_rng(0)
    >>> for _ in range(40):
    ...     e = log.apprentice(policy, rng.normal(size=2), 0)
    ...     _ = log.reward(e.event_id, 1.0)
    >>> log.close(wait=0.0)
    40
    >>> apprentice_report(log).n_events
    40
    """
    data = log.to_arrays(start=start, stop=stop)
    if data.actions.ndim != 1:
        raise ValueError("The apprentice report compares single-arm choices.")
    keep = np.flatnonzero(data.apprentice)
    n = keep.size
    if n < 2:
        raise ValueError(
            f"The apprentice report needs at least 2 closed apprentice events; the "
            f"log has {n}."
        )
    X = data.X[keep]
    actions, rewards = data.actions[keep], data.rewards[keep]
    props, policy_actions = data.propensities[keep], data.policy_actions[keep]
    n_actions = data.n_actions
    q = cross_fitted_rewards(
        X,
        actions,
        rewards,
        n_actions,
        estimator=reward_model,
        n_folds=n_folds,
        random_state=random_state,
    )
    rows = np.arange(n)

    def one_hot(arms):
        out = np.zeros((n, n_actions))
        out[rows, arms] = 1.0
        return out

    # The caller played its own choices: its value is the mean logged reward, an
    # on-policy mean (IPS with its one-hot choices and weight 1 is exactly that).
    caller = estimate_value(
        one_hot(actions), actions, rewards, np.ones(n), method="ips", alpha=alpha
    )
    policy = estimate_value(
        one_hot(policy_actions),
        actions,
        rewards,
        props,
        method="dr",
        expected_rewards=q,
        alpha=alpha,
    )
    disagree = policy_actions != actions
    gain = q[rows, policy_actions] - q[rows, actions]
    return ApprenticeReport(
        n_events=n,
        agreement=float(np.mean(~disagree)),
        caller=caller,
        policy=policy,
        lift=policy.value - caller.value,
        better_rate=float(np.mean(gain[disagree] > 0)) if disagree.any() else np.nan,
        mean_gain_when_disagreeing=float(np.mean(gain[disagree]))
        if disagree.any()
        else np.nan,
        reward_model=describe(reward_model, n_folds),
    )
