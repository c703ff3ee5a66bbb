"""The neural problems of ensemble sampling (Sun, Wang, Xu, section 7.1, Fig. 1d-e).

Used by ``ensemble_sampling/synthetic_regret.py --study neural``: Neural-ES against
Neural-TS, Neural-UCB, Neural-PHE, greedy (Neural-ES with ``sigma_R = 0``, i.e. one
network) and uniform random on the distance bandit ``h(x) = -||x - theta*||`` and the
quadratic bandit ``h(x) = 10^-2 x^T A^T A x`` (K = 50 fixed arms in R^20, noise 0.5).

Every neural policy has the paper's network (L = 3: two hidden layers of 20, ReLU,
``init="ntk"``), ``lambda = 1``, full-batch gradient descent at 0.01 on the mean loss,
warm start, and sees the mirrored arms ``[x; x] / sqrt 2`` (``MirrorNormalizer``).

Two protocols, one study each (the protocol is part of the cached run's name):

- ``neural``: the reduced protocol that fits a 2-core CPU session, ``TRAIN_EVERY``
  rounds between trainings of ``N_STEPS`` steps (set below);
- ``neural_paper``: the paper's, a training of 100 steps after every round (about
  200 times the cost: for a GPU session).

The baselines' own settings are ours (the paper gives none): NeuralTS ``nu = 0.1``
and NeuralUCB ``beta = 0.1`` (diagonal ``U``), NeuralPHE ``sigma = 0.1`` (Neural-ES's
``sigma_R``); LinTS and LinUCB (with an intercept) are linear references.
"""
# SPDX-License-Identifier: BSD-3-Clause

from skbandit.pipeline import make_bandit_pipeline
from skbandit.policies import (
    LinTS,
    LinUCB,
    NeuralES,
    NeuralPHE,
    NeuralTS,
    NeuralUCB,
    RandomPolicy,
)
from skbandit.preprocessing import MirrorNormalizer

NEURAL_PROBLEMS = ("distance", "quadratic")

#: The reduced protocol of ``--study neural``: train every 10 rounds, 50 steps.
TRAIN_EVERY = 10
N_STEPS = 50

PROTOCOLS = {
    "neural": dict(train_every=TRAIN_EVERY, n_steps=N_STEPS),
    "neural_paper": dict(train_every=1, n_steps=100),
}


def _net(study):
    return dict(
        # full batches over the whole history, as the paper (the runs cached
        # before the neural defaults' flat-cost schedule)
        batch_size=None,
        max_buffer_size=None,
        hidden_layer_sizes=(20, 20),
        standardize=False,  # the paper's inputs, as given
        alpha=1.0,
        learning_rate=0.01,
        **PROTOCOLS[study],
    )


def _mirrored(policy):
    return make_bandit_pipeline(MirrorNormalizer(), policy)


def neural_policies(study):
    """The policy factory of ``study`` (``"neural"`` or ``"neural_paper"``)."""

    def make(problem, T):
        net = _net(study)
        return {
            "Neural-ES": _mirrored(
                NeuralES(n_models=10, perturbation_scale=0.1, horizon=T, **net)
            ),
            "Neural-ES greedy": _mirrored(
                NeuralES(n_models=1, perturbation_scale=0.0, horizon=T, **net)
            ),
            "NeuralTS": _mirrored(NeuralTS(nu=0.1, **net)),
            "NeuralUCB": _mirrored(NeuralUCB(beta=0.1, **net)),
            "NeuralPHE": _mirrored(NeuralPHE(perturbation_scale=0.1, **net)),
            "Random": RandomPolicy(),
            # With an intercept: h_1 is mostly a constant (about -1.4), which a
            # linear model of unit-norm arms without one cannot fit.
            "LinTS": LinTS(alpha=0.25, nu=0.5),
            "LinUCB": LinUCB(alpha=1.0, beta=1.0),
        }

    return make
