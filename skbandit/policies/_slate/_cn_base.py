"""What CN-UCB and CN-TS share: a slate policy on the neural core, Z updated per round.

Hwang, Chai and Oh, "Combinatorial Neural Bandits" (ICML 2023, arXiv:2306.00242),
Algorithms 1 and 2 (their printed boxes number no lines: the steps are named). One
network ``f(x; theta)`` scores every arm from its own context;
the oracle turns the optimistic scores into a slate of ``K`` arms; the score of every
chosen arm is observed (semi-bandit feedback). After each round, in this order:

* the ``Z`` update of both algorithms: ``Z += sum_{i in S_t} g(x_i; theta_{t-1})
  g(x_i; theta_{t-1})^T / m`` -- the gradients of *all* ``K`` chosen arms at the
  parameters the slate was chosen with, one rank-``K`` update of
  :class:`~skbandit.networks.TangentPrecision` (full by default, as the paper and the
  authors' code keep it);
* the network update: ``theta_t`` minimises eq. (4), ``sum (f(x; theta) - v)^2 / 2 +
  m lambda ||theta - theta_0||^2 / 2`` over the observed (arm, score) pairs, by
  gradient descent (the core: one buffer row per observed score, so a round adds
  ``K`` rows).

Under the online standardisation of the contexts (``standardize``, on by default),
``select`` reads a round scaled by the moments of the rows learned before it, and the
replay buffer keeps the round scaled prequentially, by moments that include it.
``Z`` gains the gradients of the round *as select scaled it*: the algorithms use one
``g(x_{t,i}; theta_{t-1})`` for the width a slate was chosen with and for the ``Z``
it updates (their elliptical-potential argument, Lemma 2, sums exactly those widths),
and ``select``'s products ``phi Z^{-1}`` then serve the update, which needs no pass of
its own over ``Z^{-1}``. The rows come from the standardisation itself (the moments
before each round are known in ``partial_fit``), so a round learned without a
``select`` before it, in a batch or in chunks, gains the same ``Z``. Contexts read as
given (``standardize=False``) are the same rows both ways.

A batch of ``n`` rounds in one ``partial_fit`` is processed round by round, so it
equals ``n`` single-round calls. With a full ``Z`` the rank-``K`` update is applied in
place (copying ``Z^{-1}``, 525 MB at ``p`` = 8,100, would cost as much as the round),
once the round's training has succeeded. A one-round call that fails has not touched
it; a batch of several rounds copies ``Z^{-1}`` once, so that a failing later round
restores it bit for bit (in-place undoing would leave rounding errors).
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import dataclasses
from types import MappingProxyType

import numpy as np
import torch
from skorch.utils import to_numpy

from skbandit._base._rollback import Rollback
from skbandit.networks import TangentPrecision, tangent_features
from skbandit.networks._threads import serial_below
from skbandit.policies._core._neural_params import TEXTS
from skbandit.policies._core._neural_policy import NeuralPolicy

__all__ = ["CN_TEXTS", "CombinatorialNeuralPolicy"]

#: Contexts per chunk of the quadratic forms (bounds the ``(rows, p)`` products).
_ROUNDS_PER_CHUNK = 32

#: Parameter texts of the combinatorial policies (defaults differ from the other
#: neural policies', or the parameter is theirs alone).
CN_TEXTS = {
    **TEXTS,
    "slate_size": """
        slate_size : int, default=4
            ``K``, the arms per slate. The experiments: 4 of ``N = 20``.""",
    "oracle": """
        oracle : "topk" or callable, default="topk"
            Turns the optimistic scores into a slate (see :mod:`skbandit.oracles`):
            ``"topk"``, the exact oracle of the sum of scores, or any callable
            ``oracle(scores, slate_size, rng) -> slates`` (an alpha-approximation
            oracle, the paper's Remark 2).""",
    "beta": """
        beta : float, default=1.0
            The width multiplier gamma of the upper confidence bound (the paper's
            experiments: 1). ``beta=0`` is greedy.""",
    "covariance": """
        covariance : {"full", "diag"}, default="full"
            ``"full"``: the exact ``Z^{-1}`` (``p x p`` float64), as Algorithms 1-2
            and the authors' code keep it; ``"diag"``: the inverse of ``Z``'s
            diagonal (an approximation, much cheaper for large ``p``).""",
    "init": """
        init : {"ntk", "default", "uniform"}, default="default"
            ``"default"``: PyTorch's ``nn.Linear`` layers (the experiments ran
            PyTorch's initialisation; ``"uniform"`` is their network exactly, the
            same without biases); ``phi = g``. ``"ntk"``: the theory's network
            (no biases, ``sqrt(m)`` output scale), which needs mirrored inputs for
            ``f(x; theta_0) = 0`` (``mirror_inputs=True``); fed the features as
            they are, it learns a linear top-K problem several times slower (on 10
            arms, 5 standard-scaled features, ``K = 2``, 300 rounds: regret 55
            against 16 for ``"default"`` and 340 for random slates).""",
    "mirror_inputs": """
        mirror_inputs : bool or "auto", default=False
            Feed the network ``[x; x] / sqrt(2)`` instead of each arm's ``x``;
            ``"auto"`` mirrors under ``init="ntk"`` with the papers' network. Off:
            the combinatorial paper's experiments feed the features as they are.""",
    "anchor_penalty": """
        anchor_penalty : bool, default=True
            Train on eq. (4) with its penalty ``m alpha ||theta - theta_0||^2 / 2``
            centred at the initialisation. ``False`` drops it: the authors' code
            computes it in numpy, a constant without gradient, so its networks
            trained unregularised.""",
    "learning_rate": """
        learning_rate : float, default=0.3
            The gradient-descent step eta (on the objective as ``reduction`` sets
            it). The experiments: 0.01 on the summed loss, with PyTorch's
            initialisation: on the mean loss over a few hundred rows, 0.01 is a
            step hundreds of times smaller, and the network barely learns a
            nonlinear score (on ``cos(pi a^T x)`` with 20 arms of 10 features,
            T = 500: CN-UCB's regret 552 at 0.01, 84 at 0.3, random slates 765;
            the width, the network and the exploration scale each left it above
            270). ``PAPER_SCHEDULE`` restores 0.01.""",
    "reduction": """
        reduction : {"mean", "sum"}, default="mean"
            ``"sum"`` is eq. (4) as printed; ``"mean"`` divides it by the number of
            buffered rows (same minimiser; stable for the ``sqrt(m)``-scaled
            network at ``learning_rate=1e-2``).""",
    "train_every": """
        train_every : int, default=10
            Train when the rounds seen cross a multiple of this. The algorithms
            train every round (``train_every=1``, ten times the cost for the same
            regret on a linear top-K problem); the experiments every 10 rounds
            (``train_every=10``, ``n_steps=100``, ``max_buffer_size=400``: the last
            100 rounds of ``K = 4`` scores). ``Z`` is updated every round either
            way. With ``batch_size`` and ``max_buffer_size``, the defaults keep a
            round's training cost flat as the history grows; the class attribute
            ``PAPER_SCHEDULE`` trains on the whole history in full batches, as
            eq. (4) reads (``CNUCB(**CNUCB.PAPER_SCHEDULE)``).""",
    "max_buffer_size": """
        max_buffer_size : int or None, default=1000
            Keep only the most recent observed scores (rows; a round adds one per
            chosen arm). ``None`` keeps the whole history, as eq. (4) does; the
            experiments' window of 100 rounds is ``100 * slate_size``.""",
}


class CombinatorialNeuralPolicy(NeuralPolicy):
    """The network, ``Z`` and the per-round update of CN-UCB and CN-TS."""

    _serial_small_work = False  # serial_below per step, in _update

    _covariance_before_training = True
    #: Eq. (4) over the whole history in full batches, every 10 rounds, at the
    #: experiments' step (the defaults before issue 33).
    PAPER_SCHEDULE = MappingProxyType(
        {
            "train_every": 10,
            "n_steps": 100,
            "batch_size": None,
            "max_buffer_size": None,
            "learning_rate": 0.01,
        }
    )

    def _initial_precision(self, kind):
        # float64 forms against Z^{-1} itself, updated in place (see _update_round).
        return TangentPrecision(self.n_parameters_, float(self.alpha), kind, exact=True)

    def _training_settings(self):
        settings = super()._training_settings()
        if not self.anchor_penalty:  # the authors' code: no penalty gradient
            settings = dataclasses.replace(settings, alpha=0.0)
        return settings

    #: ``Z`` gains the gradients of each round's rows as ``select`` scaled them
    #: (``skbandit.utils._standardize``; the module docstring says why).
    _keeps_rows_as_selected = True

    # --------------------------------------------------------------- learning
    def _update(self, X, actions, rewards, sample_weight):
        # The rows as select read them (the learning rows X when read as given).
        selected = self.__dict__.pop("_rows_as_selected", None)
        if selected is not None:
            selected = self._transform_contexts(selected, reset=False)
        settings = self._training_settings()
        seen = self.n_samples_seen_
        n = self._core.learnable_rounds(seen, X.shape[0], settings)
        # Z^{-1} is updated in place, the last step of a round (nothing fails past
        # it): a single round that fails has not touched it, and a batch holds a
        # copy (one pass over Z^{-1} per call) to restore it bit for bit. A
        # diagonal Z is rebound, which the policy's own snapshot undoes.
        with Rollback() as rollback:
            rollback.hold(self._core)
            if n > 1:
                rollback.hold(self._precision)
            for t in range(n):
                w = None if sample_weight is None else sample_weight[t]
                rows = X[t : t + 1]
                self._update_round(
                    (rows, rows if selected is None else selected[t : t + 1]),
                    actions[t], rewards[t], w, seen + t, settings,
                )  # fmt: skip

    def _update_round(self, contexts, arms, scores, weights, n_seen, settings):
        """One round's ``Z`` and network updates (Algorithms 1 and 2).

        ``contexts`` are the round's rows as learned (the buffer's) and as
        ``select`` read them (``Z``'s); ``arms``, ``scores`` and ``weights`` (or
        None) are its ``K`` slots; a slot with a NaN score was not observed and
        adds nothing.
        """
        x, x_selected = contexts
        observed = ~np.isnan(scores)
        arms, scores = arms[observed], scores[observed]
        k = arms.size
        w = np.ones(k) if weights is None else np.asarray(weights)[observed]
        rows = (
            self._chosen_features(np.repeat(x, k, axis=0), arms),
            arms,
            scores.astype(np.float32),
            w.astype(np.float32),
        )
        before = None
        if np.any(w > 0):
            # Z gains the chosen arms' gradients at theta_{t-1}, before training.
            before = lambda: self._z_increment(x_selected, arms, w)  # noqa: E731
        # The Woodbury factor and training on a window of a few hundred rows are
        # small work, run on one thread (see skbandit/networks/_threads.py).
        window = len(self._core.buffer) + k
        if settings.max_buffer_size is not None:
            window = min(window, settings.max_buffer_size)
        with serial_below(window * self.n_parameters_):
            increment, _, trained = self._core.update(
                rows, n_seen=n_seen, n_rounds=1, settings=settings, before=before
            )
        if trained and self.verbose:
            print(
                f"[{type(self).__name__}] round {n_seen + 1}: objective "
                f"{self._core.last_objective:.6g} on {len(self._core.buffer)} rows"
            )
        if increment is None:
            return
        if self._precision.kind == "full":  # nothing can fail past this point
            self._precision.downdate_(increment)
        else:
            self._precision = increment

    def _z_increment(self, x, arms, w):
        """The rank-``k`` update of ``Z`` by the chosen arms, not yet applied.

        For a full ``Z``: the Woodbury factor (``B`` of the new ``Z^{-1} = Z^{-1} -
        B B^T``). The features are computed for the whole round, as ``select`` did,
        so that the products ``phi Z^{-1}`` it kept are reused (bit for bit the same
        rows at the same ``theta``). For a diagonal ``Z``: the updated object.
        """
        full = self._precision.kind == "full"
        # the round's contexts and arms (and weights) in one copy
        extra = () if full else (w.astype(np.float32),)
        module = self.net_.module_
        xt, arms_t, *weights = self._tensors(x, arms, *extra)
        if full:
            # On the device the network computes on: no copy of the features.
            _, phi = tangent_features(module, xt)
            Phi = phi[0, arms_t].to(torch.float64)
            return self._precision.woodbury_factor(Phi, w)
        rows = xt.expand(arms.size, *xt.shape[1:])
        return self._precision.updated(module, rows, arms_t, weights[0])

    # --------------------------------------------------------------- deciding
    def _mean_and_width(self, X, with_width=True):
        """``f(x; theta)`` and ``||g(x; theta) / sqrt(m)||_{Z^{-1}}`` of every arm.

        Each ``(n, N)`` (the width ``None`` without ``with_width``); the ``N``
        quadratic forms of a round are one GEMM against ``Z^{-1}`` (chunks of
        rounds bound the memory of a long batch).
        """
        module = self.net_.module_
        if not with_width:
            with torch.no_grad():
                (Xt,) = self._tensors(X)
                return to_numpy(module(Xt)).astype(np.float64), None
        chunks = []
        for start in range(0, X.shape[0], _ROUNDS_PER_CHUNK):
            (Xt,) = self._tensors(X[start : start + _ROUNDS_PER_CHUNK])
            with torch.no_grad():
                f, q = self._precision.quadratic(module, Xt)
                # the means and widths of the chunk in one copy to the host
                width = q.to(torch.float64).clamp_(min=0.0).sqrt_()
                chunks.append(to_numpy(torch.stack([f.to(torch.float64), width])))
        both = np.concatenate(chunks, axis=1)
        return both[0], both[1]

    @classmethod
    def _get_test_params(cls):
        return [
            {
                "n_actions": 3,
                "slate_size": 2,
                "hidden_layer_sizes": (6,),
                "n_steps": 3,
                "learning_rate": 1e-6,  # sklearn checks feed X ~ N(100, 1)
                "standardize": False,  # checks shuffle rows (estimator_check_params)
                "random_state": 0,
            },
            {
                "slate_size": 1,
                "hidden_layer_sizes": (4,),
                "n_steps": 2,
                "learning_rate": 1e-6,
                "covariance": "diag",
                "train_every": 2,
                "standardize": False,
                "random_state": 1,
            },
        ]
