"""The supervised view of a policy, so that scikit-learn's own checks can drive it.

:class:`SupervisedViewMixin` gives a policy ``fit(X, y)``; :func:`supervised_view`
builds ``<Policy>View`` classes. Both are public through
:mod:`skbandit.utils.estimator_checks`, which is also where the views live for
``pickle`` (its module ``__getattr__`` finds them, see :func:`_view_named`).
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
from sklearn.utils import check_array
from sklearn.utils.validation import check_is_fitted

from skbandit.utils._tags import is_slate_policy

__all__ = ["SupervisedViewMixin", "supervised_view"]

#: Arms of a view whose ``n_actions`` is None, until its first fit infers them.
_N_ACTIONS = 3
#: The module the views claim as theirs: pickle looks them up there.
_VIEW_MODULE = "skbandit.utils.estimator_checks"
#: Every view built in this process, by class name.
_VIEWS: dict[str, type] = {}


class SupervisedViewMixin:
    """Expose ``fit(X, y)`` so that scikit-learn's common checks can drive a policy.

    ``y`` is turned element-wise into logged feedback: ``actions`` in
    ``[0, n_actions)`` and Bernoulli-like ``rewards`` in ``{0, 1}`` (valid for linear
    and logistic policies alike). When ``n_actions`` is None, 3 arms are used and
    the first ``partial_fit`` infers them like ``fit`` does. Test-only: every other
    verb is the policy's own, Monte Carlo action probabilities (used by ``score``)
    included, with the draw count the policy ships (256).

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import LinUCB
    >>> from skbandit.utils.estimator_checks import supervised_view
    >>> view = supervised_view(LinUCB)(n_actions=2).fit(np.eye(3), [0.0, 1.0, 2.0])
    >>> view.predict(np.eye(3)).shape
    (3,)
    """

    def _bandit_targets(self, y):
        # Bad parameters must fail with InvalidParameterError before n_actions is used.
        self._validate_params()
        if y is None:
            name = type(self).__name__
            raise ValueError(
                f"{name} requires y to be passed, but the target y is None"
            )
        y = np.abs(
            check_array(
                y,
                ensure_2d=False,
                dtype=np.float64,
                input_name="y",
                ensure_min_samples=0,
            )
        )
        if getattr(self, "n_actions_", None) is not None:
            n_actions = self.n_actions_
        else:
            n_actions = self.n_actions or _N_ACTIONS
        actions = np.floor(y * 7).astype(np.int64) % n_actions
        rewards = (np.floor(y * 3) % 2).astype(np.float64)
        if is_slate_policy(self):  # distinct arms from each target
            shift = np.arange(min(self.slate_size, n_actions))
            actions = (actions[:, None] + shift) % n_actions
            rewards = np.repeat(rewards[:, None], shift.size, axis=1)
        return actions, rewards

    def fit(self, X, y=None, sample_weight=None):
        """Fit the policy on feedback derived from ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Contexts.
        y : array-like of shape (n_samples,)
            Targets, turned into actions and rewards.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the rounds.

        Returns
        -------
        self : object
            Fitted policy.
        """
        return super().fit(X, *self._bandit_targets(y), sample_weight=sample_weight)

    def partial_fit(self, X, y=None, sample_weight=None):
        """Continue learning from feedback derived from ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Contexts.
        y : array-like of shape (n_samples,)
            Targets, turned into actions and rewards.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the rounds.

        Returns
        -------
        self : object
            Fitted policy.
        """
        actions, rewards = self._bandit_targets(y)
        if self.n_actions is None and not hasattr(self, "n_actions_"):
            return super().fit(X, actions, rewards, sample_weight=sample_weight)
        return super().partial_fit(X, actions, rewards, sample_weight=sample_weight)

    #: A slate view scores by the unbiased pseudo-inverse mean: the weighted one
    #: divides by a sum of signed weights, which scikit-learn's small random checks
    #: leave at about 0, where its sign (and an error) depends on the BLAS kernel
    #: (Prescott's was negative in check_pipeline_consistency).
    _slate_value_method = "pi"

    def score(self, X, y=None):
        """Self-normalised IPS value on feedback derived from ``y``, uniform logging.

        A slate policy's is the unbiased pseudo-inverse value.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Contexts.
        y : array-like of shape (n_samples,)
            Targets, turned into actions and rewards.

        Returns
        -------
        score : float
            The policy's estimated value.
        """
        check_is_fitted(self)
        actions, rewards = self._bandit_targets(y)
        propensities = np.full(actions.shape[0], 1.0 / self.n_actions_)
        if is_slate_policy(self):
            from skbandit.evaluation import uniform_slate_propensities

            propensities = uniform_slate_propensities(self.n_actions_, self.slate_size)
        return super().score(X, actions, rewards, propensities=propensities)


def supervised_view(policy_class: type) -> type:
    """Return the module-level ``<Policy>View`` class of a policy class.

    The class is ``SupervisedViewMixin`` mixed into ``policy_class``. It is registered
    under its name in :mod:`skbandit.utils.estimator_checks`, so instances pickle; a
    fresh process re-creates the views of skbandit's own policies on unpickling.

    Parameters
    ----------
    policy_class : type
        A policy class (a :class:`~skbandit.base.BasePolicy` subclass).

    Returns
    -------
    view : type
        ``class <Policy>View(SupervisedViewMixin, policy_class)``.

    Examples
    --------
    >>> from skbandit.policies import LinTS
    >>> from skbandit.utils.estimator_checks import supervised_view
    >>> supervised_view(LinTS).__qualname__
    'LinTSView'
    """
    name = f"{policy_class.__name__}View"
    view = _VIEWS.get(name)
    if view is not None and view.__mro__[2] is policy_class:
        return view
    view = type(
        name,
        (SupervisedViewMixin, policy_class),
        {
            "__module__": _VIEW_MODULE,
            "__qualname__": name,
            "__doc__": f"Test-only supervised view of {policy_class.__name__}.",
        },
    )
    _VIEWS[name] = view
    return view


def _view_named(name: str) -> type | None:
    """The view class called ``name``, building it for a public policy if needed."""
    view = _VIEWS.get(name)
    if view is not None:
        return view
    if name.endswith("View"):
        from skbandit.utils.discovery import all_policies

        for policy_name, policy_class in all_policies():
            if f"{policy_name}View" == name:
                return supervised_view(policy_class)
    return None
