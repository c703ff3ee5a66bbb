"""Every policy learns on raw features with its defaults (issue 33).

A bandit sees its contexts one round at a time, so a user cannot fit a scaler first.
Each policy runs with its defaults (``random_state`` and ``n_actions`` only; a slate
policy ``slate_size=1``, a slate of one class) online on scikit-learn's wine and
breast cancer data **as shipped, unscaled** (features from 0.01 to 1,680 and from
0.001 to 4,254), as classification bandits (reward 1 for the right class), and its
mean number of mistakes over the seeds must stay below half of a uniformly random
policy's expected mistakes, ``n (1 - 1/K)``.

The margins (300 rounds, seeds 0-5; the test averages seeds 0-2): the worst mean of
any three seeds is 0.25 of random's on wine (LogisticUCB1; ECOLog 0.24, KernelTS
0.22) and 0.30 on breast cancer (LogisticUCB1; ECOLog 0.29); before the logistic GLMs
and GLM-ES standardised, LogPHE made 0.31 on wine (its seed 4 alone 104 of 200), now
0.13 (and 0.22 on breast cancer), GLM-ES 0.24 (now 0.06 on seeds 0-2). Before the
online standardisation (``standardize=False``), KernelTS (0.79 of random on wine,
0.96 on breast cancer), ECOLog (0.91), LogisticUCB1 (0.81) and KernelUCB (0.40 and
0.42, near the bound) failed or nearly failed it, and CombLinTS at its former
``nu=1`` made 0.48 on wine.

The policies on scikit-learn estimators, same protocol: worst means of three seeds
0.31 (FALCON, wine) and 0.36 (FALCON, breast cancer) on their default random-feature
kernel ridge (BootstrappedTS 0.27 and 0.20); FALCON on its former default ``Ridge()``
made 0.30 and 0.37, SquareCB and BootstrappedTS on their former online ridge at most
0.21. SquareCB's former default
``SGDRegressor(learning_rate="constant", eta0=0.05)`` made 1.03 and 0.97 of random's.

The neural policies (seeds 0-2 only, the test's: their runs are slower), 300
rounds: on wine 0.09 (NeuralUCB, NeuralPHE) to 0.25 (NeuralLogUCB; NeuralLogTS 0.23,
NeuralTS 0.21, NCBF-UCB 0.20) of random's, and CN-UCB (one-arm slates) 0.41; on breast
cancer NeuralTS 0.28, NeuralEpsilonGreedy 0.23, NeuralUCB 0.14. Without the
standardisation NeuralTS, NeuralUCB, NeuralEpsilonGreedy, NeuralLinear, NeuralPHE,
NeuralES, NeuralBootstrap, CN-UCB and CN-TS stopped with a ``NumericalError``
(diverged) and the logistic ones made about random's mistakes (NeuralLogTS 107 of 100
in 150 rounds of wine). On the flat-cost neural defaults, seeds 0-5, 300 rounds, the
worst mean of any three seeds: NCBF-UCB 0.28 (wine) and 0.37 (breast cancer; seed 3
alone 0.46), NeuralLinear 0.16 and 0.19, NeuralES 0.11 and 0.18, NeuralBootstrap 0.16
and 0.19. CN-UCB and CN-TS are ``slow`` (their cost, below).
"""
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_wine

from skbandit import policies
from skbandit.utils._tags import is_slate_policy
from skbandit.utils.discovery import all_policies

SEEDS = (0, 1, 2)
N_ROUNDS = 300
HALF = 0.5

LINEAR_AND_GLM = [
    "EpsilonGreedy",
    "LinUCB",
    "LinTS",
    "LinPHE",
    "KernelUCB",
    "KernelTS",
    "LinES",
    "GLMUCB",
    "UCBGLM",
    "LogTS",
    "LogPHE",
    "ECOLog",
    "LogisticUCB1",
    "GLMES",
    "CombLinUCB",
    "CombLinTS",
]
ESTIMATOR = ["SquareCB", "FALCON", "BootstrappedTS"]
#: Neural policies: on their flat-cost defaults, 1-4 CPU-seconds a case (three
#: seeds of 300 rounds), the several-network ones included: in the default run.
NEURAL = [
    "NeuralEpsilonGreedy",
    "NeuralTS",
    "NeuralUCB",
    "NeuralPHE",
    "NeuralLogTS",
    "NeuralLogUCB",
    "NeuralLinear",
    "NeuralES",
    "NeuralBootstrap",
    "NCBFUCB",
]
#: CN-UCB and CN-TS on shared contexts read them in the disjoint encoding (one block
#: of ``d`` features per arm) and keep a full ``Z`` over the network's gradient:
#: about 4,000 parameters on wine, 6,000 on breast cancer, so a case takes 30
#: CPU-seconds or more (a rank-one update of a 4,000-square inverse per row).
NEURAL_SLOW = ["CNUCB", "CNTS"]
#: Runs of more than 10 CPU-seconds each: the combinatorial neural policies
#: (above). GLM-ES on breast cancer, slow when it read the contexts as given (its
#: Newton steps on raw features of scale 10^3), takes 0.6 CPU-seconds a seed
#: standardised; the longest ring-norm cases, LogPHE and BootstrappedTS, 1-2.
SLOW = {(name, data) for name in NEURAL_SLOW for data in ("wine", "breast_cancer")}


def load_ring_norm(return_X_y=True):
    """Breiman's ring norm as KEEL ships it (7,400 rows, values times 1,000, so of
    scale 10^3): class 0 from N(0, 4 I), class 1 from N(a 1, I), a = 2 / sqrt(20),
    in 20 dimensions; drawn here, once, from seed 0."""
    rng = np.random.default_rng(0)
    y = rng.integers(2, size=7400)
    X = np.where(
        y[:, None] == 0,
        2.0 * rng.standard_normal((7400, 20)),
        2.0 / np.sqrt(20) + rng.standard_normal((7400, 20)),
    )
    return np.round(X * 1000.0), y


DATA = {"wine": load_wine, "breast_cancer": load_breast_cancer}
#: Ring norm: a longer run and its own bar. No linear score separates its classes
#: well: the best linear classifier, fitted on all of KEEL's rows, errs on 24% of
#: them (0.49 of random's mistakes, 5-fold cross-validated), so a linear or GLM
#: policy cannot reach half of random's mistakes in a few hundred rounds. At 500
#: rounds, seeds 0-5, the worst mean of any three seeds was 0.69 of random's
#: (CombLinUCB; 0.65 on seeds 0-2), 0.58-0.67 for the other linear, GLM and
#: ensemble policies (LogTS 0.69 as given, 0.59 standardised), KernelTS 0.60,
#: KernelUCB 0.38 and the estimator policies 0.21-0.33; hence the bar of 0.75. The
#: case is the raw scale: 20 features of scale 10^3, on which GLM-ES's members, read
#: as given, stopped (Newton did not converge) within 60 rounds on every seed.
DATA["ring_norm"] = load_ring_norm
ROUNDS = {"ring_norm": 500}
BARS = {"ring_norm": 0.75}


def mistakes(policy, X, y, n_rounds, seed):
    """Mistakes of ``policy`` online over ``n_rounds`` rows drawn with replacement."""
    rows = np.random.default_rng(seed).integers(len(y), size=n_rounds)
    total = 0
    for i in rows:
        arm = policy.select(X[i : i + 1])  # shape (1,), or (1, 1) for a slate
        reward = (arm == y[i]).astype(float)
        total += int(reward.item() == 0)
        policy.partial_fit(X[i : i + 1], arm, reward)
    return total


def mistakes_and_random(name, data, seeds=SEEDS):
    """Each seed's mistakes of the policy ``name`` at its defaults on ``data``, and
    a uniformly random policy's expected mistakes."""
    X, y = DATA[data](return_X_y=True)
    n_classes, n_rounds = len(np.unique(y)), ROUNDS.get(data, N_ROUNDS)
    cls = getattr(policies, name)
    made = []
    for seed in seeds:
        policy = cls(n_actions=n_classes, random_state=seed)
        if is_slate_policy(policy):
            policy.set_params(slate_size=1)
        made.append(mistakes(policy, X, y, n_rounds, seed))
    return made, n_rounds * (1 - 1 / n_classes)


def assert_learns_raw(name, data, seeds=SEEDS):
    made, random = mistakes_and_random(name, data, seeds)
    assert np.mean(made) < BARS.get(data, HALF) * random, (name, data, made, random)


def _cases(names, datasets=tuple(DATA)):
    for name in names:
        for data in datasets:
            marks = [pytest.mark.slow] if (name, data) in SLOW else []
            yield pytest.param(name, data, marks=marks, id=f"{name}-{data}")


def test_every_policy_is_checked():
    # A policy added to the library joins one of the lists, or this fails.
    checked = [*LINEAR_AND_GLM, *ESTIMATOR, *NEURAL, *NEURAL_SLOW]
    assert len(checked) == len(set(checked))
    assert set(checked) == {name for name, _ in all_policies()} - {"RandomPolicy"}


@pytest.mark.parametrize("name, data", list(_cases(LINEAR_AND_GLM)))
def test_linear_and_glm_defaults_learn_on_raw_features(name, data):
    assert_learns_raw(name, data)


@pytest.mark.parametrize("name, data", list(_cases(ESTIMATOR)))
def test_estimator_defaults_learn_on_raw_features(name, data):
    assert_learns_raw(name, data)


@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize(
    "name, data", list(_cases(NEURAL + NEURAL_SLOW, ("wine", "breast_cancer")))
)
def test_neural_defaults_learn_on_raw_features(name, data):
    assert_learns_raw(name, data)
