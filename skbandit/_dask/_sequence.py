"""A state carried through the partitions in order, one partition at a time.

The out-of-core path of a scikit-learn model: ``partial_fit`` on partition ``0``,
then ``1``, ... A graph of the whole chain handed to Dask at once lets the
scheduler read every partition as soon as a worker is free (nothing ties a read to
the learning), so all rows would wait in the workers' memory for the chain to reach
them. Here the client submits the chain step by step instead, one step ahead:
while partition ``k`` is learned, partition ``k + 1`` is read, and step ``k + 2``
is submitted only once step ``k`` is done. At most two partitions are held at a
time, wherever they are.

On a ``distributed`` client each step is a task that Dask places by its inputs'
bytes, so it runs on the worker that read the partition: the state (the policy,
a learner's models) travels to the rows, the rows do not travel. Without one
(Dask's threads or the synchronous scheduler), the client computes one partition
at a time and steps on it itself.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import dask

__all__ = ["in_turn"]


def _client():
    """The ``distributed.Client`` that Dask computes on now, or None."""
    try:
        from distributed import Client
    except ImportError:  # pragma: no cover - dask without distributed
        return None
    scheduler = dask.base.get_scheduler()
    owner = getattr(scheduler, "__self__", None)
    return owner if isinstance(owner, Client) else None


def _step(step, index, state, shared, *blocks):
    """One step, its errors prefixed with the partition's number."""
    try:
        return step(state, *shared, *blocks)
    except ValueError as exc:
        raise ValueError(
            f"In partition {index} (rows counted from its start): {exc}"
        ) from exc


def _done(future):
    """Wait for ``future`` where it is (nothing fetched); raise its error if any."""
    from distributed import wait

    wait(future)
    if future.status != "finished":
        future.result()  # raises the step's error (or the cancellation)


def in_turn(step, state, parts, *shared):
    """``state = step(state, *shared, *part)`` for each partition in order.

    ``parts`` are the partitions' tuples of delayed blocks (``_parts.blocks``);
    ``shared`` the step's read-only arguments (small objects). Returns
    the final state, fetched to the client; an error in a step is raised here,
    prefixed with its partition's number, and stops the chain.
    """
    client = _client()
    if client is None:
        for index, part in enumerate(parts):
            state = _step(step, index, state, shared, *dask.compute(*part))
        return state
    # The first state and the shared arguments enter the steps' graphs (small:
    # a policy, a template, a model) rather than being scattered: a step lost
    # with a killed worker is then recomputed from its lineage, back to step 0.
    current, running = state, []
    try:
        for index, part in enumerate(parts):
            task = dask.delayed(_step, pure=False)(step, index, current, shared, *part)
            current = client.compute(task)
            running.append(current)
            if len(running) > 1:  # the step before: done before the next submit
                _done(running.pop(0))
        return current.result()
    finally:
        client.cancel(running)
