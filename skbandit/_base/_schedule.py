"""The training schedule of policies that stop learning or learn in bursts.

Neural Thompson Sampling's experiments (Zhang, Zhou, Li, Gu, "Neural Thompson
Sampling", ICLR 2021) stop training after 1000 rounds (``max_train_rounds``) and study
delayed training every ``train_every`` rounds. The kernel policies keep the first
``max_train_rounds`` rows; every neural policy trains through
``NetworkCore``, which applies both rules.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

__all__ = ["learnable_rows", "training_due"]


def learnable_rows(n_seen: int, n_new: int, max_train_rounds: int | None) -> int:
    """How many of ``n_new`` new rounds are learnt from under ``max_train_rounds``.

    The rounds past the limit are ignored by the model; they still count in the
    policy's ``n_samples_seen_``.
    """
    if max_train_rounds is None:
        return n_new
    return max(0, min(n_new, max_train_rounds - n_seen))


def training_due(n_seen: int, n_new: int, train_every: int) -> bool:
    """Whether ``n_new`` rounds after ``n_seen`` cross a multiple of ``train_every``."""
    return (n_seen + n_new) // train_every > n_seen // train_every
