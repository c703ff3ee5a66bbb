"""
===========================================
Regret against the delay of the feedback
===========================================

In production, rewards rarely come back one round at a time: a policy serves a batch
of requests with the model it has, and learns from their rewards later. In skbandit,
one call to ``partial_fit`` is one delayed update, whatever its size, and
:func:`~skbandit.evaluation.compare` plays a delay of ``B`` with ``batch_size=B``:
``select`` on ``B`` rounds with the current model, then one ``partial_fit`` with
their ``B`` rewards.

Within a batch, an optimistic policy such as :class:`~skbandit.policies.LinUCB`
plays a deterministic index that does not move until the batch ends; a sampling
policy such as :class:`~skbandit.policies.LinTS` draws afresh every round and
spreads its pulls over the plausible arms. Zhang, Zhou, Li and Gu ("Neural Thompson
Sampling", ICLR 2021, Experiment II) found that this makes Thompson sampling degrade
more gracefully with the delay for neural networks; our measurement of that study
is in :ref:`sphx_glr_auto_examples_measured_plot_neural_delay.py`. Here we look at
the linear policies.
"""

# Authors: The skbandit developers
# SPDX-License-Identifier: BSD-3-Clause
# ruff: noqa: E402  (sphinx-gallery cells import where they are used)

# %%
# The runs
# --------
# The digits bandit (10 arms, 1797 rounds, one image per round), LinUCB and LinTS
# with the widths of the LinUCB example, and delays from 1 to 250 rounds; three
# seeds each, the same image orders for both policies.
import os
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits

from skbandit.environments import ClassificationBandit
from skbandit.evaluation import compare
from skbandit.policies import LinTS, LinUCB

X, y = load_digits(return_X_y=True)
env = ClassificationBandit(X / 16.0, y)
n_rounds = X.shape[0]
delays = [1, 10, 50, 100, 250]
policies = {"LinUCB": LinUCB(beta=0.3), "LinTS": LinTS(nu=0.1)}

final = {name: [] for name in policies}
for B in delays:
    result = compare(
        policies, env, n_rounds=n_rounds, n_runs=3, batch_size=B, random_state=0
    )
    for name in policies:
        final[name].append(result.cumulative_regret(name)[:, -1])
final = {name: np.array(runs) for name, runs in final.items()}  # (delays, runs)

# %%
# Total regret against the delay
# ------------------------------
# Mean over the seeds with one standard error (left), and the same divided by the
# regret without delay (right). On digits the two linear policies degrade alike:
# a delay of 10 costs almost nothing, and a delay of 250 (an update every seventh
# of the data) roughly doubles the regret of both. LinTS's relative growth is a
# little smaller, but LinUCB stays ahead at every delay: a linear model learns
# digits quickly enough that the batch's stale index costs little. The gap the
# neural study shows comes from networks that need many updates to learn.
import matplotlib.pyplot as plt

fig, (ax, ax_ratio) = plt.subplots(1, 2, figsize=(9, 3.8))
for name, runs in final.items():
    mean = runs.mean(axis=1)
    se = runs.std(axis=1, ddof=1) / np.sqrt(runs.shape[1])
    ax.errorbar(delays, mean, yerr=se, marker="o", capsize=3, label=name)
    ax_ratio.plot(delays, mean / mean[0], marker="o", label=name)
for a in (ax, ax_ratio):
    a.set_xscale("log")
    a.set_xlabel("delay B (rounds per update)")
    a.legend()
ax.set_ylabel(f"total regret after {n_rounds} rounds")
ax_ratio.set_ylabel("regret / regret at B = 1")
fig.suptitle("digits bandit: linear policies under delayed feedback (3 seeds)")
fig.tight_layout()

figures = Path(os.environ.get("SKBANDIT_FIGURES_DIR", "results"))
figures.mkdir(parents=True, exist_ok=True)
fig.savefig(figures / "delayed_feedback.png", dpi=120)

# %%
# The table
# ---------
for name, runs in final.items():
    cells = "  ".join(
        f"B={B}: {m:6.1f}" for B, m in zip(delays, runs.mean(axis=1), strict=False)
    )
    print(f"{name:<7} {cells}")
