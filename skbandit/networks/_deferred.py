"""Checks read back with a training's own values, in one copy.

A device training reads its objective before and after its steps and
``||theta - theta_0||^2`` once, after the steps (its divergence check). What a policy
computes right after training at the trained parameters (NeuralTS's increment of
``U``) has a check of its own, that the increment is finite: read alone, that is a
second wait for the device. :class:`AfterTraining` runs the policy's hook at the
trained parameters *before* the training's values are read, with the hook's checks
deferred (:func:`check_finite` inside :func:`deferred_checks` registers its flag
instead of reading it), so that the training reads the flags with its values.

The checks of what a policy computes *before* training (NeuralUCB's increment of
``U``, CN-UCB's Woodbury factor) are deferred as well (``NetworkCore.update`` runs
that hook inside :func:`deferred_checks`) and read with the same values, or alone in
an update that does not train.

The order of what is raised is kept: a diverged training is retried (the hook's
result and errors at the diverged parameters are dropped), and only then does a
false flag, or an error of the hook, raise.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import contextlib
import contextvars

import torch

from skbandit.exceptions import NumericalError

__all__ = ["AfterTraining", "check_finite", "deferred_checks"]

_DEFERRED = contextvars.ContextVar("skbandit_deferred_checks", default=None)


@contextlib.contextmanager
def deferred_checks():
    """Collect the ``(flag, message)`` of every :func:`check_finite` inside."""
    checks = []
    token = _DEFERRED.set(checks)
    try:
        yield checks
    finally:
        _DEFERRED.reset(token)


def check_finite(flag, message):
    """Raise ``NumericalError(message)`` unless the 0-d boolean tensor ``flag``;
    inside :func:`deferred_checks`, register it to be read later instead."""
    checks = _DEFERRED.get()
    if checks is None:
        if not bool(flag):  # read now
            raise NumericalError(message)
    else:
        checks.append((flag, message))


class AfterTraining:
    """A policy's hook run at the trained parameters, its checks read with the
    training's values.

    ``early`` are checks deferred before the training (a hook run at the
    parameters before it, NeuralUCB's increment of ``U``): read with the same
    values, or alone where no training reads.

    A training on a device calls :meth:`tensors` just before its read and
    :meth:`take` with the values read; :meth:`result` then gives the hook's result
    (raising what the hook raised, or the first false check). Where the training
    reads as it goes (the host), it never calls them and :meth:`result` runs the
    hook then.
    """

    def __init__(self, hook, buffer, early=()):
        self.hook, self.buffer, self.early = hook, buffer, list(early)
        self._ran = False

    def reset(self):
        """Forget a run at an earlier attempt's parameters (a diverged training)."""
        self._ran = False

    def tensors(self):
        """Run the hook, checks deferred; the flags to read, as float64 values."""
        self._ran, self._error, self._value = True, None, None
        with deferred_checks() as checks:
            try:
                if self.hook is not None:
                    self._value = self.hook(self.buffer)
            except Exception as exc:  # raised once the training is known sound
                self._error = exc
        self._checks, self._read = self.early + checks, None
        return [flag.reshape(()).to(torch.float64) for flag, _ in self._checks]

    def take(self, values):
        """The flags' values, read with the training's."""
        self._read = values

    def result(self):
        """The hook's result at the trained parameters."""
        if not self._ran:  # the early checks read now, then the hook run
            for flag, message in self.early:
                check_finite(flag, message)
            return None if self.hook is None else self.hook(self.buffer)
        early = self._read[: len(self.early)]
        for (_, message), value in zip(self.early, early, strict=True):
            if not value:  # before's failure comes first, as it did
                raise NumericalError(message)
        if self._error is not None:
            raise self._error
        for (_, message), value in zip(self._checks, self._read, strict=True):
            if not value:
                raise NumericalError(message)
        return self._value
