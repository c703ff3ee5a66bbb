"""One task per partition: a partition's whole chain of tasks fused into one.

A Dask array built the usual way (a read per partition, columns sliced from it,
``from_delayed`` and ``concatenate`` aliases, a model's ``map_blocks``, a
column's ``[:, None]``, then the estimate's own ``map_blocks``) has about ten
tasks per partition even after Dask's own optimisation, which fuses linear chains
only: a read whose four columns feed one partition's result is a diamond, not a
chain. Every task costs the scheduler a round (and, on a machine where the
scheduler shares the cores with the workers, those workers' time), and the
partition's work in numpy is a few tens of milliseconds: at 250,000 rows per
partition the tasks beyond the first cost as much as the work.

:func:`one_task_per_block` gives every output block the tasks that only it needs,
as one task (``dask._task_spec.Task.fuse``: the subgraph runs inside the task,
intermediates released as soon as used). Tasks that several blocks need (a model
broadcast to every partition, a whole in-memory array cut into partitions) stay
tasks of their own, computed once. The result has the same keys, chunks and
values; a task lost with a worker is recomputed from its lineage as before.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import dask
import dask.array as da
from dask._task_spec import Task, convert_legacy_graph
from dask.core import flatten, reverse_dict
from dask.delayed import Delayed
from dask.highlevelgraph import HighLevelGraph
from dask.utils import ensure_dict

__all__ = ["compute_fused", "fused", "one_task_per_block"]


def _owners(graph: dict, outputs: set) -> dict:
    """Each key's one output block, or None for a key that several blocks need.

    Walks from the outputs towards the inputs (Kahn's order on the dependents):
    a key is owned once all of its dependents are known, by their common owner.
    """
    dependencies = {key: node.dependencies for key, node in graph.items()}
    dependents = reverse_dict(dependencies)
    waiting = {key: len(dependents[key]) for key in graph}
    owner: dict = {}
    ready = [key for key, count in waiting.items() if count == 0]
    while ready:
        key = ready.pop()
        if key in outputs:
            owner[key] = key
        else:
            owned = {owner[d] for d in dependents[key]}
            owner[key] = owned.pop() if len(owned) == 1 else None
        for dep in dependencies[key]:
            if dep in waiting:
                waiting[dep] -= 1
                if waiting[dep] == 0:
                    ready.append(dep)
    return owner


def fused(graph: dict, outputs) -> dict:
    """``graph`` (task-spec nodes) with each of ``outputs`` fused with the tasks
    that only it needs (directly or through others); the other tasks kept."""
    owner = _owners(graph, set(outputs))
    groups: dict = {key: [] for key in outputs}
    out = {}
    for key, node in graph.items():
        if owner.get(key) is None:
            out[key] = node  # needed by several outputs, or downstream of them
        else:
            groups[owner[key]].append(node)
    for key, nodes in groups.items():
        out[key] = Task.fuse(*nodes, key=key) if len(nodes) > 1 else graph[key]
    return out


def _task_graph(graph, keys) -> dict:
    """A collection's graph culled to ``keys``, as a dict of task-spec nodes.

    Culled here, in one walk from the keys: ``HighLevelGraph.cull`` walks the
    needed keys once per layer, and a graph built from one read per partition has
    layers in proportion to the partitions (0.4 s for 400 partitions, 4 s for 800).
    """
    graph = convert_legacy_graph(ensure_dict(graph))
    needed, todo = {}, list(keys)
    while todo:
        key = todo.pop()
        if key not in needed and key in graph:
            needed[key] = graph[key]
            todo.extend(graph[key].dependencies)
    return needed


def one_task_per_block(array: da.Array) -> da.Array:
    """``array`` with each block's own tasks fused into one (compute it with
    ``optimize_graph=False``: its graph is final)."""
    keys = list(flatten(array.__dask_keys__()))
    graph = fused(_task_graph(array.__dask_graph__(), keys), keys)
    layer = HighLevelGraph.from_collections(array.name, graph, dependencies=())
    return da.Array(layer, array.name, array.chunks, meta=array._meta)


def compute_fused(result: Delayed, per_partition: list):
    """``result`` computed with each partition's delayed value in
    ``per_partition`` (None skipped) fused with the tasks only it needs."""
    graph = _task_graph(result.__dask_graph__(), [result.key])
    outputs = [part.key for part in per_partition if part is not None]
    final = Delayed(result.key, fused(graph, outputs))
    return dask.compute(final, optimize_graph=False)[0]
