"""The snapshot that makes a failed call leave a policy exactly as it was."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

__all__ = ["_Snapshot"]


class _Snapshot:
    """A plain class, not ``contextlib.contextmanager``: it runs twice per online
    round, where the generator machinery's microseconds show."""

    __slots__ = ("policy", "state", "rng", "rng_state")

    def __init__(self, policy):
        self.policy = policy

    def __enter__(self):
        self.state = dict(self.policy.__dict__)
        self.rng = self.state.get("_rng")
        self.rng_state = self.rng.bit_generator.state if self.rng is not None else None

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.policy.__dict__.clear()
            self.policy.__dict__.update(self.state)
            if self.rng is not None:
                self.rng.bit_generator.state = self.rng_state
        return False
