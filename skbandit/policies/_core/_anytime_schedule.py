"""Anytime ensemble sampling: the restart schedule and per-phase ensemble settings.

The doubling trick of Sun, Wang and Xu, "Provable anytime ensemble sampling algorithms
in nonlinear contextual bandits" (section 6 and appendix E): a fixed-horizon algorithm
is run in phases and **fully restarted** (history, ensemble and perturbations
discarded) after rounds ``T_i = floor(T0 b^i)``, ``i = 0, 1, ...``. Phase ``i`` lasts
``tau_0 = T0`` and ``tau_i = T_i - T_{i-1}`` rounds, and its hyper-parameters are set
for that horizon; the experiments (section 7.2) use ``m_i = 2 ln tau_i`` models (we
take ``ceil``) and the perturbation scale ``sigma_i = 0.02 ln tau_i``. The defaults
``T0 = 100`` and ``b = (3 + sqrt 5) / 2`` give restarts after rounds 100, 261, 685,
1794, 4697, 12299, ...

API (stable; :class:`~skbandit.policies.LinES`, :class:`~skbandit.policies.GLMES` and
the neural ensemble policies build on it)
----------------------------------------
``GOLDEN_RESTART_BASE``
    ``(3 + sqrt 5) / 2``, the paper's ``b`` (optimal for regret ``O(sqrt T)``).
``phase_ends(first_phase, restart_base, n_rounds)``
    the ``T_i`` up to the first one ``>= n_rounds``, strictly increasing.
``phase_n_models(length)`` / ``phase_perturbation_scale(length)``
    the experiments' ``ceil(2 ln tau)`` (at least 1) and ``0.02 ln tau``.
``loss_factor(first_phase, restart_base)``
    the constant ``l(T0, b)`` of Lemma E.1 (about 3.336 for the defaults).
``ANYTIME_CONSTRAINTS``
    ``_parameter_constraints`` of ``n_models``, ``perturbation_scale``, ``horizon``,
    ``first_phase`` and ``restart_base``.
``AnytimeEnsembleMixin``
    the phase bookkeeping of an ensemble policy with those five parameters, to put
    left of :class:`~skbandit.base.BasePolicy`. It implements ``_init_state`` and
    ``_update``; the policy implements

    ``_start_phase()``
        build an empty ensemble of ``self.n_models_`` members (called at the first
        fit and at every restart; ``self.perturbation_scale_`` is set too);
    ``_update_phase(X, actions, rewards, sample_weight, perturbations)``
        learn from the rows of the current phase; ``perturbations`` has shape
        ``(n_rows, n_models_)``, one ``N(0, perturbation_scale_^2)`` draw per member per
        row, drawn here once and never again (the policy stores them). It must not
        mutate state before everything that can fail has run.

    and sets the class attributes ``_fixed_n_models`` / ``_fixed_perturbation_scale``
    (what ``"auto"`` means without restarts: the paper's fixed-horizon values). It
    provides ``_phase_rounds(n_rows)`` (0-based index within the phase of each of the
    next rounds, for warm-ups), ``_draw_members(n_rows, rng)`` (``j_t ~ U[m]``) and the
    fitted attributes ``phase_``, ``phase_start_``, ``phase_length_``, ``n_models_``
    and ``perturbation_scale_``.

Semantics: ``horizon="anytime"`` restarts after each ``T_i`` (the paper's anytime
version, opt-in); ``horizon=T`` is one phase of length ``T`` that never restarts (rounds
past ``T`` continue it); ``horizon=None`` is one phase that never ends (the default of
LinES and GLMES: no data are ever thrown away). A restart happens as soon as the
feedback of round ``T_i`` arrives, so the next :meth:`select` already uses
the fresh phase. Rows of a feedback batch that belong to phases already complete at the
end of the batch are discarded with their phase. Perturbations of phase ``i`` come
from a generator seeded by ``(seed, i)``, so they do not depend on how feedback was
batched.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
from numpy.typing import NDArray

from skbandit.utils._param_validation import Interval, StrOptions

__all__ = [
    "ANYTIME_CONSTRAINTS",
    "GOLDEN_RESTART_BASE",
    "AnytimeEnsembleMixin",
    "loss_factor",
    "phase_ends",
    "phase_n_models",
    "phase_perturbation_scale",
]

#: The paper's restart base ``b = (3 + sqrt 5) / 2``, the square of the golden ratio.
GOLDEN_RESTART_BASE = (3.0 + math.sqrt(5.0)) / 2.0

#: Models per unit of ``ln tau`` and perturbation scale per unit of ``ln tau`` in the
#: experiments' anytime runs (section 7.2: ``2 log tau_i`` and ``0.02 log tau_i``).
MODELS_PER_LOG = 2.0
SCALE_PER_LOG = 0.02

#: Beyond this many rounds no restart is scheduled (2^53: floats stay exact).
_MAX_ROUNDS = 2**53

ANYTIME_CONSTRAINTS = {
    "n_models": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
    "perturbation_scale": [
        Interval(Real, 0, None, closed="left"),
        StrOptions({"auto"}),
    ],
    "horizon": [
        Interval(Integral, 1, None, closed="left"),
        StrOptions({"anytime"}),
        None,
    ],
    "first_phase": [Interval(Integral, 1, None, closed="left")],
    "restart_base": [Interval(Real, 1, None, closed="neither")],
}


def phase_ends(first_phase: int, restart_base: float, n_rounds: int) -> NDArray:
    """Restart rounds ``T_i = floor(T0 b^i)`` up to the first one ``>= n_rounds``.

    A floor that would not advance (``T0 b^i`` and ``T0 b^(i-1)`` in the same
    integer, possible only for ``b`` close to 1 and small ``T0``) is moved one
    round on, so that every phase lasts at least one round.

    Parameters
    ----------
    first_phase : int
        ``T0``, the length of the first phase.
    restart_base : float
        ``b > 1``.
    n_rounds : int
        Rounds the schedule must cover.

    Returns
    -------
    ends : ndarray of shape (n_phases,), int64
        ``T_0, T_1, ...``: phase ``i`` covers rounds ``T_{i-1} + 1 .. T_i`` (1-based).

    Examples
    --------
    >>> from skbandit.policies._core._anytime_schedule import (
    ...     GOLDEN_RESTART_BASE, phase_ends)
    >>> phase_ends(100, GOLDEN_RESTART_BASE, 10_000).tolist()
    [100, 261, 685, 1794, 4697, 12299]
    """
    ends = [int(first_phase)]
    i = 0
    while ends[-1] < n_rounds:
        i += 1
        ends.append(max(ends[-1] + 1, math.floor(first_phase * restart_base**i)))
    return np.asarray(ends, dtype=np.int64)


def phase_n_models(length: int) -> int:
    """The experiments' ensemble size for a phase of ``length`` rounds.

    ``ceil(2 ln tau)``, at least 1 (the paper writes ``2 log tau_i``; the ceiling
    and the natural log are our reading).
    """
    return max(1, math.ceil(MODELS_PER_LOG * math.log(max(length, 1)) - 1e-9))


def phase_perturbation_scale(length: int) -> float:
    """The experiments' perturbation scale ``0.02 ln tau`` for a phase of ``tau``."""
    return SCALE_PER_LOG * math.log(max(length, 1))


def loss_factor(
    first_phase: float, restart_base: float, gamma: float = 0.5, delta: float = 1.5
) -> float:
    """The constant ``l(T0, b)`` of Lemma E.1 (Besson and Kaufmann 2018, Thm 4).

    ``(log(T0 (b-1) + 1) / log(T0 (b-1)))^delta b^gamma (b-1)^gamma / (b^gamma - 1)``:
    the anytime regret is at most ``l`` times the fixed-horizon bound for regret
    ``O(T^gamma (log T)^delta)``. Needs ``T0 (b - 1) > 1``.

    Examples
    --------
    >>> from skbandit.policies._core._anytime_schedule import (
    ...     GOLDEN_RESTART_BASE, loss_factor)
    >>> round(loss_factor(100, GOLDEN_RESTART_BASE), 3)
    3.336
    """
    x = first_phase * (restart_base - 1.0)
    if x <= 1.0:
        raise ValueError(f"loss_factor needs T0 (b - 1) > 1, got {x!r}.")
    b = restart_base
    ratio = (math.log(x + 1.0) / math.log(x)) ** delta
    return ratio * b**gamma * (b - 1.0) ** gamma / (b**gamma - 1.0)


class AnytimeEnsembleMixin:
    """Phases, per-phase ensemble settings and stored perturbations (module docstring).

    The policy has the parameters ``n_models``, ``perturbation_scale``, ``horizon``,
    ``first_phase`` and ``restart_base`` (constraints in ``ANYTIME_CONSTRAINTS``).
    """

    #: ``n_models="auto"`` / ``perturbation_scale="auto"`` without restarts.
    _fixed_n_models = 10
    _fixed_perturbation_scale = 0.1

    # ---------------------------------------------------------------- schedule
    @property
    def _anytime(self):
        """Whether the paper's restarts run (``horizon="anytime"``)."""
        return isinstance(self.horizon, str)

    def _phase_settings(self, length):
        """``(n_models, perturbation_scale)`` of a phase of ``length`` rounds."""
        if self.n_models == "auto":
            m = phase_n_models(length) if self._anytime else self._fixed_n_models
        else:
            m = int(self.n_models)
        if self.perturbation_scale == "auto":
            scale = (
                phase_perturbation_scale(length)
                if self._anytime
                else self._fixed_perturbation_scale
            )
        else:
            scale = float(self.perturbation_scale)
        return m, scale

    def _phase_at(self, n_seen):
        """Index of the phase that round ``n_seen + 1`` belongs to."""
        if not self._anytime:
            return 0
        return int(np.searchsorted(self._phase_ends, n_seen, side="right"))

    def _enter_phase(self, index):
        """Full restart: a new, empty phase ``index`` (rebinds, never mutates)."""
        if self._anytime:
            ends = self._phase_ends
            start = 0 if index == 0 else int(ends[index - 1])
            length = int(ends[index]) - start
        else:  # one phase: the horizon's, or, without one, never ending
            start = 0
            length = _MAX_ROUNDS if self.horizon is None else int(self.horizon)
        self.phase_, self.phase_start_, self.phase_length_ = index, start, length
        self.n_models_, self.perturbation_scale_ = self._phase_settings(length)
        self._noise = np.random.default_rng([self._noise_seed, index])
        self._start_phase()

    # ------------------------------------------------------------------- hooks
    def _init_state(self):
        if self._anytime:
            self._phase_ends = phase_ends(
                self.first_phase, self.restart_base, _MAX_ROUNDS
            )
        # Perturbations have their own stream, so that they do not depend on how
        # many select calls came between two updates.
        self._noise_seed = int(self._rng.integers(np.iinfo(np.int64).max))
        self._enter_phase(0)

    def _update(self, X, actions, rewards, sample_weight):
        n_seen, n = self.n_samples_seen_, X.shape[0]
        phase = self._phase_at(n_seen + n)
        if phase != self.phase_:
            self._enter_phase(phase)
        first = max(0, self.phase_start_ - n_seen)  # rows of completed phases go
        if first >= n:
            return
        keep = slice(first, n)
        # A failed update draws nothing: the rollback restores the stream's state.
        perturbations = self.perturbation_scale_ * self._noise.standard_normal(
            (n - first, self.n_models_)
        )
        self._update_phase(
            X[keep],
            actions[keep],
            rewards[keep],
            None if sample_weight is None else sample_weight[keep],
            perturbations,
        )

    # ----------------------------------------------------------------- helpers
    def _phase_rounds(self, n_rows):
        """0-based index within the current phase of each of the next rounds."""
        return self.n_samples_seen_ - self.phase_start_ + np.arange(n_rows)

    def _draw_members(self, n_rows, rng):
        """The member ``j_t ~ U[m]`` that decides each round (Algorithm 1, line 4)."""
        return rng.integers(self.n_models_, size=n_rows)
