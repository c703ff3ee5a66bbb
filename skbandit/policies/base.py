"""The family bases: what a new policy builds on, inside skbandit or outside it.

Each family of :mod:`skbandit.policies` shares its machinery through a base, and this
module is where those bases are public. A policy is ``class P(FamilyBase, BasePolicy)``
(the family base first, :class:`~skbandit.base.BasePolicy` last), with ``__init__``
written out, ``_parameter_constraints`` (the constraint types of
:mod:`skbandit.utils.validation`) and the hooks its family base leaves to it; each
base's docstring lists those hooks. :func:`skbandit.utils.estimator_checks.check_policy`
checks the result.

Why a module of its own: the family bases sit above :mod:`skbandit.base` (they are
built on it), so :mod:`skbandit.base` cannot export them without an import circle;
the families import each other's machinery only through the shared core, so no
family can host them all. ``skbandit.policies.base`` sits on top, beside the flat
:mod:`skbandit.policies`, and only re-exports.
"""
# SPDX-License-Identifier: BSD-3-Clause

from typing import TYPE_CHECKING

from skbandit.policies._core import _ridge, _slate
from skbandit.policies._core._slate import SlatePolicyMixin
from skbandit.policies._ensemble import _base as _ensemble
from skbandit.policies._ensemble._base import EnsemblePolicyMixin
from skbandit.policies._estimator._base import BaseEstimatorPolicy
from skbandit.policies._glm._logistic_groups import LogisticGroupsMixin
from skbandit.policies._linear._kernel import KernelPolicyMixin
from skbandit.policies._linear._ridge_policies import LinearPolicyMixin
from skbandit.utils._lazy import lazy_exports

if TYPE_CHECKING:  # imported at first use below: the neural base imports torch
    from skbandit.policies._core._neural_policy import NeuralPolicy

__all__ = [
    "ENSEMBLE_CONSTRAINTS",
    "LINEAR_CONSTRAINTS",
    "SLATE_CONSTRAINTS",
    "BaseEstimatorPolicy",
    "EnsemblePolicyMixin",
    "KernelPolicyMixin",
    "LinearPolicyMixin",
    "LogisticGroupsMixin",
    "NeuralPolicy",
    "SlatePolicyMixin",
]

#: Parameter constraints of a policy on ridge blocks: those of
#: :class:`~skbandit.base.BasePolicy`, ``alpha`` (a positive ridge strength) and
#: ``fit_intercept`` (a boolean). A policy on :class:`LinearPolicyMixin` starts its
#: ``_parameter_constraints`` from it.
LINEAR_CONSTRAINTS = _ridge.LINEAR_CONSTRAINTS

#: Parameter constraints of ``slate_size`` (a positive int) and ``oracle``
#: (``"topk"`` or a callable): a policy on :class:`SlatePolicyMixin` adds them to its
#: ``_parameter_constraints``.
SLATE_CONSTRAINTS = _slate.SLATE_CONSTRAINTS

#: Parameter constraints of an ensemble-sampling policy: those of
#: :class:`~skbandit.base.BasePolicy`, ``n_models``, ``perturbation_scale``,
#: ``horizon``, ``first_phase``, ``restart_base``, ``alpha`` and ``fit_intercept``.
#: A policy on :class:`EnsemblePolicyMixin` starts its ``_parameter_constraints``
#: from it.
ENSEMBLE_CONSTRAINTS = _ensemble.ENSEMBLE_CONSTRAINTS

__getattr__, __dir__ = lazy_exports(
    __name__, {"skbandit.policies._core._neural_policy": ("NeuralPolicy",)}
)
