"""Counting what a round asks of the host, on any build of torch (no GPU needed).

On a GPU a round loses its time where the host waits for the device or moves
memory: a value read into Python (``.item()``, ``bool(t)``, ``.tolist()``), an op
whose output size depends on values (``nonzero``), a copy to the host (``.cpu()``,
``.numpy()`` through skorch's ``to_numpy``), a copy from host memory
(``torch.as_tensor`` of a numpy array), and allocations (each a trip to the caching
allocator, and a ``cudaMalloc`` when the cache has none). :class:`HostTraffic`
counts them on the CPU build, where the same code runs: the Python-level calls
through a ``TorchFunctionMode`` and the aten ops through a ``TorchDispatchMode``
(every value read reaches ``aten::_local_scalar_dense``; an allocation is an op
that is neither a view nor writes into a given tensor). The tests assert the
counts the design promises (``tests/networks/test_host_traffic.py``) and
``benchmarks/speed/host_syncs.py`` prints them.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from collections import Counter

import numpy as np
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["HOST_READS", "HostTraffic", "fresh_copies"]

#: Python-level calls that read a tensor's value on the host (a sync on a GPU).
HOST_READS = frozenset(
    {"item", "__bool__", "__float__", "__int__", "__index__", "tolist", "numpy"}
)
#: Python-level copies to the host, and transfers from host memory.
TO_HOST = frozenset({"cpu"})
FROM_HOST = frozenset({"as_tensor", "tensor", "from_numpy"})
#: aten ops that make the host wait for the device.
SYNC_OPS = frozenset(
    {"_local_scalar_dense", "nonzero", "masked_select", "_unique2", "unique_dim"}
)
#: aten ops that neither allocate nor compute (aliases of their input).
_NOT_ALLOCATING = frozenset({"lift_fresh", "detach", "alias", "_to_copy_noop"})


class _Calls(TorchFunctionMode):
    def __init__(self, counts):
        super().__init__()
        self.counts = counts

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name in HOST_READS:
            self.counts["host reads"] += 1
            self.counts[f"read: {name}"] += 1
            if args and isinstance(args[0], torch.Tensor):
                self.counts["values read"] += args[0].numel()
        elif name in TO_HOST:
            self.counts["to host"] += 1
        elif name in FROM_HOST and not (args and isinstance(args[0], torch.Tensor)):
            self.counts["from host"] += 1  # a tensor already is where it is
            self.counts["bytes from host"] += np.asarray(args[0]).nbytes if args else 0
        elif name == "copy_" and len(args) > 1 and _staged_tensor(args[1]):
            # a copy into a buffer on the device from a staging buffer's memory
            self.counts["to(device)"] += 1
            self.counts["bytes to(device)"] += args[1].nbytes
            self.counts["staged to(device)"] += 1
        elif name == "to" and (
            "device" in kwargs
            or any(isinstance(a, (str, torch.device)) for a in args[1:])
        ):
            self.counts["to(device)"] += 1
            self.counts["bytes to(device)"] += args[0].nbytes
            if _staged(args[0]):
                self.counts["staged to(device)"] += 1
        return func(*args, **kwargs)


def _staged_tensor(value):
    return isinstance(value, torch.Tensor) and _staged(value)


def _staged(tensor):
    """Whether ``tensor`` is (a view of) a reusable staging buffer's memory
    (:class:`~skbandit.networks._device_buffer.HostStaging`)."""
    base = tensor if tensor._base is None else tensor._base
    return getattr(base, "is_host_staging", False)


class _Ops(TorchDispatchMode):
    def __init__(self, counts):
        super().__init__()
        self.counts = counts

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        if name in SYNC_OPS:
            self.counts["syncs"] += 1
            self.counts[f"sync: {name}"] += 1
        elif not (func.is_view or func._schema.is_mutable or name in _NOT_ALLOCATING):
            self.counts["allocations"] += 1
            self.counts[f"alloc: {name}"] += 1
        return func(*args, **kwargs)


def fresh_copies(counts):
    """Copies to the device from fresh host memory (not a staging buffer's) in
    ``counts`` (:attr:`HostTraffic.counts`): pageable copies on CUDA."""
    staged = counts.get("staged to(device)", 0)
    return counts.get("from host", 0) + counts.get("to(device)", 0) - staged


class HostTraffic:
    """Count host reads, syncs, copies and allocations inside a ``with`` block.

    Attributes
    ----------
    counts : collections.Counter
        ``"syncs"`` (aten ops that wait for the device), ``"host reads"``
        (Python-level value reads) and ``"values read"`` (their elements),
        ``"to host"``, ``"from host"`` (copies of host memory, not of tensors),
        ``"to(device)"``, the bytes of the last two (``"bytes from host"``,
        ``"bytes to(device)"``), ``"staged to(device)"`` (the copies of those
        from a reusable staging buffer; the others are from fresh host memory,
        pageable on CUDA: :func:`fresh_copies`) and ``"allocations"``, with a
        per-op breakdown under
        ``"sync: ..."``, ``"read: ..."`` and ``"alloc: ..."``.

    Examples
    --------
    >>> import torch
    >>> from skbandit.networks._host_traffic import HostTraffic
    >>> a = torch.ones(3)
    >>> with HostTraffic() as traffic:
    ...     b = a * 2  # one allocation
    ...     _ = a.add_(1)  # in place: none
    ...     value = float(b.sum())  # one more allocation, one read, one sync
    >>> traffic.counts["allocations"], traffic.counts["syncs"]
    (2, 1)
    """

    def __init__(self):
        self.counts = Counter()
        self._modes = (_Calls(self.counts), _Ops(self.counts))

    def __enter__(self):
        for mode in self._modes:
            mode.__enter__()
        return self

    def __exit__(self, *exc):
        for mode in reversed(self._modes):
            mode.__exit__(*exc)
        return False
