"""The replay buffer's rows kept on the network's device, each row sent there once.

The host :class:`~skbandit.networks._buffer.ReplayBuffer` stays the policy's state
(immutable, pickled, rolled back). A device training used to copy the whole buffer
to the device at every training; :class:`DeviceReplay` keeps a copy of its rows
there instead, in order, and at a training sends only the rows added since the last
one, through one reusable host buffer (:class:`HostStaging`, pinned memory where
CUDA is) in one copy. The rows on the device are the host rows' very values, so a
training computes what it computed from a fresh copy.

A view of the device rows never changes: rows are written past the last row any
view has (:attr:`_Storage.written`), and a buffer longer than the storage, or
one that branches off an older view (a rolled-back update followed by another),
moves to new storage, the kept rows copied on the device.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
import torch

__all__ = ["DeviceReplay", "HostStaging"]

#: Bytes of the first staging buffer (it doubles when a training sends more).
_FIRST_STAGING_BYTES = 1 << 16
#: Alignment of each array in the staging buffer (any dtype's item size divides it).
_ALIGN = 8
#: Copies in flight past which the ones that have left are forgotten.
_MAX_IN_FLIGHT = 64
#: The torch dtype of each numpy dtype a buffer holds.
_TORCH_DTYPES = {
    np.dtype(d): t
    for d, t in [
        (np.float32, torch.float32),
        (np.float64, torch.float64),
        (np.int64, torch.int64),
        (np.int32, torch.int32),
        (np.bool_, torch.bool),
    ]
}


class HostStaging:
    """One host buffer, allocated once and reused, through which arrays go to a
    device in one copy: pinned (page-locked) memory where the device is CUDA, so
    that the copy is asynchronous and needs no pageable bounce.

    The buffer is a ring: each call writes past the last one and only the region
    it overwrites must have left (a CUDA event per copy), so that calls in quick
    succession (a mini-batch index per step) do not wait for the device. A copy
    or a pickle starts empty.
    """

    def __init__(self):
        self._host = self._view = None
        self._pinned, self._cursor = False, 0
        self._in_flight = []  # (start, stop, event) of copies that may not have left

    def __deepcopy__(self, memo):
        # a deep copy of the numpy view would no longer alias its tensor
        return HostStaging()

    def __reduce__(self):
        return HostStaging, ()

    @staticmethod
    def holds(arrays):
        """Whether every array is of a dtype the staging sends."""
        return all(np.asarray(a).dtype in _TORCH_DTYPES for a in arrays)

    def to_device(self, arrays, device):
        """Tensors on ``device`` with the values of the numpy ``arrays``.

        On a device they are views of one copy of the staging buffer; on the CPU
        views of the staging buffer itself, valid until the ring comes round.
        """
        arrays = [np.ascontiguousarray(a) for a in arrays]
        offsets, total = [], 0
        for a in arrays:
            offsets.append(total)
            total += -(-a.nbytes // _ALIGN) * _ALIGN
        total = max(total, _ALIGN)
        start = self._reserve(total, device)
        for a, offset in zip(arrays, offsets, strict=True):
            at = start + offset
            self._view[at : at + a.nbytes] = a.reshape(-1).view(np.uint8)
        moved = self._host[start : start + total].to(device, non_blocking=True)
        if device.type == "cuda":  # the region is written again once this has left
            event = torch.cuda.Event()
            event.record()
            self._in_flight.append((start, start + total, event))
        self._cursor = start + total
        return [
            moved[offset : offset + a.nbytes].view(_TORCH_DTYPES[a.dtype]).view(a.shape)
            for a, offset in zip(arrays, offsets, strict=True)
        ]

    def _reserve(self, n_bytes, device):
        """The offset of ``n_bytes`` free to write (their last copy has left)."""
        pinned = device.type == "cuda"
        if self._host is None or self._host.numel() < n_bytes or pinned != self._pinned:
            # (torch's pinned allocator keeps a dropped buffer until its copies left)
            size = max(n_bytes, 2 * (0 if self._host is None else self._host.numel()))
            size = max(size, _FIRST_STAGING_BYTES)
            self._host = torch.empty(size, dtype=torch.uint8, pin_memory=pinned)
            self._host.is_host_staging = True  # told apart by the traffic counter
            self._view, self._pinned = self._host.numpy(), pinned
            self._cursor, self._in_flight = 0, []
        start = self._cursor
        if start + n_bytes > self._host.numel():
            start = 0  # round the ring
        stop, kept = start + n_bytes, []
        for a, b, event in self._in_flight:
            if a < stop and start < b:
                event.synchronize()  # the copy has long left, as a rule
            elif len(self._in_flight) <= _MAX_IN_FLIGHT or not event.query():
                kept.append((a, b, event))
        self._in_flight = kept
        return start


class _Storage:
    """Device tensors with room for ``capacity`` rows; rows below ``written`` are
    some view's."""

    def __init__(self, like, capacity):
        self.fields = [
            torch.empty((capacity, *t.shape[1:]), dtype=t.dtype, device=t.device)
            for t in like
        ]
        self.written = 0


class _DeviceRows:
    """Rows ``start:stop`` of a storage: one buffer's rows, in order."""

    def __init__(self, storage, start, stop):
        self.storage, self.start, self.stop = storage, start, stop

    def __len__(self):
        return self.stop - self.start

    @property
    def device(self):
        return self.storage.fields[0].device

    def fields(self):
        return [t[self.start : self.stop] for t in self.storage.fields]

    def fits(self, new):
        """Whether rows shaped as ``new`` (device tensors) can follow these."""
        return all(
            t.dtype == n.dtype and t.shape[1:] == n.shape[1:]
            for t, n in zip(self.storage.fields, new, strict=True)
        )

    def extended(self, new, max_size):
        """These rows and ``new`` (device tensors), the last ``max_size`` kept."""
        k = new[0].shape[0]
        keep = len(self) + k if max_size is None else min(len(self) + k, max_size)
        if k >= keep:  # the new rows alone fill the buffer
            return _DeviceRows.holding([n[k - keep :] for n in new])
        old = keep - k  # rows kept from these
        storage, stop = self.storage, self.stop
        capacity = storage.fields[0].shape[0]
        if stop != storage.written or stop + k > capacity:
            storage = _Storage(new, max(2 * keep, 64))  # amortised: a copy per keep
            for t, s in zip(storage.fields, self.storage.fields, strict=True):
                t[:old].copy_(s[self.stop - old : self.stop])
            stop = old
        for t, n in zip(storage.fields, new, strict=True):
            t[stop : stop + k].copy_(n)
        storage.written = stop + k
        return _DeviceRows(storage, stop + k - keep, stop + k)

    @classmethod
    def holding(cls, fields):
        """Rows with the values of ``fields`` (device tensors), in new storage."""
        storage = _Storage(fields, max(2 * fields[0].shape[0], 64))
        n = fields[0].shape[0]
        for t, f in zip(storage.fields, fields, strict=True):
            t[:n].copy_(f)
        storage.written = n
        return cls(storage, 0, n)


class DeviceReplay:
    """A replay buffer's rows on a device, grown by the rows each update adds.

    :meth:`grown` records an update's new rows (host arrays, not sent);
    :meth:`rows` returns the device rows of a buffer, sending what it lacks. The
    state (:meth:`state`, :meth:`restore`) is saved and restored with the core's.
    """

    def __init__(self):
        self._rows = None  # _DeviceRows of the buffer self._sent_to
        self._sent_to = None  # the host buffer the device rows hold
        self._pending = []  # rows added since, as host arrays
        self._tip = None  # the host buffer _sent_to and _pending make
        self.staging = HostStaging()

    def __deepcopy__(self, memo):
        # A copy starts empty: its first training sends the whole buffer.
        return DeviceReplay()

    def state(self):
        return self._rows, self._sent_to, list(self._pending), self._tip

    def restore(self, state):
        self._rows, self._sent_to, pending, self._tip = state
        self._pending = list(pending)

    def grown(self, old, new, n_new):
        """Record that buffer ``new`` is ``old`` and its last ``n_new`` rows."""
        n_new = min(n_new, len(new))
        pending = sum(len(p[0]) for p in self._pending) + n_new
        if self._tip is old and pending <= len(new):
            # copies of the few new rows (views would keep every old buffer alive)
            self._pending.append([np.array(f) for f in new.tail(n_new)._fields()])
            self._tip = new
        else:  # another history: rebuilt from the buffer at the next training
            self._rows = self._sent_to = self._tip = None
            self._pending = []

    def rows(self, buffer, device, max_size):
        """``(X, actions, targets, weights)`` of ``buffer`` as tensors on ``device``
        (None for a buffer of a dtype torch does not hold)."""
        if any(f.dtype not in _TORCH_DTYPES for f in buffer._fields()):
            return None
        rows = self._rows
        if rows is None or rows.device != device or self._tip is not buffer:
            fields = self.staging.to_device(buffer._fields(), device)
            rows = _DeviceRows.holding(fields)
        elif self._pending:
            rows = self._extended(rows, device, max_size)
            if rows is None or len(rows) != len(buffer):  # not this buffer's rows
                rows = _DeviceRows.holding(
                    self.staging.to_device(buffer._fields(), device)
                )
        self._rows, self._sent_to, self._pending, self._tip = rows, buffer, [], buffer
        return rows.fields()

    def _extended(self, rows, device, max_size):
        """``rows`` and the pending ones, sent in one copy; None where they differ
        in kind (a first 2-D target after 1-D ones)."""
        try:
            parts = [np.concatenate(p) for p in zip(*self._pending, strict=True)]
        except ValueError:
            return None
        if any(p.dtype not in _TORCH_DTYPES for p in parts):
            return None
        new = self.staging.to_device(parts, device)
        return rows.extended(new, max_size) if rows.fits(new) else None
