"""STYLE rule 39c for the slate policies: with their defaults (only ``slate_size``
given, or none: every slate policy defaults to 4), CN-UCB, CN-TS, CombLinUCB and
CombLinTS learn a linear top-K semi-bandit on standard-scaled per-arm features."""
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pytest

from skbandit.environments import TopKBandit
from skbandit.policies import CNTS, CNUCB, CombLinTS, CombLinUCB

pytestmark = pytest.mark.usefixtures("one_torch_thread")

N_ARMS, N_FEATURES, N_ROUNDS = 10, 5, 200


def _regret(policy, seed):
    """Expected regret of ``policy`` and of uniformly random slates, same rounds."""
    env = TopKBandit(
        "linear", n_actions=N_ARMS, n_features=N_FEATURES, slate_size=4, noise=0.1
    ).reset(seed)
    rng = np.random.default_rng(seed)
    regret = random = 0.0
    for _ in range(N_ROUNDS):
        X = env.contexts(1) * np.sqrt(N_FEATURES)  # unit sphere -> unit variance
        slate = policy.select(X)
        regret += env.regret(slate)[0]
        random += env.regret(rng.permutation(N_ARMS)[None, :4])[0]
        policy.partial_fit(X, slate, env.rewards(slate))
    return regret, random


@pytest.mark.parametrize("cls", [CNUCB, CNTS, CombLinUCB, CombLinTS])
def test_defaults_learn_a_linear_top_k_problem(cls):
    policy = cls(random_state=0)
    assert policy.slate_size == 4  # one default for every slate policy
    regret, random = _regret(policy, 0)
    # "Well below random": CN-TS at nu = 1 (its default before 0.3) made 0.31 of
    # random's regret on seed 0 and fails. Over seeds 0-5 the defaults' worst seed
    # made 0.079 of it (CN-UCB; CN-TS 0.059, CombLinTS 0.075, CombLinUCB 0.012):
    # three times below the bound. At CN's step 0.3 (issue 33) CN-UCB's worst was
    # 0.075 and CN-TS's 0.063 (contexts read as given).
    assert regret < 0.25 * random
