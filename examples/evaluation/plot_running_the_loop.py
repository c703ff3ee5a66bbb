"""
==============================================
Running the loop: decide, reward, learn, gate
==============================================

The production loop of :mod:`skbandit.serving`, end to end, on the digits (a data set
that ships with scikit-learn) as a 10-armed bandit: the reward is 1 when the policy
names the right digit.

1. Every request is decided by a pipeline and logged, with its event id and
   propensity, in a SQLite file (:class:`~skbandit.serving.DecisionLog`).
2. Rewards arrive later, by event id, after a random delay; some never arrive and get
   the default reward once the reward wait has passed; a few arrive too late and are
   kept, counted, and not learned.
3. A :class:`~skbandit.serving.Learner` learns the closed events, each once.
4. The log is exported to Parquet and queried with DuckDB.
5. A :class:`~skbandit.serving.Gate` evaluates a candidate against the serving policy
   on the log and promotes it only if its lower bound beats the champion.
6. Apprentice mode: a new policy watches an existing rule decide, and a report says
   how it would have done.

Time is simulated (one request per second), so the example runs in seconds. With
``SKBANDIT_DOCS_QUICK=1`` (as when the gallery is built) it serves fewer requests.
The user guide's "Running the loop" page explains each piece.
"""
# Authors: The skbandit developers
# SPDX-License-Identifier: BSD-3-Clause

# %%
# A policy, a log, a learner
# --------------------------
# The serving policy is an epsilon-greedy pipeline: it explores, so its logs can
# evaluate other policies later (a policy that never explores vouches only for
# policies that play its arms). The log's clock is simulated.
import heapq
import os
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.preprocessing import StandardScaler

from skbandit.datasets import load_digits_bandit
from skbandit.pipeline import make_bandit_pipeline
from skbandit.policies import FALCON, EpsilonGreedy
from skbandit.serving import DecisionLog, Gate, Learner, apprentice_report

QUICK = os.environ.get("SKBANDIT_DOCS_QUICK") == "1"
N_REQUESTS = 600 if QUICK else 1500
X_all, y_all = load_digits_bandit(return_X_y=True)
rng = np.random.default_rng(0)
order = rng.permutation(len(X_all))
X_all, y_all = X_all[order], y_all[order]


class SimulatedClock:
    """Seconds since the service started; the loop moves it one request at a time."""

    now = 0.0

    def __call__(self):
        return self.now


clock = SimulatedClock()
workdir = Path(tempfile.mkdtemp())
log = DecisionLog(workdir / "decisions.sqlite", clock=clock)
policy = make_bandit_pipeline(
    StandardScaler(),
    EpsilonGreedy(n_actions=10, epsilon=0.1, schedule="constant", random_state=0),
)
# Fit on a few labelled rows first (the scaler needs data; the policy's models start).
warm = np.arange(30)
policy.fit(X_all[warm], y_all[warm], rewards=np.ones(30))
learner = Learner(policy, log, wait=60.0, default_reward=0.0, batch_size=64)

# %%
# Serving: decide now, reward later
# ---------------------------------
# A reward comes after a random delay, 15 s on average (the reward wait of 60 s makes
# the slowest few late); one request in ten never gets one, and gets the default
# reward, 0, when its wait is over. The learner runs every 50 requests.
pending = []  # (arrival time, event id, reward)
served_rewards = []
for t in range(30, 30 + N_REQUESTS):
    clock.now = float(t)
    x, label = X_all[t % len(X_all)], y_all[t % len(X_all)]
    event = log.decide(policy, x)
    reward = float(event.action == label)
    served_rewards.append(reward)
    if rng.random() > 0.1:
        delay = rng.exponential(15.0)
        heapq.heappush(pending, (clock.now + delay, event.event_id, reward))
    while pending and pending[0][0] <= clock.now:
        _, event_id, value = heapq.heappop(pending)
        log.reward(event_id, value)
    if t % 50 == 0:
        learner.step()
clock.now += 120.0  # every event is past its wait
for _, event_id, value in sorted(pending):
    log.reward(event_id, value)  # arrives after the wait: late
learner.step()

status = log.status()
for key in ("n_events", "n_closed", "n_learned", "n_defaulted", "n_late_rewards"):
    print(f"{key:>15}: {status[key]}")
print(f"    mean reward: {status['mean_reward']:.3f} (defaults and late ones: 0)")

# %%
# The log, analysed with DuckDB
# -----------------------------
# One row per event: its context, arm, propensity, joined reward, late rewards.
import duckdb  # noqa: E402

parquet = log.to_parquet(workdir / "events.parquet")
print(
    duckdb.sql(
        "SELECT (seq - 1) // 300 AS block, count(*) AS events, "
        "round(avg(reward), 3) AS mean_reward, "
        "round(avg(propensity), 3) AS mean_propensity, "
        "sum(n_late_rewards) AS late "
        f"FROM read_parquet('{parquet}') GROUP BY block ORDER BY block"
    )
)

# %%
# The gate
# --------
# A candidate: FALCON (inverse-gap weighting over ridge models) fitted offline on
# the first half of the log. The gate estimates both policies' values on the
# second half (events the candidate did not train on) with doubly robust
# off-policy evaluation and the logged propensities, and promotes the candidate only
# if the lower end of its 95% interval is above the champion's estimate.
data = log.to_arrays()
half = len(data.seq) // 2
candidate = make_bandit_pipeline(StandardScaler(), FALCON(n_actions=10, random_state=0))
candidate.fit(data.X[:half], data.actions[:half], rewards=data.rewards[:half])
result = Gate(method="dr").promote(candidate, learner, start=int(data.seq[half]))
for name, v in (("champion", result.champion), ("candidate", result.candidate)):
    print(f"{name:>10}: {v.value:.3f}  95% CI [{v.ci_low:.3f}, {v.ci_high:.3f}]")
print("promoted" if result.promoted else "not promoted", "- recorded in the log")

# %%
# Apprentice mode
# ---------------
# A new log: an existing system (here a logistic regression trained on 60 labelled
# digits) keeps deciding, logged with propensity 1 (a deterministic rule), while a
# fresh policy watches and learns from its choices. The report compares them on the
# log; where they disagree, a deterministic caller's log says nothing about the
# policy's arm, and the estimate rests on the reward model.
from sklearn.linear_model import LogisticRegression  # noqa: E402

existing = LogisticRegression(max_iter=500).fit(X_all[-60:], y_all[-60:])
apprentice_log = DecisionLog(workdir / "apprentice.sqlite", clock=clock)
apprentice = make_bandit_pipeline(
    StandardScaler(), EpsilonGreedy(n_actions=10, random_state=0)
)
apprentice.fit(X_all[warm], y_all[warm], rewards=np.ones(30))
watcher = Learner(apprentice, apprentice_log, wait=0.0)
for t in range(200 if QUICK else 400):
    clock.now += 1.0
    x, label = X_all[t], y_all[t]
    rule = int(existing.predict(x[None])[0])
    event = apprentice_log.apprentice(apprentice, x, rule)  # propensity 1
    apprentice_log.reward(event.event_id, float(rule == label))
    if t % 25 == 0:
        clock.now += 1.0
        watcher.step()
clock.now += 1.0
watcher.step()
print(apprentice_report(apprentice_log))

# %%
# The learning curve
# ------------------
fig, ax = plt.subplots(figsize=(6, 3))
window = 100
curve = np.convolve(served_rewards, np.ones(window) / window, mode="valid")
ax.plot(np.arange(window, len(served_rewards) + 1), curve)
ax.set_xlabel("request")
ax.set_ylabel(f"reward, mean of the last {window}")
ax.set_title("The served policy learns from its own log")
fig.tight_layout()
plt.show()
