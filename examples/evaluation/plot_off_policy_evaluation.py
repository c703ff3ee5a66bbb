"""
=====================================================
Off-policy evaluation against the true policy value
=====================================================

Log a uniform policy on a simulator whose expected rewards are known, then estimate the
value of a LinUCB policy fitted on half of the logs with IPS, SNIPS, DM and DR. The true
value is exact, so the estimators' errors and intervals can be read off the plot.
"""
# Authors: The skbandit developers
# SPDX-License-Identifier: BSD-3-Clause

# %%
# Logged data from a uniform policy on the paper-003 linear problem (K = 20, d = 5).
import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import Ridge

from skbandit.environments import LinearBandit
from skbandit.evaluation import collect_logged_data, estimate_value
from skbandit.policies import LinUCB, RandomPolicy

env = LinearBandit(n_actions=20, n_features=5)
logs = collect_logged_data(RandomPolicy(random_state=0), env, 4000, random_state=0)
half = len(logs.actions) // 2

# %%
# Fit the target policy on the first half; evaluate it on the second.
policy = LinUCB(beta=0.5, fit_intercept=False, random_state=0)
policy.fit(logs.X[:half], logs.actions[:half], logs.rewards[:half])
proba = policy.predict_action_proba(logs.X[half:])
truth = float(np.mean(np.sum(proba * logs.expected_rewards[half:], axis=1)))

# A reward model for DM and DR: one ridge per arm on the arm's own features.
X1, a1, r1 = logs.X[:half], logs.actions[:half], logs.rewards[:half]
rows = X1[np.arange(half), a1]
model = Ridge(alpha=1.0).fit(rows, r1)
q_hat = model.predict(logs.X[half:].reshape(-1, 5)).reshape(-1, 20)

# %%
# Estimates with 95 % intervals.
methods = ["ips", "snips", "dm", "dr"]
values = [
    estimate_value(
        proba,
        logs.actions[half:],
        logs.rewards[half:],
        logs.propensities[half:],
        method=m,
        expected_rewards=q_hat,
    )
    for m in methods
]
for v in values:
    print(f"{v.method:>6}: {v.value:.3f}  [{v.ci_low:.3f}, {v.ci_high:.3f}]")
print(f" truth: {truth:.3f}")

fig, ax = plt.subplots(figsize=(6, 3.5))
y = np.arange(len(methods))
ax.errorbar(
    [v.value for v in values],
    y,
    xerr=[
        [v.value - v.ci_low for v in values],
        [v.ci_high - v.value for v in values],
    ],
    fmt="o",
    capsize=4,
)
ax.axvline(truth, color="k", linestyle="--", label="true value")
ax.set_yticks(y, [m.upper() for m in methods])
ax.set_xlabel("estimated value of LinUCB (95 % interval)")
ax.legend()
fig.tight_layout()
plt.show()
