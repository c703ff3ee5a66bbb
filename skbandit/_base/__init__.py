"""The base's runtime: what :class:`~skbandit.base.BasePolicy` runs, beside it.

The decision path (``_decision``: forced rounds, the free choice, the
epsilon-mixture and the propensities, in one place), the arm choice from scores
(``_selection``), the propensities and the Monte Carlo law (``_propensities``),
the undo of a failed call (``_rollback``), arms added to a fitted policy
(``_arms``, ``_growing``) and the training schedule (``_schedule``). Private: a
policy reaches all of it through the base's verbs and hooks. Nothing here imports
:mod:`skbandit.base`, the policies or the evaluation; ``skbandit.utils`` imports
nothing from here.
"""
# SPDX-License-Identifier: BSD-3-Clause
