"""The tags of a policy: scikit-learn's, extended with the bandit-specific ones."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from dataclasses import dataclass, field

from sklearn.utils import Tags

__all__ = [
    "BanditTags",
    "DeterministicSelectMixin",
    "ExactPartialFitMixin",
    "PolicyTags",
    "is_policy",
    "is_slate_policy",
]


@dataclass(slots=True)
class PolicyTags:
    """Bandit-specific tags of a policy.

    Parameters
    ----------
    stochastic_select : bool, default=True
        Whether ``select`` draws from the policy's random state beyond tie-breaking.
    exact_partial_fit : bool, default=False
        Whether ``partial_fit`` on chunks equals ``fit`` on their concatenation.
    exact_action_proba : bool, default=False
        Whether ``predict_action_proba`` is exact rather than a Monte Carlo estimate.
    slate : bool, default=False
        Whether the policy chooses slates of ``slate_size`` distinct arms per round
        (its actions and rewards are ``(n_samples, slate_size)``). Set by the slate
        family's base; a property of the class, never of its parameters.

    Examples
    --------
    >>> from skbandit.policies import LinUCB
    >>> LinUCB().__sklearn_tags__().policy_tags.stochastic_select
    False
    """

    stochastic_select: bool = True
    exact_partial_fit: bool = False
    exact_action_proba: bool = False
    slate: bool = False


@dataclass(slots=True)
class BanditTags(Tags):
    """The tags of scikit-learn, extended with :class:`PolicyTags`.

    Parameters
    ----------
    estimator_type : str or None
        ``"policy"`` for every skbandit policy.
    target_tags : sklearn.utils.TargetTags
        As in scikit-learn.
    transformer_tags : sklearn.utils.TransformerTags or None
        As in scikit-learn.
    classifier_tags : sklearn.utils.ClassifierTags or None
        As in scikit-learn.
    regressor_tags : sklearn.utils.RegressorTags or None
        As in scikit-learn.
    array_api_support : bool
        As in scikit-learn.
    no_validation : bool
        As in scikit-learn.
    non_deterministic : bool
        As in scikit-learn.
    requires_fit : bool
        As in scikit-learn.
    _skip_test : bool
        As in scikit-learn.
    input_tags : sklearn.utils.InputTags
        As in scikit-learn.
    policy_tags : PolicyTags
        The bandit-specific tags.

    Examples
    --------
    >>> from skbandit.policies import LinTS
    >>> LinTS().__sklearn_tags__().estimator_type
    'policy'
    """

    policy_tags: PolicyTags = field(default_factory=PolicyTags)


class DeterministicSelectMixin:
    """Tags of a policy that plays the arm of highest index (an upper bound, a mean).

    Its ``select`` draws from the random state for tie-breaking only, and its action
    probabilities are exact: the greedy distribution, ties shared.

    Examples
    --------
    >>> from skbandit.policies import LinTS, LinUCB
    >>> from skbandit.base import DeterministicSelectMixin
    >>> isinstance(LinUCB(), DeterministicSelectMixin)
    True
    >>> LinTS().__sklearn_tags__().policy_tags.stochastic_select
    True
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.policy_tags.stochastic_select = False
        tags.policy_tags.exact_action_proba = True
        return tags


class ExactPartialFitMixin:
    """Tags of a policy that learns sufficient statistics: chunks sum to the whole.

    Its ``partial_fit`` on chunks of the feedback leaves it as ``fit`` on all of it.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import LinTS
    >>> X, a, r = np.eye(4), [0, 1, 0, 1], [1.0, 0.0, 0.5, 1.0]
    >>> whole = LinTS(n_actions=2).fit(X, a, r)
    >>> chunks = LinTS(n_actions=2).partial_fit(X[:1], a[:1], r[:1])
    >>> chunks = chunks.partial_fit(X[1:], a[1:], r[1:])
    >>> np.allclose(chunks.predict_scores(X), whole.predict_scores(X))
    True
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.policy_tags.exact_partial_fit = True
        return tags


def is_policy(estimator) -> bool:
    """Return True if ``estimator`` is a bandit policy.

    Parameters
    ----------
    estimator : object
        Estimator to test.

    Returns
    -------
    out : bool
        True if the estimator's tags declare it a policy.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> from skbandit.base import is_policy
    >>> from skbandit.policies import LinUCB
    >>> is_policy(LinUCB()), is_policy(Ridge())
    (True, False)
    """
    tags = getattr(estimator, "__sklearn_tags__", None)
    return tags is not None and tags().estimator_type == "policy"


#: ``slate`` tag of each policy class read so far: the tags cost 30 us to build, more
#: than an online round, and this one belongs to the class.
_SLATE_CLASSES: dict[type, bool] = {}


def is_slate_policy(policy) -> bool:
    """Return True if ``policy`` is a slate policy (its ``slate`` policy tag).

    Parameters
    ----------
    policy : object
        A policy instance.

    Returns
    -------
    out : bool
        True if the policy's tags declare it a slate policy.

    Examples
    --------
    >>> from skbandit.utils._tags import is_slate_policy
    >>> from skbandit.policies import CombLinUCB, LinUCB
    >>> is_slate_policy(CombLinUCB(slate_size=2)), is_slate_policy(LinUCB())
    (True, False)
    """
    cls = type(policy)
    slate = _SLATE_CLASSES.get(cls)
    if slate is None:
        slate = is_policy(policy) and policy.__sklearn_tags__().policy_tags.slate
        _SLATE_CLASSES[cls] = slate
    return slate
