"""
===========================
Speed, measured
===========================

The speed tables of the :doc:`performance page </performance>` as plots. They were
measured on the project's standard machine (2 CPU cores, no GPU, torch 2.13 CPU) and
on a lent NVIDIA H100 80GB; the performance page gives every command. Nothing is
re-run here.
"""

# Authors: The skbandit developers
# SPDX-License-Identifier: BSD-3-Clause

# %%
# The LinUCB online loop
# ----------------------
# ``benchmarks/speed/linucb.py``: d = 20, K = 10 shared contexts, 5000 rounds,
# best of 3. Microseconds per round (lower is better).
import os
from pathlib import Path

import matplotlib.pyplot as plt

loops = {
    "plain numpy\nSherman-Morrison loop": 17.0,
    "skbandit\nselect + partial_fit": 39.4,
    "skbandit batch fit\n(10,000 rows)": 8.7,
    "skbandit batch select\n(10,000 rows)": 3.3,
}
fig, ax = plt.subplots(figsize=(7, 3.2))
bars = ax.barh(list(loops), list(loops.values()), color="tab:blue")
ax.bar_label(bars, fmt="%.1f us")
ax.set_xlabel("microseconds per round")
ax.invert_yaxis()
ax.set_xlim(0, 48)
ax.set_title("LinUCB, d = 20, K = 10 (2-core CPU)")
fig.tight_layout()

figures = Path(os.environ.get("SKBANDIT_FIGURES_DIR", "results"))
figures.mkdir(parents=True, exist_ok=True)
fig.savefig(figures / "measured_linucb_speed.png", dpi=120)

# %%
# NeuralTS on a CPU and on a GPU
# ------------------------------
# ``benchmarks/speed/neural_ts.py``: the paper's network (one hidden layer of
# 100 units, 100 full-batch gradient steps per training, diagonal U) on the digits
# bandit. Seconds for the whole run; "floor" is the time of the two matrix products
# each gradient step cannot avoid, on one CPU thread.
runs = [
    "digits, 1797 rounds,\ntraining every round",
    "digits, 10,000 rounds,\ntraining stopped at 1000",
]
cpu = [103.1, 42.6]
floor = [51.5, 17.1]
gpu = [31.8, 51.1]
fig, ax = plt.subplots(figsize=(7.5, 3.6))
y = range(len(runs))
h = 0.27
b1 = ax.barh([i - h for i in y], cpu, h, label="CPU, 1 thread")
b2 = ax.barh(list(y), floor, h, label="CPU arithmetic floor", color="tab:gray")
b3 = ax.barh([i + h for i in y], gpu, h, label="H100 (CUDA graphs in the first run)")
for b in (b1, b2, b3):
    ax.bar_label(b, fmt="%.1f s", fontsize="small")
ax.set_yticks(list(y), runs)
ax.invert_yaxis()
ax.set_xlim(0, 125)
ax.set_xlabel("seconds for the whole run")
ax.legend(loc="lower right", fontsize="small")
ax.set_title("NeuralTS, m = 100, J = 100")
fig.tight_layout()
fig.savefig(figures / "measured_neural_speed.png", dpi=120)

# %%
# Training after every round costs twice the arithmetic floor on one CPU thread;
# on the GPU, launching small kernels rather than arithmetic sets the pace, and
# replaying one captured CUDA graph per training halves it (64.1 s to 31.8 s). With
# training stopped at round 1000 the late rounds cost 0.35 ms each on the CPU, and
# the GPU pays no more: a frozen model scoring one row at a time is better served
# by the CPU.
#
# Where a round's time goes
# -------------------------
# The 10,000-round run on one CPU thread, training stopped after round 1000:
# milliseconds per round in the first tenth (training) and the last (frozen).
phases = ["rounds 1-1000\n(training)", "rounds 9001-10000\n(frozen)"]
select = [1.81, 0.34]
update = [37.59, 0.03]
fig, axes = plt.subplots(1, 2, figsize=(8, 3))
for ax, i in zip(axes, range(2), strict=False):
    b = ax.bar(
        ["select", "partial_fit"], [select[i], update[i]], color=["green", "orange"]
    )
    ax.bar_label(b, fmt="%.2f ms")
    ax.set_title(phases[i].replace("\n", " "))
    ax.set_ylim(0, max(select[i], update[i]) * 1.25)
axes[0].set_ylabel("ms per round")
fig.suptitle("NeuralTS, digits, 1 CPU thread")
fig.tight_layout()
fig.savefig(figures / "measured_neural_phases.png", dpi=120)
