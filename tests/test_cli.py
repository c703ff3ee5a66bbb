"""Tests of the command line, skbandit.__main__."""
# SPDX-License-Identifier: BSD-3-Clause

import subprocess
import sys

import pytest

from skbandit.__main__ import main


def test_python_m_skbandit_lists_the_commands():
    out = subprocess.run(
        [sys.executable, "-m", "skbandit", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for command in ("demo", "run", "compare", "evaluate"):
        assert command in out


def test_demo_writes_table_and_plot(tmp_path, capsys):
    assert (
        main(["demo", "--n-rounds", "40", "--out", str(tmp_path), "--no-progress"]) == 0
    )
    out = capsys.readouterr().out
    png = tmp_path / "demo_digits_regret.png"
    assert png.exists() and png.stat().st_size > 1000
    assert str(png) in out
    for name in ("LinUCB", "LinTS", "EpsilonGreedy", "Random", "cumulative regret"):
        assert name in out


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "linucb", "--env", "linear", "--param", "beta=2.0"],
        [
            "run",
            "EpsilonGreedy",
            "--param",
            "schedule=inverse_sqrt",
            "--param",
            "epsilon=0.05",
            "--batch-size",
            "5",
        ],
        ["run", "LinTS", "--env", "logistic", "--n-features", "3", "--n-actions", "4"],
    ],
)
def test_run(argv, tmp_path, capsys):
    argv = [*argv, "--n-rounds", "30", "--no-progress", "--out", str(tmp_path)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "cumulative regret" in out
    assert list(tmp_path.glob("run_*_regret.png"))


def test_run_passes_params_and_defaults(capsys):
    main(
        [
            "run",
            "linucb",
            "--env",
            "linear",
            "--param",
            "beta=2.5",
            "--n-rounds",
            "5",
            "--no-progress",
        ]
    )
    out = capsys.readouterr().out
    assert "beta=2.5" in out and "fit_intercept=False" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run", "NoSuchPolicy"], "unknown policy"),
        (["demo", "--n-rounds", "0"], "positive"),
    ],
)
def test_errors(argv, message, capsys):
    with pytest.raises(SystemExit, match=message):
        main(argv)


def test_bad_param_syntax(capsys):
    with pytest.raises(SystemExit):
        main(["run", "LinUCB", "--param", "beta"])
    assert "key=value" in capsys.readouterr().err


def test_compare_writes_table_and_plot(tmp_path, capsys):
    argv = ["compare", "LinUCB", "randompolicy", "--n-runs", "2", "--n-rounds", "20"]
    assert main([*argv, "--seed", "1", "--out", str(tmp_path), "--no-progress"]) == 0
    out = capsys.readouterr().out
    png = tmp_path / "compare_digits_regret.png"
    assert png.exists() and png.stat().st_size > 1000
    for text in ("LinUCB", "RandomPolicy", "±", "2 runs of 20 rounds", str(png)):
        assert text in out


def test_compare_linear_env(tmp_path, capsys):
    argv = ["compare", "LinTS", "--dataset", "linear", "--n-actions", "3"]
    argv += ["--n-runs", "1", "--n-rounds", "10", "--out", str(tmp_path)]
    assert main([*argv, "--no-progress"]) == 0
    out = capsys.readouterr().out
    # One run: no standard error to show.
    assert "regret/round" in out and "nan" not in out and "±" not in out


def test_compare_missing_dataset(tmp_path, monkeypatch):
    from skbandit.datasets import _loaders

    monkeypatch.delenv("SKBANDIT_DATA", raising=False)
    monkeypatch.setattr(_loaders, "FASHION_MNIST_DIR", tmp_path / "none")
    argv = ["compare", "LinUCB", "--dataset", "fashion_mnist", "--n-rounds", "5"]
    with pytest.raises(SystemExit, match="apt-get install -y dataset-fashion-mnist"):
        main([*argv, "--data-home", str(tmp_path), "--out", str(tmp_path)])


def _logged(tmp_path):
    import numpy as np

    from skbandit.datasets import load_digits_bandit
    from skbandit.environments import ClassificationBandit
    from skbandit.evaluation import collect_logged_data
    from skbandit.policies import RandomPolicy

    X, y = load_digits_bandit(return_X_y=True)
    logs = collect_logged_data(
        RandomPolicy(random_state=0), ClassificationBandit(X, y), 120, random_state=0
    )
    return np, logs


@pytest.mark.parametrize("fmt", ["npz", "csv"])
def test_evaluate(fmt, tmp_path, capsys):
    np, logs = _logged(tmp_path)
    path = tmp_path / f"logs.{fmt}"
    arrays = {
        "actions": logs.actions,
        "rewards": logs.rewards,
        "propensities": logs.propensities,
    }
    if fmt == "npz":
        np.savez(path, X=logs.X, **arrays)
    else:
        import pandas as pd

        frame = pd.DataFrame(logs.X[:, :6], columns=[f"X{i}" for i in range(6)])
        frame = frame.assign(**arrays)
        frame.to_csv(path, index=False)
    argv = ["evaluate", str(path), "--policy", "linucb", "--param", "beta=0.5"]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for text in ("IPS", "SNIPS", "DR", "replay", "95% CI", "fitted on 60"):
        assert text in out
    table = (tmp_path / "evaluate.csv").read_text().splitlines()
    assert table[0].startswith("estimator,value") and len(table) == 5
    values = [float(line.split(",")[1]) for line in table[1:]]
    assert all(0 <= v <= 1.5 for v in values)


def test_evaluate_bad_file(tmp_path):
    path = tmp_path / "logs.npz"
    import numpy as np

    np.savez(path, X=np.zeros((10, 2)), actions=np.zeros(10, int))
    with pytest.raises(SystemExit, match="lack rewards, propensities"):
        main(["evaluate", str(path)])
    with pytest.raises(SystemExit, match="no logged-data file"):
        main(["evaluate", str(tmp_path / "nope.csv")])
