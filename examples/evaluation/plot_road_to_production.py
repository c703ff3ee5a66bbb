"""
=========================================
The road to production, from logs to logs
=========================================

A policy's life on offline data that ships with scikit-learn (the digits, as a
10-armed bandit whose reward is 1 for the right digit):

1. logged data with propensities;
2. an offline fit;
3. off-policy values with confidence intervals;
4. GridSearchCV with the policy's own score;
5. a pipeline, pickled with joblib;
6. serving one request at a time, logging the propensity of each choice, with the
   median and 99th-percentile latency;
7. online updates from the served feedback;
8. evaluating a candidate policy on the new logs.

With ``SKBANDIT_DOCS_QUICK=1`` in the environment (as when this gallery is built)
it serves fewer requests. The user guide's "Road to production" page says why each
step is done the way it is.
"""
# Authors: The skbandit developers
# SPDX-License-Identifier: BSD-3-Clause

# %%
# 1. Logged data with propensities
# --------------------------------
# Yesterday's logs: an epsilon-greedy policy, learning as it went, recorded each
# round's context, arm, reward and the probability it gave that arm. The first
# 1200 rounds are the logs; the remaining digits are tomorrow's traffic.
import os
import tempfile
import time
from pathlib import Path

import joblib
import matplotlib.pyplot as plt
import numpy as np
import sklearn
from sklearn.decomposition import PCA
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.model_selection import GridSearchCV

from skbandit.datasets import load_digits_bandit
from skbandit.environments import ClassificationBandit
from skbandit.evaluation import collect_logged_data, estimate_value
from skbandit.pipeline import make_bandit_pipeline
from skbandit.policies import FALCON, EpsilonGreedy, LinUCB

QUICK = os.environ.get("SKBANDIT_DOCS_QUICK") == "1"
X_all, y_all = load_digits_bandit(return_X_y=True)  # pixels in [0, 1]
X_logged, y_logged = X_all[:1200], y_all[:1200]
X_new, y_new = X_all[1200:], y_all[1200:]

logging_policy = EpsilonGreedy(
    n_actions=10, epsilon=0.2, schedule="constant", random_state=0
)
logs = collect_logged_data(
    logging_policy,
    ClassificationBandit(X_logged, y_logged),
    n_rounds=1200,
    batch_size=50,
    update=True,
    random_state=0,
)
print(
    f"logged mean reward {logs.rewards.mean():.3f}; propensities in "
    f"[{logs.propensities.min():.3f}, {logs.propensities.max():.3f}]"
)

# %%
# 2. An offline fit
# -----------------
# A policy learns from logs with ``fit``: its model sees each logged arm's reward,
# whoever chose the arm. FALCON (Simchi-Levi and Xu, 2022) regresses each arm's
# reward with a scikit-learn estimator (ridge by default) and plays by inverse-gap
# weighting: the arm predicted best most often, every other arm with a probability
# that shrinks with its predicted gap. The first 800 rounds fit it, the last 400
# evaluate it.
fit, held = slice(0, 800), slice(800, 1200)
policy = FALCON(n_actions=10, random_state=0)
policy.fit(logs.X[fit], logs.actions[fit], logs.rewards[fit])

# %%
# 3. Off-policy values with intervals
# -----------------------------------
# The held-out logs were not chosen by this policy; importance weighting with the
# logged propensities corrects for that. IPS is unbiased, SNIPS trades a little
# bias for less variance. (Replay, which keeps the rounds where the logs chose what
# the policy would, needs uniform logging: these propensities vary.)
proba = policy.predict_action_proba(logs.X[held])
for method in ("ips", "snips"):
    v = estimate_value(
        proba, logs.actions[held], logs.rewards[held], logs.propensities[held],
        method=method,
    )  # fmt: skip
    print(f"{method:>6}: {v.value:.3f}  95% CI [{v.ci_low:.3f}, {v.ci_high:.3f}]")

# %%
# 4. GridSearchCV with the policy's score
# ---------------------------------------
# ``score`` is the self-normalised IPS value on the held-out fold, so a grid search
# tunes on logs. Metadata routing carries the rewards to ``fit`` and the rewards
# and propensities to ``score``. The pipeline reduces the 64 pixels to principal
# components first; the search tunes their number and FALCON's ``gamma_scale`` (the
# larger, the greedier).
sklearn.set_config(enable_metadata_routing=True)
candidate = FALCON(n_actions=10, random_state=0)
candidate.set_fit_request(rewards=True).set_score_request(
    rewards=True, propensities=True
)
pipe = make_bandit_pipeline(PCA(random_state=0), candidate)
grid = {"pca__n_components": [10, 20], "falcon__gamma_scale": [1.0, 10.0]}
search = GridSearchCV(pipe, grid, cv=3)
search.fit(logs.X, logs.actions, rewards=logs.rewards, propensities=logs.propensities)
print("best:", search.best_params_, f"SNIPS {search.best_score_:.3f}")

# %%
# 5. The pipeline, pickled
# ------------------------
# The best pipeline, refitted on all the logs by the search, goes to disk as one
# joblib file; the server loads it. Its random state travels with it.
folder = Path(tempfile.mkdtemp())
joblib.dump(search.best_estimator_, folder / "policy.joblib")
served = joblib.load(folder / "policy.joblib")

# %%
# 6. Serving one request at a time, propensities logged
# -----------------------------------------------------
# Each request is one context; ``select(x, return_propensities=True)`` returns the
# arm and the probability the policy gave it, which goes into the new logs with
# the reward. FALCON's probabilities have a closed form, so the propensity is
# exact (a sampling policy such as LinTS logs the Monte Carlo estimate of its
# ``predict_action_proba`` instead, never 0 for a drawn arm).
new_logs = {"X": [], "actions": [], "rewards": [], "propensities": []}
latency = []


def serve(x, label):
    """One request: the arm, timed, and the round written to the new logs."""
    start = time.perf_counter()
    arm, propensity = served.select(x[None], return_propensities=True)
    latency.append(time.perf_counter() - start)
    reward = float(arm[0] == label)  # in production: the user's answer, later
    for key, value in zip(new_logs, (x, arm[0], reward, propensity[0]), strict=True):
        new_logs[key].append(value)


for x, label in zip(X_new[:50], y_new[:50], strict=True):
    serve(x, label)

# %%
# 7. Online updates
# -----------------
# The feedback of every 50 requests reaches the served pipeline by ``partial_fit``
# (the PCA stays as fitted, since it has no ``partial_fit``; FALCON logs the rounds
# and refits its estimators at the start of each epoch of doubling length).
n_serve = 200 if QUICK else len(y_new)
for start in range(50, n_serve + 50, 50):
    done = slice(start - 50, start)
    served.partial_fit(
        np.array(new_logs["X"][done]),
        np.array(new_logs["actions"][done]),
        np.array(new_logs["rewards"][done]),
    )
    for x, label in zip(
        X_new[start:n_serve][:50], y_new[start:n_serve][:50], strict=True
    ):
        serve(x, label)
new_logs = {key: np.array(value) for key, value in new_logs.items()}
ms = 1e3 * np.array(latency)
print(
    f"served {len(ms)} requests: median {np.median(ms):.2f} ms, "
    f"p99 {np.percentile(ms, 99):.2f} ms per select with its propensity; "
    f"mean reward {new_logs['rewards'].mean():.3f}"
)

# %%
# 8. Evaluating a candidate on the new logs
# -----------------------------------------
# Candidates for tomorrow, fitted on yesterday's logs: the new logs carry the served
# policy's propensities, so they estimate each candidate's value without deploying
# it. LinUCB is deterministic: logs that it wrote would carry propensity 1 and
# could evaluate only policies that play its arms; FALCON's logs give every arm a
# positive probability.
candidates = {
    "FALCON, boosting": FALCON(
        n_actions=10, estimator=HistGradientBoostingRegressor(max_iter=30)
    ),
    "LinUCB": LinUCB(n_actions=10),
}
values = {}
for name, policy in candidates.items():
    challenger = make_bandit_pipeline(PCA(n_components=20, random_state=0), policy)
    challenger.fit(logs.X, logs.actions, rewards=logs.rewards)
    values[name] = v = estimate_value(
        challenger.predict_action_proba(new_logs["X"]),
        new_logs["actions"], new_logs["rewards"], new_logs["propensities"],
        method="snips",
    )  # fmt: skip
    print(f"{name:>16}: SNIPS {v.value:.3f}  95% CI [{v.ci_low:.3f}, {v.ci_high:.3f}]")
sklearn.set_config(enable_metadata_routing=False)

fig, ax = plt.subplots(figsize=(6, 2.5))
names = list(values)
ax.errorbar(
    [values[n].value for n in names],
    range(len(names)),
    xerr=[
        [values[n].value - values[n].ci_low for n in names],
        [values[n].ci_high - values[n].value for n in names],
    ],
    fmt="o",
    capsize=4,
)
ax.axvline(new_logs["rewards"].mean(), color="k", linestyle="--", label="served")
ax.set_yticks(range(len(names)), names)
ax.set_xlabel("mean reward on the new logs (SNIPS, 95% CI)")
ax.legend(loc="lower right")
fig.tight_layout()
plt.show()
