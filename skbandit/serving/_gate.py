"""The gate before a new policy serves: off-policy evaluation on the decision log.

A candidate (another estimator, other parameters, the same one retrained) and the
champion (the policy that serves) are both evaluated on the log's closed events
with :func:`~skbandit.evaluation.estimate_value`: doubly robust by default, with
the logged propensities and a cross-fitted reward model
(:mod:`skbandit.serving._reward_model`). The candidate is promoted only when the
lower end of its confidence interval is above the champion's estimate. Every
decision of the gate, promoted or not, is recorded with its figures in the log's
``promotions`` table; a promotion is recorded in the same transaction as the
checkpoint that installs the candidate.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import hashlib
import pickle
from dataclasses import dataclass

import numpy as np

from skbandit.evaluation import PolicyValue, estimate_value
from skbandit.serving._events import final_step
from skbandit.serving._reward_model import cross_fitted_rewards, describe

__all__ = ["Gate", "GateResult"]


@dataclass(frozen=True)
class GateResult:
    """What the gate found: both estimates and its decision.

    Parameters
    ----------
    champion : PolicyValue
        The serving policy's estimated value on the log.
    candidate : PolicyValue
        The candidate's.
    promoted : bool
        ``candidate.ci_low > champion.value``.
    champion_version, candidate_version : str
        Content hashes of the two policies' pickles.
    reward_model : str
        The reward model of the doubly robust estimates.
    first_seq, last_seq : int
        The events evaluated on (their order in the log).

    Examples
    --------
    >>> from skbandit.evaluation import PolicyValue
    >>> from skbandit.serving import GateResult
    >>> v = PolicyValue(0.5, 0.01, 0.48, 0.52, 100, "dr")
    >>> GateResult(v, v, False, "a", "b", "ridge", 1, 100).promoted
    False
    """

    champion: PolicyValue
    candidate: PolicyValue
    promoted: bool
    champion_version: str
    candidate_version: str
    reward_model: str
    first_seq: int
    last_seq: int

    def figures(self) -> dict:
        """The row recorded in the log's ``promotions`` table."""
        return {
            "champion_version": self.champion_version,
            "candidate_version": self.candidate_version,
            "method": self.candidate.method,
            "reward_model": self.reward_model,
            "n_samples": self.candidate.n_samples,
            "first_seq": self.first_seq,
            "last_seq": self.last_seq,
            "champion_value": self.champion.value,
            "champion_ci_low": self.champion.ci_low,
            "champion_ci_high": self.champion.ci_high,
            "candidate_value": self.candidate.value,
            "candidate_ci_low": self.candidate.ci_low,
            "candidate_ci_high": self.candidate.ci_high,
            "promoted": int(self.promoted),
        }


def _version(policy) -> str:
    blob = pickle.dumps(policy, protocol=pickle.HIGHEST_PROTOCOL)
    return hashlib.sha256(blob).hexdigest()[:16]


class Gate:
    """Promotes a candidate policy only when it beats the champion on the log.

    Read more in the :ref:`User Guide <running_the_loop>`.

    Parameters
    ----------
    method : {"dr", "sndr", "ips", "snips"}, default="dr"
        The off-policy estimator of :func:`~skbandit.evaluation.estimate_value`.
    reward_model : regressor, default=None
        The reward model of ``"dr"`` and ``"sndr"``, cross-fitted per arm;
        ``Ridge(alpha=1.0)`` when None.
    n_folds : int, default=2
        Folds of the reward model's cross-fitting.
    alpha : float, default=0.05
        One minus the confidence level of the candidate's interval.
    min_events : int, default=100
        Fewer closed events than this: an error, not a promotion.
    random_state : int, default=0
        Seeds the cross-fitting's folds.

    See Also
    --------
    Learner.install : What a promotion calls.

    Examples
    --------
    >>> from skbandit.serving import Gate
    >>> Gate(min_events=500).min_events
    500
    """

    def __init__(
        self,
        *,
        method="dr",
        reward_model=None,
        n_folds=2,
        alpha=0.05,
        min_events=100,
        random_state=0,
    ):
        if method not in ("dr", "sndr", "ips", "snips"):
            raise ValueError(
                f"method must be 'dr', 'sndr', 'ips' or 'snips'; got {method!r}."
            )
        self.method = method
        self.reward_model = reward_model
        self.n_folds = n_folds
        self.alpha = alpha
        self.min_events = min_events
        self.random_state = random_state

    def evaluate(self, champion, candidate, log, *, start=None, stop=None):
        """Estimate both policies' values on the log's closed events.

        Parameters
        ----------
        champion : policy or BanditPipeline
            The policy that serves.
        candidate : policy or BanditPipeline
            The policy that would replace it.
        log : DecisionLog
            Its closed, learnable events are the evaluation data.
        start, stop : int, default=None
            Only the events with ``start <= seq < stop``: evaluate a candidate
            trained on the log on events it did not train on.

        Returns
        -------
        result : GateResult
            Both estimates and whether the candidate would be promoted.
        """
        data = log.to_arrays(start=start, stop=stop)
        n = len(data.seq)
        if n < self.min_events:
            raise ValueError(
                f"The gate needs at least min_events={self.min_events} closed "
                f"events; the log has {n} in the range asked."
            )
        if data.actions.ndim != 1:
            raise ValueError(
                "The gate evaluates single-arm policies; evaluate slates with "
                "skbandit.evaluation.estimate_slate_value."
            )
        n_actions = int(final_step(champion).n_actions_)
        needs_model = self.method in ("dr", "sndr")
        expected = (
            cross_fitted_rewards(
                data.X,
                data.actions,
                data.rewards,
                n_actions,
                estimator=self.reward_model,
                n_folds=self.n_folds,
                random_state=self.random_state,
            )
            if needs_model
            else None
        )

        def value(policy):
            proba = policy.predict_action_proba(data.X, action_mask=data.action_mask)
            return estimate_value(
                proba,
                data.actions,
                data.rewards,
                data.propensities,
                method=self.method,
                expected_rewards=expected,
                alpha=self.alpha,
            )

        champion_value, candidate_value = value(champion), value(candidate)
        return GateResult(
            champion=champion_value,
            candidate=candidate_value,
            promoted=bool(candidate_value.ci_low > champion_value.value),
            champion_version=_version(champion),
            candidate_version=_version(candidate),
            reward_model=describe(self.reward_model, self.n_folds)
            if needs_model
            else "none",
            first_seq=int(np.min(data.seq)),
            last_seq=int(np.max(data.seq)),
        )

    def promote(self, candidate, learner, *, start=None, stop=None):
        """Evaluate ``candidate`` against the learner's policy; install it if it wins.

        The decision is recorded in the log either way; a promotion is recorded in
        the same transaction as the checkpoint that installs the candidate, from
        the current watermark on. The learner's lock is held throughout, so the
        policy does not learn or serve half-way through.

        Parameters
        ----------
        candidate : policy or BanditPipeline
            Of the serving policy's type.
        learner : Learner
            Holds the champion and its log.
        start, stop : int, default=None
            As in :meth:`evaluate`.

        Returns
        -------
        result : GateResult
            Both estimates and the decision.
        """
        with learner.lock:
            result = self.evaluate(
                learner.policy, candidate, learner.log, start=start, stop=stop
            )
            if result.promoted:
                learner.install(candidate, promotion=result.figures())
            else:
                learner.log._record_promotion(result.figures())
        return result
