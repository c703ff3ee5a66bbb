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

from skbandit.serving._apprentice import ApprenticeReport, apprentice_report
from skbandit.serving._events import DuplicateEventError, Event, UnknownEventError
from skbandit.serving._gate import Gate, GateResult
from skbandit.serving._learner import Learner
from skbandit.serving._log import DecisionLog

__all__ = [
    "ApprenticeReport",
    "DecisionLog",
    "DuplicateEventError",
    "Event",
    "Gate",
    "GateResult",
    "Learner",
    "UnknownEventError",
    "apprentice_report",
    "make_app",
]


def __getattr__(name):
    # The HTTP face needs FastAPI, an optional extra: imported on first use only, so
    # that the log and the learner work without it.
    if name == "make_app":
        try:
            from skbandit.serving._app import make_app
        except ImportError as exc:
            raise ImportError(
                "skbandit.serving.make_app needs FastAPI and uvicorn: "
                "pip install 'skbandit[serve]'"
                f" ({exc})"
            ) from exc
        return make_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
