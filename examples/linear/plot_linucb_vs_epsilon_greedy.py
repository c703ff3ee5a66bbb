"""
========================================================
LinUCB against epsilon-greedy on a classification bandit
========================================================

A labelled data set becomes a contextual bandit: each round shows one image of a
handwritten digit, the policy guesses its class (one of 10 arms) and is paid 1 when
it is right, 0 otherwise. It never learns the true class of a wrong guess, so it has
to explore. Because the expected rewards are known, the regret is exact: it counts
the mistakes.

We compare optimism (:class:`~skbandit.policies.LinUCB`), posterior sampling
(:class:`~skbandit.policies.LinTS`), undirected exploration
(:class:`~skbandit.policies.EpsilonGreedy`) and the uniform
:class:`~skbandit.policies.RandomPolicy` over several seeds with
:func:`~skbandit.evaluation.compare`.
"""

# Authors: The skbandit developers
# SPDX-License-Identifier: BSD-3-Clause
# ruff: noqa: E402  (sphinx-gallery cells import where they are used)

# %%
# The digits bandit
# -----------------
# :class:`~skbandit.environments.ClassificationBandit` shows the rows in a shuffled
# order, without replacement, and starts a new order once all have been shown.
# Pixel intensities run from 0 to 16; dividing by 16 keeps the features in [0, 1].
import os
from pathlib import Path

from sklearn.datasets import load_digits

from skbandit.environments import ClassificationBandit

X, y = load_digits(return_X_y=True)
env = ClassificationBandit(X / 16.0, y)
print(f"{X.shape[0]} images, {X.shape[1]} features, {env.n_actions} arms")

# %%
# Online runs
# -----------
# With shared contexts, the linear policies fit one ridge model per arm.
# :func:`~skbandit.evaluation.compare` clones each policy and plays ``n_rounds``
# rounds (select, reward, ``partial_fit``) on each of ``n_runs`` seeds, recording the
# expected regret of every round. Run ``i`` shows every policy the same sequence of
# images (common random numbers), so the differences between policies are not
# differences between image orders.
from skbandit.evaluation import compare
from skbandit.policies import EpsilonGreedy, LinTS, LinUCB, RandomPolicy

policies = {
    "LinUCB (beta=0.3)": LinUCB(beta=0.3),
    "LinTS (nu=0.1)": LinTS(nu=0.1),
    "epsilon-greedy (0.05)": EpsilonGreedy(epsilon=0.05, schedule="constant"),
    "random": RandomPolicy(),
}
result = compare(policies, env, n_rounds=2000, n_runs=5, random_state=0)

# %%
# Cumulative regret
# -----------------
# Every mistake adds one to the regret; the band is one standard error of the mean
# over the five seeds. The random policy errs 90% of the time; epsilon-greedy keeps
# paying for its uniform exploration and for a greedy model that learns slowly from
# its own choices; the exploring linear policies level off.
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(7, 4.5))
result.plot(ax=ax)
ax.set_title("digits as a 10-armed bandit, 2000 rounds, 5 seeds (mean +- s.e.)")
ax.legend(loc="upper left")
fig.tight_layout()

figures = Path(os.environ.get("SKBANDIT_FIGURES_DIR", "results"))
figures.mkdir(parents=True, exist_ok=True)
fig.savefig(figures / "linucb_vs_epsilon_greedy.png", dpi=120)

# %%
# Regret, accuracy and time
# -------------------------
# The online accuracy is one minus the mistake rate; ``time_mean`` is the time a
# run spent in the policy's ``select`` and ``partial_fit``.
table = result.summary()
table["accuracy"] = 1 - table["regret_mean"] / 2000
print(table[["regret_mean", "regret_se", "accuracy", "time_mean"]].round(3))
