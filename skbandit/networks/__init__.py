"""Torch modules, their skorch wrapping, and neural tangent features.

:class:`BanditMLP`
    the neural bandit papers' bias-free ReLU network with the ``sqrt(m)`` output
    scale and the mirrored initialisation, ``f(x; theta_0) = 0``; the disjoint
    encoding of shared contexts is applied per arm block;
:class:`SquaredLoss`, :class:`LogisticLoss`
    the data term of the papers' objective (2.3), and its binary cross-entropy form;
:class:`NetworkCore`, :class:`TrainingSettings`, :class:`ReplayBuffer`
    one neural policy's network, replay buffer, schedule, training and rollback;
:class:`TangentPrecision`
    the tangent features' precision ``U`` (diagonal or full) and its inverse;
:class:`StackedBanditMLP`, :func:`ensemble_gradient_descent`
    a batch of the papers' networks in stacked weights, trained as one computation;
:func:`make_bandit_net`, :func:`initialize_net`, :func:`proximal_gradient_descent`
    the skorch net, its seeded initialisation, and the hand-driven training steps;
:func:`tangent_features`, :func:`tangent_quadratic`, :func:`tangent_square_sum`
    per-arm gradient features ``g(x; theta) / sqrt(m)`` of a batch of rounds in one
    call (closed form), and :func:`tangent_features_autograd` (``torch.func``).
"""
# SPDX-License-Identifier: BSD-3-Clause

from skbandit.networks._core import NetworkCore, ReplayBuffer, TrainingSettings
from skbandit.networks._ensemble import StackedBanditMLP, ensemble_gradient_descent
from skbandit.networks._mlp import BanditMLP, LogisticLoss, SquaredLoss
from skbandit.networks._precision import TangentPrecision
from skbandit.networks._tangent import (
    tangent_features,
    tangent_features_autograd,
    tangent_quadratic,
    tangent_square_sum,
)
from skbandit.networks._training import (
    get_flat_parameters,
    initialize_net,
    make_bandit_net,
    proximal_gradient_descent,
    set_flat_parameters,
)

__all__ = [
    "BanditMLP",
    "LogisticLoss",
    "NetworkCore",
    "ReplayBuffer",
    "SquaredLoss",
    "StackedBanditMLP",
    "TangentPrecision",
    "TrainingSettings",
    "ensemble_gradient_descent",
    "get_flat_parameters",
    "initialize_net",
    "make_bandit_net",
    "proximal_gradient_descent",
    "set_flat_parameters",
    "tangent_features",
    "tangent_features_autograd",
    "tangent_quadratic",
    "tangent_square_sum",
]
