"""Bandit policies: every class is a scikit-learn estimator."""
# SPDX-License-Identifier: BSD-3-Clause

from skbandit.policies._ensemble._glm_es import GLMES
from skbandit.policies._ensemble._lin_es import LinES
from skbandit.policies._estimator._bootstrapped_ts import BootstrappedTS
from skbandit.policies._estimator._inverse_gap import FALCON, SquareCB
from skbandit.policies._glm._ecolog import ECOLog
from skbandit.policies._glm._glm_ucb import GLMUCB, UCBGLM
from skbandit.policies._glm._log_ts import LogTS
from skbandit.policies._glm._logistic_ucb1 import LogisticUCB1
from skbandit.policies._glm._perturbed_history import LinPHE, LogPHE
from skbandit.policies._linear._comb_linear import CombLinTS, CombLinUCB
from skbandit.policies._linear._kernel import KernelTS, KernelUCB
from skbandit.policies._linear._ridge_policies import EpsilonGreedy, LinTS, LinUCB
from skbandit.policies._neural._ncbf_ucb import NCBFUCB
from skbandit.policies._neural._neural_bootstrap import NeuralBootstrap
from skbandit.policies._neural._neural_es import NeuralES
from skbandit.policies._neural._neural_greedy import NeuralEpsilonGreedy
from skbandit.policies._neural._neural_linear import NeuralLinear
from skbandit.policies._neural._neural_log_ts import NeuralLogTS
from skbandit.policies._neural._neural_log_ucb import NeuralLogUCB
from skbandit.policies._neural._neural_phe import NeuralPHE
from skbandit.policies._neural._neural_ts import NeuralTS
from skbandit.policies._neural._neural_ucb import NeuralUCB
from skbandit.policies._random import RandomPolicy
from skbandit.policies._slate._cn_ts import (
    CNTS,
    optimistic_samples,
    theoretical_n_draws,
)
from skbandit.policies._slate._cn_ucb import CNUCB

__all__ = [
    "FALCON",
    "BootstrappedTS",
    "CNTS",
    "CNUCB",
    "ECOLog",
    "GLMES",
    "GLMUCB",
    "UCBGLM",
    "CombLinTS",
    "CombLinUCB",
    "EpsilonGreedy",
    "KernelTS",
    "KernelUCB",
    "LinES",
    "LinPHE",
    "LinTS",
    "LinUCB",
    "LogPHE",
    "LogTS",
    "LogisticUCB1",
    "NCBFUCB",
    "NeuralBootstrap",
    "NeuralES",
    "NeuralEpsilonGreedy",
    "NeuralLinear",
    "NeuralLogTS",
    "NeuralLogUCB",
    "NeuralPHE",
    "NeuralTS",
    "NeuralUCB",
    "RandomPolicy",
    "SquareCB",
    "optimistic_samples",
    "theoretical_n_draws",
]
