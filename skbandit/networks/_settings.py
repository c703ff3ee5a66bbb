"""The settings one training of a :class:`~skbandit.networks._core.NetworkCore`
reads from its policy, and the check of a policy's device."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["TrainingSettings", "check_device"]


@dataclass(frozen=True)
class TrainingSettings:
    """The policy parameters one update trains with.

    They are read from the policy at every update, so that ``set_params`` on a fitted
    policy takes effect at its next training.

    Parameters
    ----------
    alpha : float
        Strength of the proximal penalty.
    learning_rate : float
        SGD step.
    n_steps : int
        Gradient steps per training.
    batch_size : int or None
        Rows per step; ``None`` is full batch.
    reduction : {"mean", "sum"}
        Whether the objective is divided by the total row weight.
    warm_start : bool
        Train from the current parameters, or restart from ``theta_0``.
    train_every : int
        Train when the rounds seen cross a multiple of this.
    max_train_rounds : int or None
        Learn from no round past this one.
    max_buffer_size : int or None
        Keep only the latest rows.
    penalty_center : {"init", "zero"}, default="init"
        Centre of the penalty ``scale^2 alpha ||theta - c||^2 / 2``: ``theta_0``
        (the theory's proximal term) or the origin (weight decay, the practical
        ``lambda ||theta||^2`` of the neural logistic bandits' experiments).

    Examples
    --------
    >>> from skbandit.networks._core import TrainingSettings
    >>> TrainingSettings(1.0, 1e-2, 100, None, "mean", True, 1, None, None).n_steps
    100
    """

    alpha: float
    learning_rate: float
    n_steps: int
    batch_size: int | None
    reduction: str
    warm_start: bool
    train_every: int
    max_train_rounds: int | None
    max_buffer_size: int | None
    penalty_center: str = "init"


def check_device(device, *, cpu_fallback=False):
    """The ``torch.device`` of a policy's ``device``, or a ValueError saying what to do.

    Parameters
    ----------
    device : str or torch.device
        The policy's ``device``.
    cpu_fallback : bool, default=False
        Map CUDA to the CPU on a machine without it (a GPU-fitted pickle loaded on a
        CPU server) instead of raising.

    Returns
    -------
    device : torch.device
        The device to compute on.
    """
    try:
        wanted = torch.device(device)
    except RuntimeError:
        hint = " (a GPU is 'cuda' in torch)" if str(device).startswith("gpu") else ""
        raise ValueError(
            f"device={device!r} is not a torch device{hint}; use 'cpu', 'cuda', "
            "'cuda:0' (an NVIDIA GPU) or 'mps' (Apple silicon)."
        ) from None
    if wanted.type == "cuda" and not torch.cuda.is_available():
        if cpu_fallback:
            return torch.device("cpu")
        raise ValueError(
            f"device={device!r}, but torch sees no CUDA device here "
            f"(torch {torch.__version__}, built for CUDA: "
            f"{torch.version.cuda or 'no'}). Use device='cpu', or install a CUDA "
            "build of torch on a machine with an NVIDIA GPU."
        )
    return wanted
