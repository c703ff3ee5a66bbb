"""``skbandit fit`` and ``skbandit evaluate`` on a Parquet directory of logs, on Dask.

The logs are read by pyarrow on the workers (``skbandit._parquet_logs``: each
array on its own, the contexts as one block in their stored dtype) and never
gathered: the policy is fitted on the workers
(:meth:`~skbandit.base.BasePolicy.fit` on Dask collections) and evaluated there
(:func:`~skbandit.evaluation.estimate_value`). ``--scheduler ADDRESS`` reaches a
running Dask cluster; without it an embedded ``distributed.LocalCluster`` of
``--workers`` processes is started and closed, its periodic timers slowed
(``EMBEDDED_TIMERS``) and its HTTP server on a free port of 127.0.0.1.

``evaluate``'s split is seeded by ``--seed`` and drawn per partition
(``skbandit._parquet_logs.Split``), and its DR reward model is a per-arm ridge
regression (intercept included and penalised as the features) fitted from summed
statistics on the fit part and broadcast to score the evaluation part: in memory
the CLI fits scikit-learn's ``Ridge`` per arm, whose intercept is not penalised.
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

__all__ = [
    "EMBEDDED_TIMERS",
    "add_fit",
    "add_scheduler_options",
    "cmd_evaluate_parquet",
]

#: Dask settings of the embedded cluster: its periodic timers, which wake every
#: process tens of times a second (event-loop ticks, the workers' statistical
#: profiler, memory and system monitors), slowed for a batch job: at rest, a
#: two-worker cluster took 7-9 % of a core with Dask's defaults, 1 % with these.
EMBEDDED_TIMERS = {
    "distributed.admin.tick.interval": "1s",
    "distributed.worker.profile.enabled": False,
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.worker.memory.monitor-interval": "1s",
}


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
    import dask

    # The cluster is the command's own (a user's cluster keeps its settings): its
    # processes get these timers (the workers take the config of their start).
    with dask.config.set(EMBEDDED_TIMERS):
        cluster = distributed.LocalCluster(
            n_workers=args.workers,
            threads_per_worker=1,
            host="127.0.0.1",
            dashboard_address=None,
            # No dashboard, but the scheduler's HTTP server (health, metrics) still
            # starts: on a free port, not on 8787 with a warning when that is taken.
            scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
        )
        with cluster, distributed.Client(cluster) as client:
            yield client


def _read_logs(args, *, propensities=True):
    """The logs' ``skbandit._parquet_logs.ParquetLogs`` (footers only) and
    the context columns the options name (chosen as for .npz files)."""
    from skbandit._parquet_logs import scan

    logs = scan(Path(args.logs))
    data = dict.fromkeys(logs.dtypes)
    names = {"--actions": args.actions, "--rewards": args.rewards}
    if propensities:
        names["--propensities"] = args.propensities
    missing = [f"{v} ({k})" for k, v in names.items() if v not in data]
    if missing:
        raise CliError(
            f"the logged data lack {', '.join(missing)}; the files have "
            f"{', '.join(data)}."
        )
    return logs, context_columns(data, args, set(names.values()))


def _arrays(logs, columns, args, *, propensities=True, split=None):
    """``(X, actions, rewards, propensities)`` as Dask arrays, each read on its own
    (the contexts as one block in their stored dtype), ``split``'s rows only."""
    import numpy as np

    try:
        X = logs.contexts(columns, split)
    except TypeError as exc:
        raise CliError(str(exc)) from None
    actions = logs.column(args.actions, np.int64, split)
    rewards = logs.column(args.rewards, np.float64, split)
    if propensities:
        return X, actions, rewards, logs.column(args.propensities, np.float64, split)
    return X, actions, rewards, None


def cmd_fit(args):
    import pickle

    if not Path(args.logs).is_dir():
        raise CliError(f"no Parquet directory {str(args.logs)!r}.")
    # Footers and graphs only: a wrong column fails before any cluster starts.
    logs, columns = _read_logs(args, propensities=False)
    X, actions, rewards, _ = _arrays(logs, columns, args, propensities=False)
    policy = make_policy(args.policy, args.seed, params=args.param)
    with _dask_client(args):
        policy.fit(X, actions, rewards)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(pickle.dumps(policy))
    label = policy_label(policy, hide=("random_state",))
    print(f"{label} fitted on {policy.n_samples_seen_} logged rounds; saved to {out}")
    return 0


def cmd_evaluate_parquet(args):
    """``skbandit evaluate`` on a Parquet directory."""
    from skbandit._parquet_logs import Split
    from skbandit.policies import LinUCB

    if args.split != "shuffle":
        raise CliError("--split time needs a .npz or .csv file; Parquet logs shuffle.")
    logs, columns = _read_logs(args)
    split = Split(args.seed, args.test_fraction, "fit")
    X, actions, rewards, _ = _arrays(logs, columns, args, split=split)
    test = Split(args.seed, args.test_fraction, "test")
    Xt, at, rt, pt = _arrays(logs, columns, args, split=test)
    with _dask_client(args):
        # the actions alone: one read of that column per partition
        n_actions = int(logs.column(args.actions, "int64").max().compute()) + 1
        policy = make_policy(
            args.policy, args.seed, params=args.param, n_actions=n_actions
        )
        policy.fit(X, actions, rewards)
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
