"""What a cached benchmark run records so that a later session can tell whether it is
still a run of today's code: the policy's full parameters, the library's commit, and
a file written whole or not at all."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import ast
import json
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def library_commit() -> str:
    """The last commit that changed ``skbandit/``, ``+dirty`` with uncommitted edits."""

    def git(*args):
        out = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True,
                             text=True)  # fmt: skip
        return out.stdout.strip()

    commit = git("log", "-1", "--format=%h", "--", "skbandit") or "unknown"
    return commit + ("+dirty" if git("status", "--porcelain", "--", "skbandit") else "")


def policy_params(cls, params: dict) -> dict:
    """Every parameter of ``cls(**params)`` but ``random_state``, JSON-ready: a cached
    run is a run of today's defaults only if these match (a changed default shows)."""
    built = cls(**params).get_params()
    built.pop("random_state", None)
    return json.loads(json.dumps(built, default=repr))


def parse_setting(text: str) -> dict:
    """The parameters of a setting written ``"k=v"`` or ``"k=v,k2=v2"`` (Python
    literals: ``hidden_layer_sizes=(200,)``)."""
    call = ast.parse(f"setting({text})", mode="eval").body
    return {k.arg: ast.literal_eval(k.value) for k in call.keywords}


def write_record(path: Path, record: dict) -> None:
    """Write ``record`` as JSON at ``path``: a cut run leaves no half file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_suffix(".part")
    part.write_text(json.dumps(record, indent=1) + "\n")
    part.replace(path)


def current_record(path: Path, params: dict) -> dict | None:
    """The record cached at ``path`` if it ran with ``params`` (``policy_params``);
    None where there is none, or it is stale."""
    if not path.exists():
        return None
    record = json.loads(path.read_text())
    return record if record.get("params") == params else None
