"""Call trace of a warm one-row ``select``: how often the call changes module.

A warm LinUCB (ridge blocks, shared contexts) and a warm FALCON (on a ridge
regressor) each decide one round, with and without ``return_propensities``, under
``sys.setprofile``. The trace lists every Python frame the call enters (C calls
are left out: they do not change module), and counts the *module switches*: two
consecutive entered frames from different ``skbandit`` modules. Frames outside
``skbandit`` (numpy, scikit-learn) are collapsed into the ``skbandit`` frame that
called them, so the count measures how the library's own code is laid out, not
how numpy is. Fewer switches means the decision path reads in fewer places.

Run::

    python benchmarks/speed/select_call_trace.py [--trace]
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import platform
import sys

import numpy as np
from sklearn.linear_model import Ridge

from skbandit.policies import FALCON, LinUCB

D, K = 5, 4


def warm(policy, seed=0):
    """``policy`` after 200 rounds of feedback, with one ``select`` done."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((200, D))
    actions = rng.integers(0, K, 200)
    rewards = X[:, 0] * (actions == 1) + rng.standard_normal(200) * 0.1
    policy.fit(X, actions, rewards)
    row = X[:1].copy()
    policy.select(row)
    policy.select(row, return_propensities=True)
    return policy, row


def trace(call):
    """The ``skbandit`` modules entered by ``call()``, in order (one per frame)."""
    entered = []

    def profiler(frame, event, arg):
        if event == "call":
            module = frame.f_globals.get("__name__", "")
            if module.startswith("skbandit"):
                entered.append((module, frame.f_code.co_name))

    sys.setprofile(profiler)
    try:
        call()
    finally:
        sys.setprofile(None)
    return entered


def switches(entered):
    """Consecutive entered frames whose module differs."""
    return sum(a[0] != b[0] for a, b in zip(entered[:-1], entered[1:], strict=True))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", action="store_true", help="print every frame")
    args = parser.parse_args(argv)
    print(
        f"python {platform.python_version()}, numpy {np.__version__}, "
        f"{platform.machine()}"
    )
    cases = {
        "LinUCB": warm(LinUCB(n_actions=K, random_state=0)),
        "FALCON(Ridge)": warm(FALCON(n_actions=K, estimator=Ridge(), random_state=0)),
    }
    for name, (policy, row) in cases.items():
        for proba in (False, True):
            entered = trace(
                lambda p=policy, r=row, w=proba: p.select(r, return_propensities=w)
            )
            modules = sorted({m for m, _ in entered})
            print(
                f"{name:14s} propensities={proba!s:5s} frames={len(entered):3d} "
                f"module switches={switches(entered):3d} modules={len(modules)}"
            )
            if args.trace:
                for module, function in entered:
                    print(f"    {module}.{function}")


if __name__ == "__main__":
    main()
