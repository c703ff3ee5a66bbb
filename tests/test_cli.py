"""Tests of the command line, skbandit.__main__."""
# SPDX-License-Identifier: BSD-3-Clause

import pytest

from skbandit.__main__ import main


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
