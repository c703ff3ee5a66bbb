"""The production loop: a decision log, a learner, a gate and an HTTP face.

:class:`DecisionLog` writes every decision (event id, time, policy version,
context, available arms, chosen arm or slate, propensity) and every reward, joined
by event id, into one SQLite file. :class:`Learner` learns the closed events from
it exactly once, across restarts. :class:`Gate` promotes a candidate policy only
when its off-policy lower bound beats the serving policy's estimate.
:func:`apprentice_report` says how the policy would have done against the
caller's own choices. :func:`make_app` is the HTTP face (FastAPI, the extra
``skbandit[serve]``), imported only when asked for.
"""
# SPDX-License-Identifier: BSD-3-Clause

from skbandit.serving._learner import Learner
from skbandit.serving._log import (
    DecisionLog,
    DuplicateEventError,
    Event,
    UnknownEventError,
)

__all__ = [
    "DecisionLog",
    "DuplicateEventError",
    "Event",
    "Learner",
    "UnknownEventError",
]
