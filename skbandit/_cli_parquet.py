"""``skbandit fit`` and ``skbandit evaluate`` on a Parquet directory of logs, on Dask.

The logs are read by ``dask.dataframe.read_parquet`` and never gathered: the policy
is fitted on the workers (:meth:`~skbandit.base.BasePolicy.fit` on Dask
collections) and evaluated there (:func:`~skbandit.evaluation.estimate_value`).
``--scheduler ADDRESS`` reaches a running Dask cluster; without it an embedded
``distributed.LocalCluster`` of ``--workers`` processes is started and closed.

``evaluate``'s split is Dask's ``random_split`` (seeded by ``--seed``, drawn per
partition), and its DR reward model is a per-arm ridge regression (intercept
included and penalised as the features) fitted from summed statistics on the fit
part and broadcast to score the evaluation part: in memory the CLI fits
scikit-learn's ``Ridge`` per arm, whose intercept is not penalised.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from skbandit._cli_common import (
    CliError,
    add_command,
    add_param_option,
    make_policy,
    policy_label,
)
from skbandit._cli_logs import (
    add_column_options,
    context_columns,
    estimates,
    report_estimates,
)

__all__ = ["add_fit", "add_scheduler_options", "cmd_evaluate_parquet"]


def add_scheduler_options(parser):
    """``--scheduler`` and ``--workers``: where the Dask computation runs."""
    parser.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="address of a running Dask scheduler (e.g. tcp://10.0.0.1:8786); "
        "default: an embedded LocalCluster (Parquet logs only)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=min(4, os.cpu_count() or 1),
        help="processes of the embedded LocalCluster (Parquet logs only)",
    )


@contextlib.contextmanager
def _dask_client(args):
    """A client of ``--scheduler``, or of an embedded cluster closed on exit."""
    try:
        import distributed
    except ImportError:  # pragma: no cover - the dask extra is not installed
        raise CliError(
            "Parquet logs need Dask: pip install 'dask[distributed]'."
        ) from None
    if args.scheduler is not None:
        with distributed.Client(args.scheduler) as client:
            yield client
        return
    cluster = distributed.LocalCluster(
        n_workers=args.workers,
        threads_per_worker=1,
        host="127.0.0.1",
        dashboard_address=None,
    )
    with cluster, distributed.Client(cluster) as client:
        yield client


def _read_logs(args, *, propensities=True):
    """``(X, actions, rewards, propensities, frame)`` of the Parquet directory, as
    Dask arrays of the columns the options name (contexts as for .npz files)."""
    import dask.dataframe as dd

    path = Path(args.logs)
    frame = dd.read_parquet(str(path))
    data = dict.fromkeys(str(c) for c in frame.columns)
    names = {"--actions": args.actions, "--rewards": args.rewards}
    if propensities:
        names["--propensities"] = args.propensities
    missing = [f"{v} ({k})" for k, v in names.items() if v not in data]
    if missing:
        raise CliError(
            f"the logged data lack {', '.join(missing)}; the files have "
            f"{', '.join(data)}."
        )
    columns = context_columns(data, args, set(names.values()))
    return frame, columns


def _arrays(frame, columns, args, *, propensities=True):
    """The named columns as Dask arrays, from one read of each file."""
    logged = [args.actions, args.rewards]
    if propensities:
        logged.append(args.propensities)
    n = len(columns)
    both = frame[[*columns, *logged]].astype("float64").to_dask_array()
    X, actions, rewards = both[:, :n], both[:, n].astype("int64"), both[:, n + 1]
    return X, actions, rewards, (both[:, n + 2] if propensities else None)


def cmd_fit(args):
    import pickle

    if not Path(args.logs).is_dir():
        raise CliError(f"no Parquet directory {str(args.logs)!r}.")
    with _dask_client(args):
        frame, columns = _read_logs(args, propensities=False)
        X, actions, rewards, _ = _arrays(frame, columns, args, propensities=False)
        policy = make_policy(args.policy, args.seed, params=args.param)
        policy.fit(X, actions, rewards)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(pickle.dumps(policy))
    label = policy_label(policy, hide=("random_state",))
    print(f"{label} fitted on {policy.n_samples_seen_} logged rounds; saved to {out}")
    return 0


def cmd_evaluate_parquet(args):
    """``skbandit evaluate`` on a Parquet directory."""
    from skbandit.policies import LinUCB

    if args.split != "shuffle":
        raise CliError("--split time needs a .npz or .csv file; Parquet logs shuffle.")
    with _dask_client(args):
        frame, columns = _read_logs(args)
        n_actions = int(frame[args.actions].max().compute()) + 1
        fit_part, test_part = frame.random_split(
            [1 - args.test_fraction, args.test_fraction], random_state=args.seed
        )
        X, actions, rewards, _ = _arrays(fit_part, columns, args)
        policy = make_policy(
            args.policy, args.seed, params=args.param, n_actions=n_actions
        )
        policy.fit(X, actions, rewards)
        Xt, at, rt, pt = _arrays(test_part, columns, args)
        proba = policy.predict_action_proba(Xt)
        model = LinUCB(n_actions=n_actions, beta=0.0).fit(X, actions, rewards)
        q_hat = model.predict_scores(Xt)  # the model broadcast once, on the workers
        values = estimates(proba, at, rt, pt, q_hat, args.alpha)
    n_test = next(iter(values.values())).n_samples
    title = (
        f"{policy_label(policy, hide=('random_state', 'n_actions'))} fitted on "
        f"{policy.n_samples_seen_} logged rounds, evaluated on {n_test} (shuffled)"
    )
    return report_estimates(values, title, args)


def add_fit(sub):
    fit = add_command(
        sub,
        "fit",
        help="fit a policy on a Parquet directory of logs, on Dask",
        description="Fit a policy on logged data in a Parquet directory (columns: "
        "contexts, actions, rewards, named by the options below) on a Dask cluster "
        "(--scheduler, or an embedded one) and save the fitted policy as a pickle.",
    )
    fit.add_argument("logs", help="directory of Parquet files")
    fit.add_argument("--policy", default="LinUCB", help="policy class name or repr")
    add_param_option(fit)
    add_column_options(fit)
    fit.add_argument("--seed", type=int, default=0, help="seed of the policy")
    fit.add_argument("--out", default="policy.pkl", help="where the pickle goes")
    add_scheduler_options(fit)
    fit.set_defaults(func=cmd_fit)
