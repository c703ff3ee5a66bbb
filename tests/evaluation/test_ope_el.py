"""The empirical-likelihood interval against independent derivations.

- a direct solve of the primal problems (the masses themselves, by SLSQP), where
  the library solves their duals;
- Owen's empirical likelihood for a mean (its own one-multiplier dual), which the
  interval reduces to on logs of the evaluated policy itself;
- closed forms: the most likely law is the empirical one when the logs' mean weight
  is below one and the weights are unbounded (the estimate is then SNIPS), and the
  interval shrinks to the values that law leaves open as the level goes to zero;
- a small coverage check.
"""
# SPDX-License-Identifier: BSD-3-Clause

import warnings

import numpy as np
import pytest
from scipy.optimize import brentq, minimize
from scipy.stats import chi2, f

from skbandit.evaluation import empirical_likelihood_interval, estimate_value
from skbandit.evaluation._ope_el import _el_bounds


def _primal_bounds(w, r, w_max, quantile):
    """Both ends by SLSQP over the masses ``q`` and the weight mass ``m`` at w_max."""
    n = w.size
    per_mass = 0.0 if np.isinf(w_max) else 1.0 / w_max
    constraints = [
        {"type": "ineq", "fun": lambda z: 1 - z[:n].sum() - z[n] * per_mass},
        {"type": "eq", "fun": lambda z: z[:n] @ w + z[n] - 1},
    ]
    bounds = [(1e-10, 1.0)] * n + [(0.0, None)]
    options = {"ftol": 1e-14, "maxiter": 1000}
    start = np.r_[np.full(n, 0.5 / n), 0.0]
    best = minimize(
        lambda z: -np.sum(np.log(z[:n])),
        start,
        method="SLSQP",
        constraints=constraints,
        bounds=bounds,
        options=options,
    )
    required = -best.fun - quantile / 2
    ends = []
    for reward in (r, 1 - r):
        likely = {"type": "ineq", "fun": lambda z: np.sum(np.log(z[:n])) - required}
        objective = w * reward
        res = minimize(
            lambda z, o=objective: z[:n] @ o,
            best.x,
            method="SLSQP",
            constraints=[*constraints, likely],
            bounds=bounds,
            options=options,
        )
        # SLSQP may end on "positive directional derivative" at the optimum; the
        # solution must still meet every constraint.
        z = res.x
        assert z[:n].sum() + z[n] * per_mass <= 1 + 1e-9
        assert abs(z[:n] @ w + z[n] - 1) < 1e-9
        assert np.sum(np.log(z[:n])) >= required - 1e-9
        ends.append(res.fun)
    return ends[0], 1 - ends[1]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("w_max", [np.inf, 8.0])
def test_dual_solution_equals_a_direct_solve_of_the_primal(seed, w_max):
    rng = np.random.default_rng(seed)
    n = 12
    if seed % 2:  # discrete weights, some zero, mean above or below one
        w = rng.choice([0.0, 0.5, 2.0, 4.0], size=n)
    else:
        w = rng.exponential(size=n)
    r = rng.random(n).round(2)
    quantile = f.ppf(0.95, 1, n)
    _, low, high = _el_bounds(w, r, w_max, quantile)
    p_low, p_high = _primal_bounds(w, r, w_max, quantile)
    # SLSQP stops at ftol 1e-14 on objectives of order 0.1-1; with its bounds kept
    # 1e-10 from zero the two solves agree to about 1e-8 (seen: 1e-9).
    assert low == pytest.approx(p_low, abs=1e-6)
    assert high == pytest.approx(p_high, abs=1e-6)


@pytest.mark.parametrize("w_max", [10.0, 12.0])
def test_dual_solution_equals_the_primal_with_heavy_weights_at_the_bound(w_max):
    # Mean weight far above one and weights at the bound itself: the search over
    # beta runs along the constraint mu = -beta w_max (seen: 2e-9 agreement).
    rng = np.random.default_rng(7)
    w = rng.choice([0.0, 1.5, 5.0, 10.0], size=10, p=[0.2, 0.3, 0.3, 0.2])
    r = rng.random(10).round(2)
    quantile = f.ppf(0.95, 1, 10)
    _, low, high = _el_bounds(w, r, w_max, quantile)
    p_low, p_high = _primal_bounds(w, r, w_max, quantile)
    assert low == pytest.approx(p_low, abs=1e-6)
    assert high == pytest.approx(p_high, abs=1e-6)


def _owen_mean_interval(x, quantile):
    """Owen's empirical-likelihood interval for the mean of ``x`` (chi-squared)."""

    def statistic(mu):
        z = x - mu
        # lambda keeps 1 + lambda z_i > 0: between -1/max z and -1/min z.
        eps = 1e-9 / (z.max() - z.min())
        with np.errstate(divide="ignore"):  # a zero z_i at the bracket's ends
            lam = brentq(
                lambda t: np.sum(z / (1 + t * z)),
                -1 / z.max() + eps,
                -1 / z.min() - eps,
                xtol=1e-15,
            )
        return 2 * np.sum(np.log1p(lam * z)) - quantile

    centre = x.mean()
    return (
        brentq(statistic, x.min() + 1e-9, centre),
        brentq(statistic, centre, x.max() - 1e-9),
    )


def test_on_policy_logs_give_owens_interval_for_the_mean():
    rng = np.random.default_rng(0)
    n = 60
    rewards = rng.random(n).round(3)
    rewards[:2] = [0.0, 1.0]  # the law's extra points then add nothing
    proba = np.tile([0.3, 0.7], (n, 1))
    actions = rng.integers(2, size=n)
    propensities = proba[np.arange(n), actions]  # every weight is one
    v = empirical_likelihood_interval(
        proba, actions, rewards, propensities, max_weight=1.0, calibration="chi2"
    )
    low, high = _owen_mean_interval(rewards, chi2.ppf(0.95, 1))
    # Two root searches each side, to ~1e-12 relative; 1e-8 leaves room.
    assert v.ci_low == pytest.approx(low, abs=1e-8)
    assert v.ci_high == pytest.approx(high, abs=1e-8)
    assert v.value == pytest.approx(rewards.mean(), abs=1e-12)


def _logs(rng, n, target="deterministic"):
    actions = rng.integers(3, size=n)
    rewards = (rng.random(n) < np.where(actions == 2, 0.7, 0.2)).astype(float)
    if target == "deterministic":
        proba = np.tile([0.0, 0.0, 1.0], (n, 1))
    else:
        proba = rng.dirichlet([1.0, 1.0, 1.0], size=n)
    return proba, actions, rewards, np.full(n, 1 / 3)


def _logs_of_mean_weight_below_one():
    rng = np.random.default_rng(3)
    for _ in range(20):
        logs = _logs(rng, 40)
        w = logs[0][np.arange(40), logs[1]] / logs[3]
        if w.mean() < 1:
            return logs, w
    raise AssertionError("no such logs in 20 draws")


def test_estimate_is_snips_when_the_empirical_law_is_most_likely():
    # Mean weight below one, no bound: the empirical law is the most likely, and the
    # weight mass it lacks takes the self-normalised reward.
    logs, w = _logs_of_mean_weight_below_one()
    v = empirical_likelihood_interval(*logs)
    snips = estimate_value(*logs, method="snips").value
    assert v.value == pytest.approx(snips, rel=1e-12)  # the same sums


def test_interval_shrinks_to_what_the_most_likely_law_leaves_open():
    logs, w = _logs_of_mean_weight_below_one()
    wr = np.mean(w * logs[2])
    # As the level goes to 0 the interval tends to the values of the empirical law
    # with its missing weight mass 1 - mean(w) given a reward of 0 or 1.
    v = empirical_likelihood_interval(*logs, alpha=1 - 1e-10, calibration="chi2")
    # chi2 quantile at 1e-10 is ~1.6e-20: the ends move by far less than 1e-6.
    assert v.ci_low == pytest.approx(wr, abs=1e-6)
    assert v.ci_high == pytest.approx(wr + 1 - w.mean(), abs=1e-6)


def test_interval_is_ordered_in_range_and_narrows_with_a_weight_bound():
    rng = np.random.default_rng(5)
    for target in ("deterministic", "stochastic"):
        logs = _logs(rng, 300, target)
        free = empirical_likelihood_interval(*logs)
        bounded = empirical_likelihood_interval(*logs, max_weight=3.0)
        for v in (free, bounded):
            assert 0.0 <= v.ci_low <= v.value <= v.ci_high <= 1.0
            assert v.method == "el"
        wider = empirical_likelihood_interval(*logs, alpha=0.01)
        assert wider.ci_low < free.ci_low and wider.ci_high > free.ci_high
    # The row order and repeated rows of identical (w, r) change nothing.
    order = rng.permutation(300)
    shuffled = empirical_likelihood_interval(*(a[order] for a in logs))
    assert shuffled.ci_low == pytest.approx(free.ci_low, rel=1e-10)


def test_coverage_on_uniform_logs_small_n():
    # 200 data sets of 100 rounds, a deterministic target (weights 0 or 3):
    # nominal 95%, its Monte Carlo standard error 0.015; 0.90 is over 3 of them
    # below; seeds 0-4 gave 0.955-0.965 (and 0.98-1.0 without the weight bound).
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(200):
        v = empirical_likelihood_interval(*_logs(rng, 100), max_weight=3.0)
        hits += v.ci_low <= 0.7 <= v.ci_high
    assert hits / 200 >= 0.90


def test_errors_say_what_is_wrong():
    rng = np.random.default_rng(0)
    proba, actions, rewards, propensities = _logs(rng, 50)
    with pytest.raises(ValueError, match="rewards in \\[0, 1\\]"):
        empirical_likelihood_interval(proba, actions, rewards * 2, propensities)
    with pytest.raises(ValueError, match="below a logged importance weight"):
        empirical_likelihood_interval(
            proba, actions, rewards, propensities, max_weight=2.0
        )
    with pytest.raises(ValueError, match="max_weight=1"):
        empirical_likelihood_interval(
            proba, actions, rewards, propensities, max_weight=1.0
        )


@pytest.mark.parametrize(
    ("w", "r", "w_max"),
    [
        (np.full(3, 60.0), np.ones(3), 60.0),  # every weight at the bound
        (np.zeros(5), np.ones(5), np.inf),  # the target never played a logged arm
        (np.full(4, 0.5), np.zeros(4), np.inf),  # one weight, below one
        (np.array([0.0, 60.0, 60.0, 0.5]), np.array([1.0, 0.0, 1.0, 0.3]), 60.0),
    ],
)
def test_degenerate_logs_give_a_finite_ordered_interval(w, r, w_max):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no log(0) or 0/0 on the way
        value, low, high = _el_bounds(w, r, w_max, f.ppf(0.95, 1, w.size))
    assert 0.0 <= low <= value <= high <= 1.0
