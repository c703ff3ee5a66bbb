"""Tests of the command line, skbandit.__main__."""
# SPDX-License-Identifier: BSD-3-Clause

import subprocess
import sys

import pytest

from skbandit.__main__ import main


def test_the_parser_lists_the_commands():
    from skbandit.__main__ import _parser

    out = _parser().format_help()
    for command in ("demo", "run", "compare", "evaluate", "serve"):
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
    # the demo shows the parameters it uses
    # (its LinTS(nu=0.1) is LinTS's default, so the table writes plain LinTS)
    for label in (
        "LinUCB(beta=0.3)",
        "EpsilonGreedy(epsilon=0.05, schedule='constant')",
    ):
        assert label in out


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


def _user_error(argv, capsys):
    """Run ``argv``, expecting a user error: exit status 2 and one line on stderr."""
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert "Traceback" not in err and last.startswith("skbandit")
    return last


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run", "NoSuchPolicy"], "unknown policy 'NoSuchPolicy'; choose from"),
        (["demo", "--n-rounds", "0"], "--n-rounds: must be positive, got 0"),
        (["compare", "LinTS", "--n-runs", "-1"], "--n-runs: must be positive"),
        (
            ["run", "LinUCB", "--param", "beta=abc"],
            "The 'beta' parameter of LinUCB must be a float",
        ),
        (["run", "LinUCB(beta=-1)"], "The 'beta' parameter of LinUCB"),
        (["run", "LinUCB", "--param", "gamma=1"], "LinUCB has no parameter 'gamma'"),
        (["run", "LinUCB(gamma=1)"], "LinUCB has no parameter 'gamma'"),
        (["compare", "LinTS", "LinUCB", "--param", "zeta=1"], "no parameter 'zeta'"),
        (["compare", "LinTS", "LinTS(nu=0.1)"], "LinTS is given twice"),
        (["run", "LinTS(0.1)"], "parameters go by keyword"),
        (["run", "LinTS(nu=x)"], "LinTS's parameter 'nu' must be a literal"),
        (["run", "LinTS(nu="], "cannot read the policy"),
        (["run", "os.system('ls')"], "cannot read the policy"),
        (["run", "LinTS(**{'nu': 1})"], "parameters go by keyword"),
    ],
)
def test_user_errors_are_one_line_with_status_2(argv, message, capsys, tmp_path):
    argv = [*argv, "--n-rounds", "3", "--no-progress", "--out", str(tmp_path)]
    if argv[0] == "demo":
        argv = argv[:3]  # the bad --n-rounds alone
    assert message in _user_error(argv, capsys)


def test_python_m_skbandit_errors_without_traceback(fresh_process_env):
    run = subprocess.run(
        [sys.executable, "-m", "skbandit", "run", "LinUCB", "--param", "beta=abc"],
        capture_output=True,
        text=True,
        env=fresh_process_env(),
    )
    assert run.returncode == 2
    assert run.stderr.strip().count("\n") == 0 and "'beta'" in run.stderr


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


def test_compare_missing_dataset(tmp_path, monkeypatch, capsys):
    from skbandit.datasets import _loaders

    monkeypatch.delenv("SKBANDIT_DATA", raising=False)
    monkeypatch.setattr(_loaders, "FASHION_MNIST_DIR", tmp_path / "none")
    argv = ["compare", "LinUCB", "--dataset", "fashion_mnist", "--n-rounds", "5"]
    argv += ["--data-home", str(tmp_path), "--out", str(tmp_path)]
    assert "apt-get install -y dataset-fashion-mnist" in _user_error(argv, capsys)


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
    values = dict(line.split(",")[:2] for line in table[1:])
    # Uniform logging (equal propensities) and a deterministic fitted policy: SNIPS
    # reweights every matching round equally, which is replay (the DR estimate may
    # fall below 0, its reward model being a regression).
    assert values["SNIPS"] == values["replay"]


def test_evaluate_bad_file(tmp_path, capsys):
    path = tmp_path / "logs.npz"
    import numpy as np

    np.savez(path, X=np.zeros((10, 2)), actions=np.zeros(10, int))
    message = _user_error(["evaluate", str(path)], capsys)
    assert "lack rewards (--rewards), propensities" in message
    missing = ["evaluate", str(tmp_path / "nope.csv")]
    assert "no logged-data file" in _user_error(missing, capsys)


def _sorted_logs(tmp_path):
    """A .csv whose columns have their own names, sorted by reward: the first half
    of the rows has reward 0, the second reward 1, and ``t`` counts down."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    n = 80
    frame = pd.DataFrame(rng.normal(size=(n, 3)), columns=["age", "price", "hour"])
    frame["noise"] = rng.normal(size=n)  # not a context: --contexts leaves it out
    frame["arm"] = rng.integers(0, 3, size=n)
    frame["click"] = (np.arange(n) >= n // 2).astype(float)
    frame["p"] = 1 / 3
    frame["t"] = np.arange(n)[::-1]
    path = tmp_path / "sorted.csv"
    frame.to_csv(path, index=False)
    columns = ["--contexts", "age", "price", "hour", "--actions", "arm"]
    return path, [*columns, "--rewards", "click", "--propensities", "p"]


@pytest.mark.parametrize(
    "split, evaluated_mean",
    [
        (["--split", "time"], "1.0000"),  # the later half: all rewards 1
        (["--split", "time", "--time-column", "t"], "0.0000"),  # t counts down
    ],
)
def test_evaluate_named_columns_split_by_time(split, evaluated_mean, tmp_path, capsys):
    path, columns = _sorted_logs(tmp_path)
    assert main(["evaluate", str(path), *columns, *split]) == 0
    out = capsys.readouterr().out
    assert f"split by time; logged mean reward {evaluated_mean}" in out


def test_evaluate_shuffles_before_splitting_with_the_seed(tmp_path, capsys):
    import re

    path, columns = _sorted_logs(tmp_path)
    means = []
    for seed in (0, 0, 1):
        assert main(["evaluate", str(path), *columns, "--seed", str(seed)]) == 0
        out = capsys.readouterr().out
        means.append(float(re.search(r"shuffled; logged mean reward ([\d.]+)", out)[1]))
    # A shuffled half of 40 zeros and 40 ones holds both (all ones has chance
    # 1 / C(80, 40) < 1e-22); the same seed splits the same way.
    assert 0 < means[0] < 1 and 0 < means[2] < 1
    assert means[0] == means[1]
    assert means[0] != means[2]  # the seed moves the split


def test_evaluate_prefix_and_test_fraction(tmp_path, capsys):
    import numpy as np

    np_, logs = _logged(tmp_path)
    path = tmp_path / "logs.npz"
    # contexts as separate arrays x_0 ... x_11 (x_10 after x_9 in natural order)
    arrays = {f"x_{i}": logs.X[:, i] for i in range(12)}
    np.savez(path, a=logs.actions, r=logs.rewards, p=logs.propensities, **arrays)
    argv = ["evaluate", str(path), "--context-prefix", "x_", "--actions", "a"]
    argv += ["--rewards", "r", "--propensities", "p", "--test-fraction", "0.25"]
    assert main(argv) == 0
    assert "fitted on 90 logged rounds, evaluated on 30" in capsys.readouterr().out


@pytest.mark.parametrize(
    "options, message",
    [
        (["--rewards", "reward"], "lack reward (--rewards)"),
        (["--contexts", "age", "weight"], "no context column 'weight'"),
        (["--context-prefix", "z"], "no column starting with 'z'"),
        (["--test-fraction", "0.99"], "each part needs at least 2"),
    ],
)
def test_evaluate_column_errors(options, message, tmp_path, capsys):
    path, columns = _sorted_logs(tmp_path)
    if "--contexts" in options or "--context-prefix" in options:
        columns = columns[4:]  # drop the default --contexts
    argv = ["evaluate", str(path), *columns, *options]
    assert message in _user_error(argv, capsys)


# -- policies as reprs, labels, help, data sets (issue 11) -------------------------


@pytest.mark.parametrize(
    "text, params",
    [
        ("LinTS", {}),
        ("lints()", {}),
        (" LinTS(nu=0.1) ", {"nu": 0.1}),
        (
            "LinUCB(beta=-0.5, fit_intercept=False)",
            {"beta": -0.5, "fit_intercept": False},
        ),
        ("NeuralTS(hidden_layer_sizes=(8, 4), device='cpu')", None),
        ("EpsilonGreedy(schedule='inverse_sqrt', horizon=None)", None),
    ],
)
def test_parse_policy_reads_keyword_literals(text, params):
    from skbandit._cli_common import parse_policy

    cls, got = parse_policy(text)
    assert cls.__name__ == text.strip().split("(")[0].replace("lints", "LinTS")
    if params is not None:
        assert got == params
    assert cls(**got).get_params(deep=False).items() >= got.items()


def test_parse_policy_never_evaluates(tmp_path):
    from skbandit._cli_common import CliError, parse_policy

    flag = tmp_path / "flag"
    for text in (
        f"LinTS(nu=open({str(flag)!r}, 'w'))",
        f"__import__('pathlib').Path({str(flag)!r}).touch()",
        "LinTS(nu=1 if True else 2)",
        "LinTS(nu=[x for x in ()])",
    ):
        with pytest.raises(CliError):
            parse_policy(text)
    assert not flag.exists()


def test_repr_and_param_make_the_same_policy_and_label(capsys):
    from skbandit._cli_common import make_policy, policy_label

    by_repr = make_policy("LinUCB(beta=2.5)", 0, simulator=True)
    by_param = make_policy("LinUCB", 0, params=[("beta", 2.5)], simulator=True)
    assert by_repr.get_params() == by_param.get_params()
    # --param wins over the repr; the label shows what differs from the defaults
    policy = make_policy("LinUCB(beta=2.5)", 7, params=[("beta", 0.3)])
    assert policy.beta == 0.3 and policy.random_state == 7
    assert policy_label(policy) == "LinUCB(beta=0.3)"
    assert policy_label(by_repr) == "LinUCB(beta=2.5, fit_intercept=False)"
    assert policy_label(make_policy("LinTS", 0)) == "LinTS"


def test_run_table_shows_the_policys_parameters(capsys, tmp_path):
    argv = ["run", "LinTS(nu=0.3)", "--dataset", "linear", "--n-actions", "3"]
    assert main([*argv, "--n-rounds", "5", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "LinTS(fit_intercept=False, nu=0.3)" in out and "nan" not in out


def test_compare_takes_reprs_and_params_and_labels_them(capsys, tmp_path):
    argv = ["compare", "LinTS(nu=0.3)", "LinUCB", "RandomPolicy", "--param", "beta=0.3"]
    argv += [
        "--n-runs",
        "2",
        "--n-rounds",
        "10",
        "--no-progress",
        "--out",
        str(tmp_path),
    ]
    assert main(argv) == 0
    rows = capsys.readouterr().out.splitlines()
    for label in ("LinTS(nu=0.3)", "LinUCB(beta=0.3)", "RandomPolicy"):
        assert any(row.startswith(label + " ") for row in rows), label
    assert not any("nan" in row for row in rows)


def _subparsers():
    from skbandit.__main__ import _parser

    parser = _parser()
    (sub,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    return sub.choices


@pytest.mark.parametrize("command", ["demo", "run", "compare", "evaluate", "serve"])
def test_every_help_shows_its_default(command):
    parser = _subparsers()[command]
    text = " ".join(parser.format_help().split())
    for action in parser._actions:
        if action.option_strings and action.dest != "help":
            assert f"(default: {action.default})" in text, action.dest


def test_the_same_data_sets_everywhere():
    from skbandit._cli_common import datasets
    from skbandit.datasets import CLASSIFICATION_LOADERS

    for command in ("demo", "run", "compare"):
        (env,) = [a for a in _subparsers()[command]._actions if a.dest == "env"]
        assert env.choices == datasets()
        simulators = {"linear", "logistic", "topk", "cascade"}
        assert set(CLASSIFICATION_LOADERS) | simulators == set(env.choices)


def test_numbers_that_are_not_show_as_n_a():
    from skbandit._cli_common import fmt_number

    assert fmt_number(float("nan"), ".2f") == "n/a"
    assert fmt_number(float("inf"), ".2f") == "n/a"
    assert fmt_number(1.0, ".1f") == "1.0"


def test_slate_policies_run_on_the_slate_simulators(tmp_path, capsys):
    for env in ("topk", "cascade"):
        argv = ["run", "CombLinUCB", "--dataset", env, "--n-rounds", "30"]
        assert main([*argv, "--slate-size", "3", "--no-progress"]) == 0
        assert "CombLinUCB" in capsys.readouterr().out
    message = _user_error(["run", "CombLinUCB", "--n-rounds", "5"], capsys)
    assert "chooses slates of arms" in message and "topk or cascade" in message
    message = _user_error(["run", "LinUCB", "--dataset", "topk"], capsys)
    assert "topk is a slate simulator" in message


def test_every_command_defaults_to_ten_arms():
    from skbandit.__main__ import _parser

    for command in (["demo"], ["run", "LinUCB"], ["compare", "LinUCB"]):
        assert _parser().parse_args(command).n_actions == 10


def test_evaluate_time_column_implies_split_by_time(tmp_path, capsys):
    path, columns = _sorted_logs(tmp_path)
    assert main(["evaluate", str(path), *columns, "--time-column", "t"]) == 0
    assert "split by time; logged mean reward 0.0000" in capsys.readouterr().out
    argv = ["evaluate", str(path), *columns, "--time-column", "t", "--split", "shuffle"]
    assert "would be ignored" in _user_error(argv, capsys)


def test_evaluate_scales_and_flags_a_biased_replay(tmp_path, capsys):
    import numpy as np

    path, columns = _sorted_logs(tmp_path)
    frame = __import__("pandas").read_csv(path)
    frame["p"] = np.where(frame["arm"] == 0, 0.5, 0.25)  # not uniform logging
    frame.to_csv(path, index=False)
    assert main(["evaluate", str(path), *columns, "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "StandardScaler + LinUCB fitted on" in out
    assert "replay (biased: the logging was not uniform)" in out
    table = (tmp_path / "evaluate.csv").read_text().splitlines()
    assert table[-1].startswith("replay (biased: the logging was not uniform),")
    assert main(["evaluate", str(path), *columns, "--scale", "none"]) == 0
    assert "StandardScaler" not in capsys.readouterr().out
