"""Bandit policies: every class is a scikit-learn estimator."""
# SPDX-License-Identifier: BSD-3-Clause

from skbandit.policies._linear import EpsilonGreedy, LinTS, LinUCB
from skbandit.policies._random import RandomPolicy

__all__ = ["EpsilonGreedy", "LinTS", "LinUCB", "RandomPolicy"]
