"""Policies learned from logged bandit feedback.

Every learner's ``fit(X, actions, rewards, propensities=None)`` learns a policy from
logs collected by another one (estimating the logging propensities, with a warning,
when they were not recorded); the fitted learner is a policy with ``select``,
``predict_action_proba``, ``predict`` and ``score``.
"""
# SPDX-License-Identifier: BSD-3-Clause

from skbandit.offpolicy._base import BaseOffPolicyLearner
from skbandit.offpolicy._propensity import estimate_propensities
from skbandit.offpolicy._reductions import DMLearner, DRLearner, IPWLearner
from skbandit.offpolicy._warm_start import warm_start_from_logs, warm_start_weights
from skbandit.utils._lazy import lazy_exports

__all__ = [
    "BaseOffPolicyLearner",
    "DMLearner",
    "DRLearner",
    "IPWLearner",
    "NeuralPolicyLearner",
    "estimate_propensities",
    "warm_start_from_logs",
    "warm_start_weights",
]

# The neural learner imports torch and skorch: imported at first use.
__getattr__, __dir__ = lazy_exports(
    __name__, {"skbandit.offpolicy._neural": ("NeuralPolicyLearner",)}
)
