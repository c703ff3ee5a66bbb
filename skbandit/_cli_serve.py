"""``skbandit serve policy.joblib --db decisions.sqlite``: the HTTP face of the loop.

Loads a pickled policy (or pipeline), opens the decision log, restores the
learner's last checkpoint when the log has one (the policy that serves after a
restart is the one that learned), learns in a background thread every
``--learn-every`` seconds, and serves :func:`skbandit.serving.make_app` with
uvicorn on 127.0.0.1 unless ``--host`` says otherwise.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from skbandit._cli_common import CliError, add_command, positive_int

__all__ = ["add_serve"]


def _non_negative(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def cmd_serve(args):
    try:
        import uvicorn

        from skbandit.serving import make_app
    except ImportError as exc:
        raise CliError(
            f"serve needs the extra skbandit[serve]: pip install 'skbandit[serve]' "
            f"({exc})"
        ) from None
    import joblib

    from skbandit.serving import DecisionLog, Learner

    if not Path(args.policy).is_file():
        raise CliError(f"no policy file {args.policy!r} (write one with joblib.dump)")
    policy = joblib.load(args.policy)
    if not hasattr(policy, "select"):
        raise CliError(f"{args.policy} holds a {type(policy).__name__}, not a policy")
    log = DecisionLog(args.db, durability=args.durability)
    learner = Learner(
        policy,
        log,
        wait=args.wait,
        default_reward=args.default_reward,
        batch_size=args.batch_size,
    )
    app = make_app(
        policy,
        log,
        learner=learner,
        learn_every=args.learn_every or None,
        max_body_bytes=args.max_body_bytes,
    )
    print(
        f"skbandit serve: {type(policy).__name__} on http://{args.host}:{args.port} "
        f"(log {args.db}, {learner.n_learned_} events learned so far)",
        file=sys.stderr,
        flush=True,
    )
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        access_log=False,
    )
    log.close_connection()
    return 0


def add_serve(sub):
    serve = add_command(
        sub,
        "serve",
        help="serve a pickled policy over HTTP, logging decisions and rewards",
        description="Serve a policy: POST /rank, POST /reward, POST /activate, "
        "GET /health, GET /status, and the OpenAPI schema at /docs. E.g. "
        "'skbandit serve policy.joblib --db decisions.sqlite --port 8000'.",
    )
    serve.add_argument("policy", help="a policy or pipeline saved with joblib.dump")
    serve.add_argument("--db", required=True, help="the SQLite decision log")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=int, default=8000, help="port to listen on")
    serve.add_argument(
        "--wait",
        type=_non_negative,
        default=600.0,
        help="reward wait in seconds: an event closes this long after its decision",
    )
    serve.add_argument(
        "--default-reward",
        type=float,
        default=0.0,
        help="reward of an event that got none within the wait",
    )
    serve.add_argument(
        "--batch-size",
        type=positive_int,
        default=256,
        help="events per partial_fit call",
    )
    serve.add_argument(
        "--learn-every",
        type=_non_negative,
        default=5.0,
        help="seconds between two learning steps (0: never learn)",
    )
    serve.add_argument(
        "--durability",
        choices=("commit", "batch"),
        default="commit",
        help="commit: every acknowledged call is on disk; batch: faster, a crash "
        "loses the queued decisions",
    )
    serve.add_argument(
        "--max-body-bytes",
        type=positive_int,
        default=1_000_000,
        help="larger requests get 413",
    )
    serve.add_argument(
        "--log-level",
        default="warning",
        choices=("critical", "error", "warning", "info", "debug"),
        help="uvicorn's log level",
    )
    serve.set_defaults(func=cmd_serve)
