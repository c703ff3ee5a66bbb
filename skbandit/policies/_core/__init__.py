"""Machinery shared by the policy families, which are siblings.

A family (``_linear``, ``_glm``, ``_ensemble``, ``_neural``, ``_slate``,
``_estimator``) imports the base, this package and the layers below it
(``skbandit.networks``, ``skbandit.oracles``, ``skbandit.utils``), never another
family: what two families share lives here. The ridge blocks (``_ridge``), the
logistic Newton solver and its grouped rows (``_newton``, ``_grouped_rows``), the
anytime ensemble schedule (``_anytime_schedule``), the estimator model mixin
(``_estimator_model``), the neural policy base and its parameter blocks
(``_neural_policy``, ``_neural_params``), the slate mixin (``_slate``) and the
docstring templating of the families (``_docstrings``).
"""
# SPDX-License-Identifier: BSD-3-Clause
