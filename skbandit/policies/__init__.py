"""Bandit policies: every class is a scikit-learn estimator.

The torch-backed families (the neural policies and the combinatorial neural slate
policies) are imported at their first use, not with this package: the linear, GLM,
ensemble and estimator policies, and a fresh process unpickling one of them, never
load torch.
"""
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
from skbandit.policies._random import RandomPolicy
from skbandit.utils._lazy import lazy_exports

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

#: The names whose modules import torch, by defining module (see ``lazy_exports``).
_ON_TORCH = {
    "skbandit.policies._neural._ncbf_ucb": ("NCBFUCB",),
    "skbandit.policies._neural._neural_bootstrap": ("NeuralBootstrap",),
    "skbandit.policies._neural._neural_es": ("NeuralES",),
    "skbandit.policies._neural._neural_greedy": ("NeuralEpsilonGreedy",),
    "skbandit.policies._neural._neural_linear": ("NeuralLinear",),
    "skbandit.policies._neural._neural_log_ts": ("NeuralLogTS",),
    "skbandit.policies._neural._neural_log_ucb": ("NeuralLogUCB",),
    "skbandit.policies._neural._neural_phe": ("NeuralPHE",),
    "skbandit.policies._neural._neural_ts": ("NeuralTS",),
    "skbandit.policies._neural._neural_ucb": ("NeuralUCB",),
    "skbandit.policies._slate._cn_ts": (
        "CNTS",
        "optimistic_samples",
        "theoretical_n_draws",
    ),
    "skbandit.policies._slate._cn_ucb": ("CNUCB",),
}
__getattr__, __dir__ = lazy_exports(__name__, _ON_TORCH)
