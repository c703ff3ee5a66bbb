"""Persistence: joblib round trips continue the select sequence, in a fresh process.

A policy pickled mid-stream must load in another Python process (no state kept in
the test's process, no lambdas, module-level classes only) and choose exactly the
arms the original would have chosen next.
"""
# SPDX-License-Identifier: BSD-3-Clause

import json
import pickle
import subprocess
import sys
import textwrap

import joblib
import numpy as np
from numpy.testing import assert_array_equal

from skbandit.utils._checks._slate_checks import as_slate_feedback
from skbandit.utils.estimator_checks import _tested_policies, supervised_view

N_CALLS = 5


def _stream(policies, X, actions, rewards):
    """Fit, then run a few selects so that the RNG is mid-stream."""
    for policy in policies:
        policy.partial_fit(X, *as_slate_feedback(policy, actions, rewards))
        policy.select(X[:3])
    return policies


def _next_selects(policies, X):
    return [
        [policy.select(X[i * 4 : (i + 1) * 4]).tolist() for i in range(N_CALLS)]
        for policy in policies
    ]


_CHILD = textwrap.dedent(
    """
    import json, sys
    import joblib, numpy as np
    policies = joblib.load(sys.argv[1])
    X = np.load(sys.argv[2])
    out = [
        [p.select(X[i * 4:(i + 1) * 4]).tolist() for i in range({n_calls})]
        for p in policies
    ]
    print(json.dumps(out))
    """
).format(n_calls=N_CALLS)


def test_joblib_round_trip_in_a_fresh_process(bandit_data, tmp_path, fresh_process_env):
    d = bandit_data(40)
    policies = []
    for policy in _tested_policies():
        policy.set_params(n_actions=3, random_state=7)
        policies.append(policy)
    # a supervised view must unpickle where it was never built
    View = supervised_view(type(policies[0]))
    policies.append(View(**policies[0].get_params()))
    _stream(policies, d.X, d.actions, d.rewards)

    path = tmp_path / "policies.joblib"
    joblib.dump(policies, path)
    np.save(tmp_path / "X.npy", d.X)
    expected = _next_selects(policies, d.X)

    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), str(tmp_path / "X.npy")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=fresh_process_env(),
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    for policy, exp, seq in zip(policies, expected, got, strict=True):
        assert seq == exp, f"{policy!r} chose other arms after loading"


def _comparable(policy):
    """The policy's state as hashes, recursing into sub-policies (ensembles).

    A skorch net re-pickles to different bytes (it rebuilds its optimizer and
    caches), so it is compared by its parameters; the torch device cache is
    dropped on pickle by design.
    """
    out = {}
    for key, value in sorted(vars(policy).items()):
        if key == "_torch_cache":
            continue
        if key == "net_":
            value = [v.cpu().numpy() for v in value.module_.state_dict().values()]
        elif key == "_core":  # the network core: its net by its parameters, as net_
            value = {
                k: "net" if k == "net" else v
                for k, v in vars(value).items()
                if not k.startswith("_device")
            }
        elif isinstance(value, list) and value and hasattr(value[0], "get_params"):
            value = [_comparable(sub) for sub in value]
        out[key] = joblib.hash(value)
    return out


def test_pickle_round_trip_keeps_state_and_random_state(bandit_data):
    d = bandit_data(40, per_arm=True)
    for policy in _tested_policies():
        policy.set_params(n_actions=None, random_state=3)
        policy.fit(d.X, *as_slate_feedback(policy, d.actions, d.rewards))
        policy.select(d.X[:2])
        loaded = pickle.loads(pickle.dumps(policy))
        assert _comparable(loaded) == _comparable(policy)
        assert_array_equal(loaded.predict_scores(d.X), policy.predict_scores(d.X))
        assert _next_selects([loaded], d.X) == _next_selects([policy], d.X)
