"""Off-policy value estimators as scikit-learn scorers, for model selection.

``make_ope_scorer("snips")`` scores a policy's ``predict_action_proba`` on logged
data, so ``GridSearchCV`` and ``cross_validate`` tune policies on logs. The logged
``rewards`` and ``propensities`` reach the scorer through metadata routing.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sklearn import get_config
from sklearn.metrics import make_scorer

from skbandit.evaluation._ope import ips_value, replay_value, snips_value

__all__ = ["make_ope_scorer"]


class _LoggedActionsFirst:
    """``value(action_proba, actions, ...)`` called as scikit-learn scorers call.

    ``make_scorer`` calls ``score_func(y_true, y_pred, **metadata)``: the logged
    actions (the split's ``y``) first, the policy's ``predict_action_proba`` second.
    """

    def __init__(self, value: Callable):
        self.value = value
        self.__name__ = value.__name__

    def __call__(self, actions, action_proba, **kwargs):
        return self.value(action_proba, actions, **kwargs)


@dataclass(frozen=True)
class _OPEMethod:
    """How to score with one estimator: the value function and what it consumes."""

    value: Callable
    response_method: tuple[str, ...] = ("predict_action_proba",)
    metadata: tuple[str, ...] = ("rewards", "propensities")


#: Registry of the scorer methods; a new estimator is one entry.
_OPE_METHODS: dict[str, _OPEMethod] = {
    "ips": _OPEMethod(ips_value),
    "snips": _OPEMethod(snips_value),
    # Replay needs only the rewards; propensities are requested too (optional, only
    # checked for uniform logging) so that one params dict serves every scorer.
    "replay": _OPEMethod(replay_value),
    # "dm", "dr", "sndr" and "switch-dr" need a reward model's expected rewards for
    # the scored fold, which a scorer cannot get from routed metadata alone; they
    # are left out of the registry (use estimate_value).
}


def make_ope_scorer(method: str = "snips", **kwargs):
    """Make a scorer that estimates a policy's value on logged bandit feedback.

    The scorer calls the policy's ``predict_action_proba(X)`` and feeds it, with the
    logged actions (the ``y`` of the cross-validation split), to the estimator's
    value function. The logged ``rewards`` and ``propensities`` are requested as
    metadata, so metadata routing must be enabled when the scorer is made and used.

    Parameters
    ----------
    method : {"ips", "snips", "replay"}, default="snips"
        Off-policy estimator: inverse propensity scoring, its self-normalised
        version (lower variance, the default of ``BasePolicy.score``), or replay
        (Li et al., 2011; for uniformly logged data, propensities optional).
    **kwargs : dict
        Extra keyword arguments of the value function, e.g. ``clip`` for ``"ips"``.

    Returns
    -------
    scorer : callable
        A scorer ``scorer(policy, X, actions, *, rewards, propensities)``; greater
        is better.

    Raises
    ------
    ValueError
        If ``method`` is unknown.
    RuntimeError
        If metadata routing is disabled.

    See Also
    --------
    skbandit.evaluation.ips_value : The IPS estimate.
    skbandit.evaluation.snips_value : The self-normalised IPS estimate.
    skbandit.evaluation.replay_value : The replay estimate.

    Examples
    --------
    >>> import numpy as np
    >>> import sklearn
    >>> from sklearn.model_selection import cross_val_score
    >>> from skbandit.evaluation import make_ope_scorer
    >>> from skbandit.policies import LinUCB
    >>> rng = np.random.RandomState(0)
    >>> X, actions = rng.normal(size=(60, 3)), rng.randint(3, size=60)
    >>> rewards, propensities = rng.binomial(1, 0.5, size=60), np.full(60, 1 / 3)
    >>> with sklearn.config_context(enable_metadata_routing=True):
    ...     policy = LinUCB(n_actions=3).set_fit_request(rewards=True)
    ...     scores = cross_val_score(
    ...         policy, X, actions, cv=3, scoring=make_ope_scorer("snips"),
    ...         params={"rewards": rewards, "propensities": propensities})
    >>> scores.shape
    (3,)
    """
    if method not in _OPE_METHODS:
        raise ValueError(
            f"method must be one of {sorted(_OPE_METHODS)}, got {method!r}."
        )
    if not get_config().get("enable_metadata_routing", False):
        raise RuntimeError(
            "make_ope_scorer needs metadata routing, so that rewards and "
            "propensities reach the scorer: call "
            "sklearn.set_config(enable_metadata_routing=True) (or use "
            "sklearn.config_context(enable_metadata_routing=True)) before making "
            "and using the scorer."
        )
    spec = _OPE_METHODS[method]
    scorer = make_scorer(
        _LoggedActionsFirst(spec.value), response_method=spec.response_method, **kwargs
    )
    return scorer.set_score_request(**dict.fromkeys(spec.metadata, True))
