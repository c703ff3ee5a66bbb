"""The fair bake-off's tables, from its cache: per problem, the methods' mistakes and
the paired verdict against the problem's best; over the problems, each method's wins
minus losses; and the head-to-head of each library's rows."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from typing import NamedTuple

import _significance as sig
import numpy as np


class Runs(NamedTuple):
    """One method's runs on one problem, one row per seed."""

    losses: np.ndarray  # (seeds, rounds) 0/1 losses
    seconds: np.ndarray  # CPU seconds per run
    library: str  # the skbandit commit or the peers' versions
    failed: tuple = ()  # the seeds whose run stopped on an error (rest: mistakes)

    @property
    def mistakes(self):
        return self.losses.sum(axis=1)


def collect(problems, methods, n_rounds, seeds, read):
    """``{problem: {method: Runs}}`` for the methods cached on every seed."""
    out = {}
    for name in problems:
        table = {}
        for method in methods:
            records = [read(name, method, s, n_rounds) for s in seeds]
            if any(r is None for r in records):
                continue
            table[method] = Runs(
                np.stack([r["losses"] for r in records]),
                np.array([r["seconds"] for r in records]),
                " / ".join(sorted({r["library"] for r in records})),
                tuple(s for s, r in zip(seeds, records, strict=True) if "error" in r),
            )
        if table:
            out[name] = table
    return out


def problem_rows(table):
    """Rows of one problem's table, fewest mistakes first: (method, mean, sd,
    seconds, mark), the mark saying how the method compares with the best one by
    the paired test: ``best``, ``tie`` (not significantly different) or ``worse``."""
    order = sorted(table, key=lambda m: table[m].mistakes.mean())
    best = order[0]
    rows = []
    for method in order:
        runs = table[method]
        if method == best:
            mark = "best"
        else:
            test = sig.paired_test(runs.losses, table[best].losses)
            mark = "worse" if test.verdict() == -1 else "tie"
        if runs.failed:
            mark += f" (failed on seed {', '.join(map(str, runs.failed))})"
        rows.append((method, runs.mistakes.mean(), runs.mistakes.std(),
                     runs.seconds.mean(), mark))  # fmt: skip
    return rows


def _good(mark):
    """Whether a row's mark is the best or a tie with it (bold in the tables)."""
    return mark.split()[0] in ("best", "tie")


def scoreboard(tables):
    """Per method: (wins, losses, problems run), over the problems and opponents."""
    per_problem = [sig.verdicts({m: r.losses for m, r in t.items()})
                   for t in tables.values()]  # fmt: skip
    totals = sig.wins_minus_losses(per_problem)
    counts = {}
    for table in tables.values():
        for method in table:
            counts[method] = counts.get(method, 0) + 1
    return {m: (*totals.get(m, (0, 0)), counts[m]) for m in counts}, per_problem


def seed_agreement(tables):
    """Of the significant verdicts, how many every seed agrees with (the winner made
    fewer mistakes on each seed): the test treats rounds as independent, which rounds
    of one learning run are not quite, so this says how far to trust it."""
    agree = total = 0
    for table in tables.values():
        verdicts = sig.verdicts({m: r.losses for m, r in table.items()})
        for (a, b), v in verdicts.items():
            if v > 0:
                total += 1
                agree += bool(np.all(table[a].mistakes < table[b].mistakes))
    return agree, total


def print_problem(name, table, n_rounds, n_seeds, random_mistakes):
    print(f"\n{name} (T = {n_rounds}, {n_seeds} seeds; uniform play makes about "
          f"{random_mistakes:.0f})")  # fmt: skip
    print(f"  {'method':<24} {'mistakes':>16} {'CPU s':>7}  vs best")
    for method, mean, sd, seconds, mark in problem_rows(table):
        print(f"  {method:<24} {mean:9.1f} ± {sd:5.1f} {seconds:7.2f}  {mark}")


def median_seconds(tables):
    """Per method, the median over the problems of its mean CPU seconds per run."""
    seconds = {}
    for table in tables.values():
        for method, runs in table.items():
            seconds.setdefault(method, []).append(runs.seconds.mean())
    return {m: float(np.median(v)) for m, v in seconds.items()}


def print_scoreboard(board, seconds, markdown=False):
    order = sorted(board, key=lambda m: (-(board[m][0] - board[m][1]), m))
    if markdown:
        print("\n| method | wins | losses | wins − losses | problems | CPU s per run |")
        print("|---|---|---|---|---|---|")
    else:
        print(f"\n{'method':<24} {'wins':>5} {'losses':>6} {'W-L':>5} problems  CPU s")
    for m in order:
        wins, losses, n = board[m]
        if markdown:
            print(f"| {m} | {wins} | {losses} | {wins - losses:+d} | {n} "
                  f"| {seconds[m]:.2f} |")  # fmt: skip
        else:
            print(f"{m:<24} {wins:5d} {losses:6d} {wins - losses:+5d} {n:8d}  "
                  f"{seconds[m]:.2f}")  # fmt: skip


def print_markdown_matrix(tables, methods):
    """Every method's mean mistakes on every problem (a row per method, in the
    given order); in bold the problem's best and those the paired test cannot tell
    from it."""
    names = list(tables)
    print("\n| method | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    marks = {n: {r[0]: r for r in problem_rows(tables[n])} for n in names}
    for method in methods:
        cells = []
        for n in names:
            row = marks[n].get(method)
            if row is None:
                cells.append("–")
            else:
                text = f"{row[1]:.0f}" + ("†" if "failed" in row[4] else "")
                cells.append(f"**{text}**" if _good(row[4]) else text)
        print(f"| {method} | " + " | ".join(cells) + " |")


def print_markdown_problems(tables, random_mistakes):
    """One markdown row per problem: the best method, and each library's best row
    (fewest mistakes) with its verdict against the problem's best."""
    libraries = ("skbandit", "Vowpal Wabbit", "contextualbandits", "MABWiser")
    print("\n| problem (K) | uniform | " + " | ".join(libraries) + " |")
    print("|---" * (len(libraries) + 2) + "|")
    for name, (table, library_of) in tables.items():
        rows = problem_rows(table)
        cells = []
        for lib in libraries:
            mine = [r for r in rows if library_of[r[0]] == lib]
            if not mine:
                cells.append("not run")
                continue
            method, mean, sd, _, mark = mine[0]
            text = f"{method} {mean:.0f} ± {sd:.0f}"
            cells.append(f"**{text}**" if _good(mark) else text)
        k, uniform = random_mistakes[name]
        print(f"| {name} ({k}) | {uniform:.0f} | " + " | ".join(cells) + " |")


def print_tables(problems, methods, n_rounds, seeds, read, markdown=False,
                 library_of=None, arms=None):  # fmt: skip
    """The per-problem tables, the scoreboard and (``markdown``) the guide's tables.

    ``library_of`` maps a method to its library, ``arms`` a problem to its K (for
    the uniform policy's expected mistakes, T (K - 1) / K)."""
    tables = collect(problems, methods, n_rounds, seeds, read)
    if not tables:
        print("nothing cached yet")
        return
    n_seeds = len(seeds)
    random_mistakes = {}
    for name in tables:
        k = arms(name) if arms else 0
        random_mistakes[name] = (k, n_rounds * (k - 1) / k if k else float("nan"))
        print_problem(name, tables[name], n_rounds, n_seeds, random_mistakes[name][1])
    board, per_problem = scoreboard(tables)
    print(f"\nwins minus losses over {len(tables)} problems (paired Z-test, "
          f"alpha = {sig.ALPHA}, every pair of methods run on a problem)")  # fmt: skip
    seconds = median_seconds(tables)
    print_scoreboard(board, seconds)
    agree, total = seed_agreement(tables)
    print(f"\n{agree} of the {total} significant verdicts hold on every seed")
    libraries = sorted({r.library for t in tables.values() for r in t.values()})
    print("\nruns from: " + "; ".join(libraries))
    if markdown and library_of is not None:
        print_markdown_problems({n: (t, library_of) for n, t in tables.items()},
                                random_mistakes)  # fmt: skip
        print_markdown_matrix(tables, [m for m in methods if m in board])
        print_scoreboard(board, seconds, markdown=True)
    return tables, board, per_problem
