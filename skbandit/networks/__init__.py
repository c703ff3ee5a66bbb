"""The networks a neural policy plugs in: the torch module, the losses, the skorch
wrapping, and the neural tangent features.

:class:`BanditMLP`
    the neural bandit papers' bias-free ReLU network with the ``sqrt(m)`` output
    scale and the mirrored initialisation, ``f(x; theta_0) = 0``; the disjoint
    encoding of shared contexts is applied per arm block;
:class:`SquaredLoss`, :class:`LogisticLoss`
    the data term of the papers' objective (2.3), and its binary cross-entropy form;
:func:`make_bandit_net`, :func:`initialize_net`
    the skorch net around a :class:`BanditMLP`, and its seeded initialisation;
:func:`tangent_features`, :func:`tangent_quadratic`, :func:`tangent_square_sum`
    per-arm gradient features ``g(x; theta) / sqrt(m)`` of a batch of rounds in one
    call (closed form), and :func:`tangent_features_autograd` (``torch.func``);
:class:`TangentPrecision`
    the tangent features' precision ``U`` (diagonal or full) and its inverse.

The training engine (the network core with its replay buffer and schedule, the
stacked ensembles, the hand-driven gradient descent, the flat-parameter helpers) is
private: the policies drive it through their parameters.
"""
# SPDX-License-Identifier: BSD-3-Clause

from skbandit.networks._mlp import BanditMLP, LogisticLoss, SquaredLoss
from skbandit.networks._precision import TangentPrecision
from skbandit.networks._tangent import (
    tangent_features,
    tangent_features_autograd,
    tangent_quadratic,
    tangent_square_sum,
)
from skbandit.networks._training import initialize_net, make_bandit_net

__all__ = [
    "BanditMLP",
    "LogisticLoss",
    "SquaredLoss",
    "TangentPrecision",
    "initialize_net",
    "make_bandit_net",
    "tangent_features",
    "tangent_features_autograd",
    "tangent_quadratic",
    "tangent_square_sum",
]
