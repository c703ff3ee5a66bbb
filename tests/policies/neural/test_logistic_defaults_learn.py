"""STYLE rule 39c for the neural logistic policies: with their defaults (only
``n_actions`` given), NeuralLog-UCB, NeuralLog-TS and NCBF-UCB learn a Bernoulli
bandit with a linear logit on standard-scaled per-arm features."""
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pytest
from scipy.special import expit

from skbandit.policies import NCBFUCB, NeuralLogTS, NeuralLogUCB

pytestmark = pytest.mark.usefixtures("one_torch_thread")

N_ARMS, N_FEATURES, N_ROUNDS = 4, 5, 800


def _regret(policy, seed):
    """Expected regret of ``policy`` and of uniformly random arms, same rounds."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=N_FEATURES)
    theta *= 3.0 / np.linalg.norm(theta)  # logits of spread 3: arms differ clearly
    X = rng.normal(size=(N_ROUNDS, N_ARMS, N_FEATURES)).astype(np.float32)
    p = expit(X @ theta)
    best = p.max(axis=1)
    regret = 0.0
    for t in range(N_ROUNDS):
        a = policy.select(X[t : t + 1])
        regret += best[t] - p[t, a[0]]
        r = (rng.random() < p[t, a[0]]).astype(float)
        policy.partial_fit(X[t : t + 1], a, np.array([r]))
    return regret, float((best - p.mean(axis=1)).sum())


@pytest.mark.parametrize(
    "cls, variant",
    [(NeuralLogUCB, 1), (NeuralLogUCB, 2), (NeuralLogTS, 1), (NeuralLogTS, 2),
     (NCBFUCB, None)],  # fmt: skip
)
def test_defaults_learn_a_logistic_bandit(cls, variant):
    seed = 0
    # Variant is the algorithm, not a tuning: both are checked at their defaults.
    params = {} if variant is None else {"variant": variant}
    regret, random = _regret(cls(n_actions=N_ARMS, random_state=seed, **params), seed)
    # "Well below random": over seeds 0-5 the defaults' worst seed made 0.29 of
    # random's regret (NCBF-UCB on seed 3; the NeuralLog variants at most 0.15),
    # on the full-batch schedule and on today's mini-batches of 64 alike.
    # At 400 rounds NCBF-UCB's seed 3 made 0.57: the 800 rounds give the room. The
    # defaults before 0.3 (nu = 1, g not divided by sqrt(m)) make 0.72-0.92 of it
    # on seed 0 (NeuralLog-UCB-2, NeuralLog-TS-2, NCBF-UCB), so the test fails on
    # them.
    assert regret < 0.5 * random
