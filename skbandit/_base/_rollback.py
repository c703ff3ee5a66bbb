"""One rollback protocol: a call that raises leaves every stateful part as it was.

A stateful part offers ``checkpoint()``, which returns an *undo*: a callable of no
argument that puts the part back as it was when ``checkpoint`` was called, and that
may be called more than once (a retried training restores the same start).
:class:`Rollback` composes the undos of one call and runs them, last first, if its
block raises. Every part follows it:

- a policy's (or any object's) attributes: :func:`checkpoint_attributes`, a shallow
  copy of ``__dict__`` and the RNG's state. Parts that update by returning new objects
  (the ridge blocks, the Newton and Gram states, a diagonal tangent precision) are
  restored by it, since the policy only rebinds them;
- a network's training state: ``NetworkCore.checkpoint`` (parameters, optimizer
  state, mini-batch RNG, replay buffer, schedule counters);
- a full tangent precision updated in place: ``TangentPrecision.checkpoint`` (a
  copy of ``U^{-1}``, one pass over it), or the undo that ``downdate_`` returns, which
  adds the rank-``K`` correction back: no ``p x p`` copy, and equal to the old matrix
  up to rounding. A write that is a call's last step needs neither (CN-UCB's single
  round downdates ``Z^{-1}`` once nothing else can fail);
- a pipeline's steps: a deep copy of each learning step's ``__dict__``
  (``checkpoint_attributes(step, deep=True)``).
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import copy

import numpy as np

__all__ = ["Rollback", "checkpoint_attributes"]


class Rollback:
    """Run the undos of a block's checkpoints, last first, if the block raises.

    A plain class, not ``contextlib.contextmanager``: it runs twice per online round,
    where the generator machinery's microseconds show.

    Parameters
    ----------
    *undos : callable
        Undos of checkpoints already taken.

    Examples
    --------
    >>> from skbandit._base._rollback import Rollback, checkpoint_attributes
    >>> class Part:
    ...     pass
    >>> part = Part()
    >>> part.value = 1
    >>> try:
    ...     with Rollback(checkpoint_attributes(part)):
    ...         part.value = 2
    ...         raise ValueError("rejected")
    ... except ValueError:
    ...     pass
    >>> part.value
    1
    """

    __slots__ = ("undos",)

    def __init__(self, *undos):
        self.undos = list(undos)

    def hold(self, part):
        """Checkpoint ``part`` now (its ``checkpoint()``); return the part."""
        self.undos.append(part.checkpoint())
        return part

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            for undo in reversed(self.undos):
                undo()
        return False


def checkpoint_attributes(obj, *, deep=False):
    """The undo of every attribute of ``obj`` (and of its generators' states).

    Parameters
    ----------
    obj : object
        The part. Shallow (the default): its attributes are rebound, never written in
        place, by whatever may fail, except the numpy Generators among them (the
        policy's ``_rng`` and the streams of its own, such as a neural policy's
        ``_data_rng``), which draws advance in place: their states are saved too
        (1 us each; a RandomState's would cost 26 us). ``deep=True`` deep-copies the
        attributes, for parts that write in place (a transformer's ``partial_fit``).

    Returns
    -------
    undo : callable
        Restores the attributes (the same objects, or copies of the deep copies).
    """
    state = copy.deepcopy(obj.__dict__) if deep else dict(obj.__dict__)
    generators = [] if deep else [
        (value, value.bit_generator.state)
        for value in state.values()
        if isinstance(value, np.random.Generator)
    ]  # fmt: skip

    def undo():
        obj.__dict__.clear()
        # a second undo must not hand out the copies the first one gave away
        obj.__dict__.update(copy.deepcopy(state) if deep else state)
        for generator, generator_state in generators:
            generator.bit_generator.state = generator_state

    return undo
