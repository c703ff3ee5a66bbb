"""
=====================================================
Perturbed-history exploration on a linear bandit
=====================================================

:class:`~skbandit.policies.LinPHE` explores without a posterior and without a
confidence bound: every round it fits a ridge regression to its history plus, for
each past observation, ``a`` fresh Bernoulli(1/2) pseudo-rewards, and plays the
greedy arm of that fit. The pseudo-rewards are drawn anew every round, so the fit
wanders around the ridge estimate by about as much as the data leave it uncertain.

This is the linear experiment of Kveton, Szepesvari, Ghavamzadeh and Boutilier,
"Perturbed-History Exploration in Stochastic Linear Bandits" (UAI 2019): 100 fixed
arms ``x_i = (u_i, 1)``, Bernoulli rewards with means ``x_i^T theta*`` in [0, 1]. We
run it on a shorter horizon and fewer instances than the paper (10,000 rounds, 100
instances); :doc:`/papers/perturbed_history_exploration` has the full-size numbers.
"""

# Authors: The skbandit developers
# SPDX-License-Identifier: BSD-3-Clause
# ruff: noqa: E402  (sphinx-gallery cells import where they are used)

# %%
# The problem and the policies
# ----------------------------
# :class:`~skbandit.environments.LinearBandit` draws a new instance (arms and
# ``theta*``) from each run's seed. Its contexts are per-arm, ``(n_rounds, 100, d)``,
# and already end in a constant 1, so every policy gets ``fit_intercept=False``.
# LinTS uses the paper's prior N(0, I) and noise 0.5 (``alpha=0.25, nu=0.5``);
# LinUCB uses OFUL's confidence width for ``delta = 1/n``, ``R = 1/2`` and a
# bound ``S = 1`` on ``||theta*||``.
import os
from pathlib import Path

import numpy as np

from skbandit.environments import LinearBandit
from skbandit.evaluation import compare
from skbandit.policies import LinPHE, LinTS, LinUCB

n_rounds, d = 2000, 10
env = LinearBandit(n_actions=100, n_features=d)

L2 = 2.0  # ||x_i||^2 = ||u_i||^2 + 1
oful_beta = 0.5 * np.sqrt(d * np.log((1 + n_rounds * L2) * n_rounds)) + 1.0

policies = {
    "LinPHE a=0.5": LinPHE(perturbation_scale=0.5, fit_intercept=False),
    "LinPHE a=1": LinPHE(perturbation_scale=1.0, fit_intercept=False),
    "LinTS": LinTS(alpha=0.25, nu=0.5, fit_intercept=False),
    "LinUCB (OFUL width)": LinUCB(beta=oful_beta, fit_intercept=False),
}
result = compare(policies, env, n_rounds=n_rounds, n_runs=5, random_state=0)

# %%
# Cumulative regret
# -----------------
# The expected (gap) regret, mean over five instances with a band of one standard
# error. As in the paper's Figure 1, LinPHE at ``a = 1`` is close to LinTS, a
# smaller perturbation (``a = 0.5``) explores less and does better on these easy
# problems, and OFUL's theoretical width explores far too much.
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(7, 4.5))
result.plot(ax=ax)
ax.set_title(f"linear bandit, K = 100, d = {d}, 5 instances (mean +- s.e.)")
ax.legend(loc="upper left")
fig.tight_layout()

figures = Path(os.environ.get("SKBANDIT_FIGURES_DIR", "results"))
figures.mkdir(parents=True, exist_ok=True)
fig.savefig(figures / "perturbed_history.png", dpi=120)

# %%
# Final regret and time
# ---------------------
print(result.summary()[["regret_mean", "regret_se", "time_mean"]].round(2))
