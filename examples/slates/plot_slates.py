"""
=====================================================
Slates: top-K semi-bandits and their off-policy value
=====================================================

A slate policy chooses ``slate_size`` distinct arms each round and observes the score of
every chosen arm. This example runs the linear combinatorial policies of Wen, Kveton and
Ashkan (ICML 2015) on the top-K problem of Hwang, Chai and Oh ("Combinatorial Neural
Bandits", ICML 2023), then estimates a slate policy's value from uniformly logged slates
with the pseudo-inverse estimator of Swaminathan et al. (NeurIPS 2017).
"""

# Authors: The skbandit developers
# SPDX-License-Identifier: BSD-3-Clause
# ruff: noqa: E402  (sphinx-gallery cells import where they are used)

# %%
# Regret on the top-K problem
# ---------------------------
# 20 arms with contexts on the unit sphere, slates of 4, the linear score
# ``h1(x) = x^T a`` with noise 0.01. The regret of a slate is the top-4 sum of the
# expected scores minus the slate's. CombLinTS's posterior scale ``nu`` plays the part
# of the noise level: ``nu=1`` (the paper's setting) explores far too much here.
import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from skbandit.environments import TopKBandit
from skbandit.evaluation import compare
from skbandit.policies import CombLinTS, CombLinUCB

QUICK = os.environ.get("SKBANDIT_DOCS_QUICK") == "1"
env = TopKBandit("linear", n_actions=20, n_features=20, slate_size=4)
policies = {
    "CombLinUCB": CombLinUCB(slate_size=4),
    "CombLinTS nu=0.1": CombLinTS(slate_size=4, nu=0.1),
    "CombLinTS nu=1": CombLinTS(slate_size=4, nu=1.0),
}
result = compare(policies, env, n_rounds=500 if QUICK else 2000, n_runs=3)
print(result.summary())
ax = result.plot()
ax.set_title("Top-4 of 20 arms, h1 = x^T a")

# %%
# A slate policy's decisions
# --------------------------
# ``select`` returns ``(n, slate_size)`` distinct arms, best first;
# ``predict_action_proba`` gives each arm's probability of being in the slate (rows
# sum to 4), exact for the deterministic CombLinUCB.
env.reset(1)
X = env.contexts(300)
logged = np.argsort(np.random.default_rng(0).random((300, 20)), axis=1)[:, :4]
policy = CombLinUCB(slate_size=4).fit(X, logged, env.rewards(logged))
print(policy.select(X[:2]))
print(policy.predict_action_proba(X[:1]).round(2))

# %%
# Off-policy value of a slate policy
# ----------------------------------
# Exact slate matches are hopeless with C(20, 4) = 4845 slates, but when a slate's
# reward is the sum of its arms' scores, the pseudo-inverse estimator needs only the
# policy's inclusion probabilities and the logging policy's pairwise inclusion
# probabilities. We log uniformly random slates of growing size and compare the
# estimates (95 % intervals) with the true value of the fitted policy.
from skbandit.evaluation import estimate_slate_value, uniform_slate_propensities

G = uniform_slate_propensities(20, 4)
X_big = env.contexts(20_000)
truth = float((policy.predict_action_proba(X_big) * env.expected_rewards).sum(1).mean())
sizes = [250, 1000, 4000]
values = []
for i, n in enumerate(sizes):
    X_log = env.contexts(n)
    S_log = np.argsort(np.random.default_rng(i + 1).random((n, 20)), axis=1)[:, :4]
    v_log = env.rewards(S_log)
    values.append(
        estimate_slate_value(policy.predict_action_proba(X_log), S_log, v_log, G)
    )
    print(f"n={n:5d}: {values[-1].value:.3f} [{values[-1].ci_low:.3f}, "
          f"{values[-1].ci_high:.3f}]  truth {truth:.3f}")  # fmt: skip

fig, ax = plt.subplots(figsize=(6, 3.5))
ax.errorbar(
    sizes,
    [v.value for v in values],
    yerr=[[v.value - v.ci_low for v in values], [v.ci_high - v.value for v in values]],
    fmt="o",
    capsize=4,
    label="pseudo-inverse estimate",
)
ax.axhline(truth, color="k", linestyle="--", label="true value")
ax.set_xscale("log")
ax.set_xlabel("logged rounds (uniform slates)")
ax.set_ylabel("value of CombLinUCB")
ax.legend()
fig.tight_layout()
figures = Path(os.environ.get("SKBANDIT_FIGURES_DIR", "results"))
figures.mkdir(parents=True, exist_ok=True)
fig.savefig(figures / "slate_off_policy_evaluation.png", dpi=120)
