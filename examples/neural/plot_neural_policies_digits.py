"""
===================================================
Neural bandits against LinUCB on handwritten digits
===================================================

The set-up of Zhang, Zhou, Li and Gu, "Neural Thompson Sampling" (ICLR 2021,
arXiv:2010.00827, Experiment I) on a data set that ships with scikit-learn: each
round shows one 8x8 image of a digit, the policy guesses its class (10 arms) and is
paid 1 when right, so the regret counts mistakes.

We run the neural policies that share one network core,
:class:`~skbandit.policies.NeuralTS`, :class:`~skbandit.policies.NeuralUCB`,
:class:`~skbandit.policies.NeuralEpsilonGreedy`,
:class:`~skbandit.policies.NeuralLinear` and
:class:`~skbandit.policies.NeuralBootstrap`, against
:class:`~skbandit.policies.LinUCB` and :class:`~skbandit.policies.RandomPolicy` with
:func:`~skbandit.evaluation.compare`, over a few seeds.

The settings below are a cheaper version of the paper's so that the whole script runs
in a few minutes on two CPU cores; the section *Settings* says which values reproduce
the paper. With ``SKBANDIT_DOCS_QUICK=1`` in the environment, as when this gallery is
built, it runs a smaller network on the first 600 images and two seeds only, so the
figure below is noisier than a full run.
"""

# Authors: The skbandit developers
# SPDX-License-Identifier: BSD-3-Clause
# ruff: noqa: E402  (sphinx-gallery cells import where they are used)

# %%
# The digits bandit
# -----------------
# The paper normalises every context to unit length. The network of the paper (no
# biases, output scaled by ``sqrt(m)``, mirrored initialisation) starts from
# ``f(x; theta_0) = 0`` only on contexts whose two halves are equal, so we use
# :class:`~skbandit.preprocessing.MirrorNormalizer`, ``x -> [x; x] / (sqrt(2) ||x||)``
# (the paper's Assumption 3.4): 128 features of unit norm. It works row by row, so
# transforming the whole data set up front leaks nothing. Without it the untrained
# network outputs values of order 1 on every arm, which it must first unlearn.
#
# :class:`~skbandit.environments.ClassificationBandit` shows the 1797 images once
# each, in an order shuffled per seed.
import os
from pathlib import Path

from skbandit.datasets import load_digits_bandit
from skbandit.environments import ClassificationBandit
from skbandit.preprocessing import MirrorNormalizer

X, y = load_digits_bandit(return_X_y=True)
X = MirrorNormalizer().fit_transform(X)
env = ClassificationBandit(X, y)
QUICK = os.environ.get("SKBANDIT_DOCS_QUICK") == "1"
n_rounds = 600 if QUICK else X.shape[0]
print(f"{n_rounds} images, {X.shape[1]} features, {env.n_actions} arms")

# %%
# Settings
# --------
# The paper's network has one hidden layer of ``m = 100`` units, is trained with
# ``J = 100`` full-batch gradient steps after every round on everything seen so far,
# keeps the diagonal of ``U`` (``covariance="diag"``, the default) and stops training
# at round 1000. In skbandit that is::
#
#     NeuralTS(hidden_layer_sizes=(100,), n_steps=100, covariance="diag",
#              max_train_rounds=1000, alpha=..., nu=...)
#
# with ``compare(..., batch_size=1)``, ``learning_rate=1e-3`` and ``(alpha, nu)``
# tuned over ``{1, 0.1, 0.01, 0.001} x {0.1, ..., 1e-5}``; NeuralBootstrap uses
# ``n_models=10``. Here, to keep the run short:
#
# * ``hidden_layer_sizes=(64,)`` and ``n_steps=50`` at a larger step,
#   ``learning_rate=0.02``;
# * feedback arrives in batches of 10 rounds (``batch_size=10``): each batch is one
#   delayed update, the paper's Experiment II with a delay of 10, so the networks
#   train 180 times instead of 1797;
# * ``max_train_rounds=1000`` as in the paper (after round 1000 the networks and
#   ``U`` are frozen, and the regret keeps counting);
# * 5 bootstrapped networks instead of 10, and 3 seeds instead of 8.
#
# ``nu``, ``beta`` and ``epsilon`` were picked by a coarse search on one seed;
# with the diagonal ``U`` the widths are not comparable to the full-matrix ones,
# so tune them for your data (the :doc:`neural policies' user guide
# </user_guide/neural>` shows ``GridSearchCV`` on logged data).
#
# In quick mode the network has 32 units and takes 20 steps, and training stops at
# round 400.
from skbandit.policies import (
    LinUCB,
    NeuralBootstrap,
    NeuralEpsilonGreedy,
    NeuralLinear,
    NeuralTS,
    NeuralUCB,
    RandomPolicy,
)

# The paper's inputs are the mirrored unit-norm images as given
# (``standardize=False``), and the step 0.02 is made for them: standardised
# online, each of the 128 mirrored features has unit variance, so a row's squared
# norm is about 128 instead of 1, and this step (twenty times the default) diverges.
# With ``standardize="auto"``, keep the default ``learning_rate``.
network = {
    "hidden_layer_sizes": (64,),
    "n_steps": 50,
    "learning_rate": 0.02,
    "standardize": False,
}
cutoff = {"max_train_rounds": 1000}
if QUICK:
    network = {**network, "hidden_layer_sizes": (32,), "n_steps": 20}
    cutoff = {"max_train_rounds": 400}
n_runs = 2 if QUICK else 3
policies = {
    "NeuralTS": NeuralTS(alpha=0.01, nu=0.1, **network, **cutoff),
    "NeuralUCB": NeuralUCB(alpha=0.01, beta=1.0, **network, **cutoff),
    "Neural eps-greedy": NeuralEpsilonGreedy(
        alpha=0.01, epsilon=0.05, **network, **cutoff
    ),
    "NeuralLinear": NeuralLinear(alpha=0.01, nu=0.1, **network, **cutoff),
    # NeuralBootstrap has no training cut-off: it trains to the end.
    "NeuralBootstrap": NeuralBootstrap(n_models=5, alpha=0.01, **network),
    "LinUCB": LinUCB(beta=1.0),
    "random": RandomPolicy(),
}

# %%
# Online runs
# -----------
# :func:`~skbandit.evaluation.compare` clones every policy and plays it on each seed:
# run ``i`` shows every policy the same image order (common random numbers) and sets
# each policy's ``random_state`` from ``random_state``. ``n_jobs=2`` runs two
# simulations at a time, each in its own process.
from time import perf_counter

from skbandit.evaluation import compare

start = perf_counter()
result = compare(
    policies,
    env,
    n_rounds=n_rounds,
    n_runs=n_runs,
    batch_size=10,
    n_jobs=2,
    random_state=0,
)
print(f"{len(result.results)} runs in {perf_counter() - start:.0f} s")

# %%
# Cumulative regret
# -----------------
# Mean over the seeds, with a band of one standard error. The random policy errs 90%
# of the time, far above the frame. The curves of the neural policies bend while
# they train and become straight lines after the training cut-off (dotted), where
# training stops: from there on each makes mistakes at its final error rate (the
# bootstrap, which has no cut-off, and LinUCB keep learning). In the full run (1797
# rounds, three seeds) the optimistic and the sampling networks (NeuralUCB,
# NeuralTS) end level with or below LinUCB, whose ridge fit is exact after every
# batch while a network only takes 50 steps; epsilon-greedy pays for exploring
# uniformly, and
# NeuralLinear and the bootstrap vary most from seed to seed. The quick run of the
# documentation (600 rounds, a smaller network) is too short for the networks to
# catch up with LinUCB. A few seeds separate little more than the extremes: read the
# standard errors in the table before ranking the middle of the field.
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(7, 4.5))
result.plot(ax=ax)
ax.axvline(cutoff["max_train_rounds"], color="grey", linestyle=":", linewidth=1)
# Zoom on the learners; the random policy's line leaves the frame (see the table).
learners = [name for name in result.policies if name != "random"]
top = max(result.cumulative_regret(name).mean(axis=0)[-1] for name in learners)
ax.set_ylim(0, 1.5 * top)
ax.set_title(f"digits as a 10-armed bandit, {n_runs} seeds (mean +- s.e.)")
ax.legend(loc="upper left", fontsize="small")
fig.tight_layout()

figures = Path(os.environ.get("SKBANDIT_FIGURES_DIR", "results"))
figures.mkdir(parents=True, exist_ok=True)
fig.savefig(figures / "neural_policies_digits.png", dpi=120)

# %%
# Regret, accuracy and time
# -------------------------
# ``regret_mean`` counts the mistakes over the rounds played; the online accuracy is
# one minus the mistake rate; ``time_mean`` is the time each run spent in the
# policy's ``select`` and ``partial_fit``.
table = result.summary()
table["accuracy"] = 1 - table["regret_mean"] / n_rounds
print(
    table[["regret_mean", "regret_se", "accuracy", "time_mean"]].to_string(
        float_format=lambda v: f"{v:.3f}" if v < 1 else f"{v:.1f}"
    )
)
