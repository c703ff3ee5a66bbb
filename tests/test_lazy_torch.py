"""torch and skorch load only with a torch-backed policy or learner.

Each check runs in a fresh interpreter: the test process has imported torch long
before (other tests, the neural families), so ``sys.modules`` here says nothing.
"""
# SPDX-License-Identifier: BSD-3-Clause

import importlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import joblib
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Prints the heavy modules loaded so far, as a Python list, on the last line.
LOADED = "print(sorted(m for m in ('torch', 'skorch') if m in sys.modules))"


def _fresh(code, *args, timeout=120):
    """The last printed line of ``code`` run in a new interpreter, read as Python."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    script = "import sys\n" + textwrap.dedent(code)
    done = subprocess.run(
        [sys.executable, "-c", script, *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return eval(done.stdout.strip().splitlines()[-1])  # noqa: S307 -- our own print


def test_linear_glm_ensemble_estimator_policies_never_load_torch(tmp_path):
    fitted = _fresh(
        """
        import pickle
        import joblib
        import numpy as np
        import skbandit, skbandit.policies, skbandit.evaluation
        import skbandit.policies.base, skbandit.offpolicy, skbandit.pipeline
        import skbandit.serving, skbandit._dask, skbandit.__main__
        from skbandit.policies import FALCON, GLMES, LinTS, LinUCB, LogTS

        rng = np.random.default_rng(0)
        X = rng.normal(size=(60, 3))
        actions = rng.integers(3, size=60)
        rewards = (rng.random(60) < 0.5).astype(float)
        policies = [LinUCB(3), LinTS(3), GLMES(3), LogTS(3), FALCON(3)]
        for policy in policies:
            policy.fit(X, actions, rewards)
            copy = pickle.loads(pickle.dumps(policy))
            np.testing.assert_array_equal(copy.predict(X), policy.predict(X))
        joblib.dump(policies[0], sys.argv[1])
        """
        + LOADED,
        tmp_path / "linucb.joblib",
    )
    assert fitted == []
    # unpickling alone, as a fresh Dask worker does at its first task
    loaded = _fresh(
        """
        import joblib
        policy = joblib.load(sys.argv[1])
        assert type(policy).__name__ == "LinUCB" and policy.n_samples_seen_ == 60
        """
        + LOADED,
        tmp_path / "linucb.joblib",
    )
    assert loaded == []


def test_neural_ts_loads_torch_at_first_access():
    before, after = _fresh(
        """
        import skbandit.offpolicy, skbandit.policies, skbandit.policies.base
        before = "torch" in sys.modules
        skbandit.policies.NeuralTS
        print([before, "torch" in sys.modules])
        """
    )
    assert (before, after) == (False, True)


@pytest.mark.parametrize(
    "module, name",
    [
        ("skbandit.policies", "NeuralTS"),
        ("skbandit.policies", "CNUCB"),
        ("skbandit.policies", "theoretical_n_draws"),
        ("skbandit.policies.base", "NeuralPolicy"),
        ("skbandit.offpolicy", "NeuralPolicyLearner"),
    ],
)
def test_a_deferred_name_is_listed_and_stored(module, name):
    package = importlib.import_module(module)
    assert name in dir(package) and name in package.__all__
    value = getattr(package, name)
    # stored in the package: a later access is a plain attribute read
    assert vars(package)[name] is value
    assert value.__name__ == name


def test_an_unknown_name_is_an_attribute_error():
    import skbandit.policies

    with pytest.raises(AttributeError, match="has no attribute 'NeuralXYZ'"):
        skbandit.policies.NeuralXYZ  # noqa: B018
    assert not hasattr(skbandit.policies, "NeuralXYZ")


def test_a_pickled_neural_policy_loads_in_a_fresh_process(tmp_path):
    from skbandit.policies import NeuralTS

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3)).astype(np.float32)
    actions = rng.integers(2, size=40)
    rewards = rng.normal(size=40)
    policy = NeuralTS(2, hidden_layer_sizes=(8,), n_steps=5, random_state=0)
    policy.fit(X, actions, rewards)
    path = tmp_path / "neural_ts.joblib"
    joblib.dump(policy, path)
    np.save(tmp_path / "X.npy", X)
    scores = _fresh(
        """
        import joblib
        import numpy as np
        policy = joblib.load(sys.argv[1])
        X = np.load(sys.argv[2])
        print(policy.predict_scores(X).tolist())
        """,
        path,
        tmp_path / "X.npy",
    )
    # the same network and inputs in another process: equal up to float32 rounding
    # of a possibly different summation order (thread count)
    np.testing.assert_allclose(scores, policy.predict_scores(X), rtol=1e-5, atol=1e-6)


def test_a_fresh_dask_worker_fits_a_linucb_without_torch():
    pytest.importorskip("distributed")
    on_worker = _fresh(
        """
        import distributed
        import numpy as np
        import dask.array as da
        from skbandit.policies import LinUCB

        rng = np.random.default_rng(0)
        X = da.from_array(rng.normal(size=(200, 3)), chunks=50)
        actions = da.from_array(rng.integers(3, size=200), chunks=50)
        rewards = da.from_array(rng.random(200), chunks=50)
        with distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
            dashboard_address=None, worker_dashboard_address=None,
            scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
        ) as cluster, distributed.Client(cluster) as client:
            policy = LinUCB(3).fit(X, actions, rewards)
            # the fitted policy travels to the worker and is unpickled there
            policy.predict(X).compute()
            (loaded,) = client.run(
                lambda: [m for m in ("torch", "skorch") if m in sys.modules]
            ).values()
        print(loaded)
        """
    )
    assert on_worker == []
