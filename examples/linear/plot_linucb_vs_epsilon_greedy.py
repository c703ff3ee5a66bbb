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
:class:`~skbandit.policies.RandomPolicy` with :func:`~skbandit.evaluation.simulate`.
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
from sklearn.datasets import load_digits

from skbandit.environments import ClassificationBandit

X, y = load_digits(return_X_y=True)
env = ClassificationBandit(X / 16.0, y)
print(f"{X.shape[0]} images, {X.shape[1]} features, {env.n_actions} arms")

# %%
# Online runs
# -----------
# With shared contexts, the linear policies fit one ridge model per arm.
# :func:`~skbandit.evaluation.simulate` clones each policy, plays ``n_rounds``
# rounds (select, reward, ``partial_fit``) and records the expected regret of every
# round. The same ``random_state`` gives every policy the same sequence of images.
from skbandit.evaluation import simulate
from skbandit.policies import EpsilonGreedy, LinTS, LinUCB, RandomPolicy

policies = {
    "LinUCB (beta=0.3)": LinUCB(beta=0.3, random_state=0),
    "LinTS (nu=0.1)": LinTS(nu=0.1, random_state=0),
    "epsilon-greedy (0.05)": EpsilonGreedy(epsilon=0.05, random_state=0),
    "random": RandomPolicy(random_state=0),
}
results = {
    name: simulate(policy, env, n_rounds=2000, random_state=0, progress=False)
    for name, policy in policies.items()
}

# %%
# Cumulative regret
# -----------------
# Every mistake adds one to the regret. The random policy errs 90% of the time;
# epsilon-greedy keeps paying for its uniform exploration and for a greedy model
# that learns slowly from its own choices; the exploring linear policies level off.
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(7, 4.5))
for name, res in results.items():
    res.plot(ax=ax, label=name)
ax.set_title("digits as a 10-armed bandit, 2000 rounds")
plt.show()

# %%
# Accuracy and time
# -----------------
# The mean reward is the online accuracy; ``total_time`` is the time spent in the
# policy's ``select`` and ``partial_fit``.
for name, res in results.items():
    print(
        f"{name:<22} regret {res.total_regret:6.0f}   accuracy "
        f"{res.mean_reward:.3f}   {res.total_time:.2f} s"
    )
