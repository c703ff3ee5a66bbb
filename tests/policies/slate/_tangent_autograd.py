"""The tangent features of a policy's network by autograd in float64: the independent
derivation the combinatorial neural tests build ``Z`` from."""
# SPDX-License-Identifier: BSD-3-Clause

import copy

import torch


def phi64(module, X):
    """``g(x; theta) / sqrt(m)`` of every arm of one round, by autograd in float64."""
    net = copy.deepcopy(module).double()
    params = list(net.parameters())
    rows = []
    for x in torch.as_tensor(X, dtype=torch.float64):
        f = net(x[None, None])[0, 0]
        grads = torch.autograd.grad(f, params)
        rows.append(torch.cat([g.reshape(-1) for g in grads]) / module.scale)
    return torch.stack(rows).numpy()  # (N, p)
