"""A plain-torch NeuralTS, the reference of issue 10's CPU speed target.

Paper 000 (Zhang, Zhou, Li, Gu. "Neural Thompson Sampling", ICLR 2021), Algorithm 1,
at its experiments' settings, written the way a careful user would write it with
nothing but torch: no skbandit, no skorch, plain autograd for the training gradient
and ``torch.optim.SGD`` for the steps. The maths is skbandit's ``NeuralTS`` with
``covariance="diag"``, ``reduction="mean"``, ``init="ntk"``, ``warm_start=True``:

* network ``f(x) = sqrt(m) w2 . relu(W1 x)``, one hidden layer of ``m``, no biases;
  mirrored init: each hidden block ``[[W, 0], [0, W]]`` with ``W ~ N(0, 4/m)``, the
  output ``(w, -w)`` with ``w ~ N(0, 2/m)``;
* shared contexts ``x`` (d features) use the disjoint encoding (arm ``k`` sees ``x``
  in block ``k`` of a ``K d`` input), applied *per arm block*: the first-layer
  weight ``(m, K d)`` is viewed as ``(m, K, d)`` and the zero blocks of the encoded
  input are never built;
* training, after every feedback: ``J`` full-batch SGD steps (warm start) on (2.3)
  with the mean reduction over the ``n`` buffered rows::

      sum_i (f(x_i) - r_i)^2 / 2 / n  +  m alpha ||theta - theta_0||^2 / 2 / n

* diagonal ``U``: ``U_0 = alpha``; after training ``U += phi^2`` for the pulled arm,
  ``phi = g / sqrt(m)`` at the trained parameters; select samples
  ``r_k ~ N(f(x_k), nu^2 sigma_k^2)``, ``sigma_k^2 = alpha sum_j phi_kj^2 / U_j``,
  and plays the argmax.

The data term's gradient comes from autograd; the penalty's, ``m alpha (theta -
theta_0) / n``, is added to ``.grad`` by default (``penalty="autograd"``
differentiates the whole objective instead: same steps, slower).

The buffer keeps one zero-padded slab per arm, ``(K, capacity, d)``: the first layer of
a training step is one batched GEMM over the arms' slabs, and the padding rows (zero
input, zero target) add exactly nothing to the loss or its gradient, since the network
has no biases. The per-arm tangent features use the closed form of the one-hidden-layer
net by default (``features="closed"``: ``phi_W1[k] = (w2 * 1[z_k > 0]) x^T`` in arm
``k``'s block, ``phi_w2 = relu(z_k)``), or ``torch.func`` (``features="func"``: ``vmap``
of ``grad`` over the arms, the generic route, which builds the full ``p``-vectors).

Seeding follows skbandit's: ``random_state`` gives the same ``theta_0`` and the same
stream of posterior draws as ``NeuralTS(random_state=...)``, so the two can be compared
seed by seed; they are not bit-identical, since the float order differs.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math

import numpy as np
import torch
from torch.func import grad, vmap

__all__ = ["ReferenceNeuralTS"]


class ReferenceNeuralTS:
    """NeuralTS on shared contexts, one round at a time, in plain torch.

    Parameters
    ----------
    n_actions : int
        K, the number of arms.
    n_features : int
        d, the length of a shared context.
    hidden : int, default=100
        m, the hidden width (even).
    alpha : float, default=1e-3
        lambda: ``U_0``, the factor of ``sigma^2`` and the penalty strength.
    nu : float, default=1.0
        Posterior scale (sample std ``nu sigma``).
    n_steps : int, default=100
        J, full-batch SGD steps per training.
    learning_rate : float, default=1e-2
        SGD step on the mean loss.
    features : {"closed", "func"}, default="closed"
        How the per-arm tangent features are computed (see the module docstring).
    penalty : {"closed", "autograd"}, default="closed"
        How the penalty's gradient is computed (see :meth:`train`).
    random_state : int, default=0
        Seeds ``theta_0`` and the posterior draws, as skbandit does.
    """

    def __init__(
        self,
        n_actions,
        n_features,
        *,
        hidden=100,
        alpha=1e-3,
        nu=1.0,
        n_steps=100,
        learning_rate=1e-2,
        features="closed",
        penalty="closed",
        random_state=0,
    ):
        if hidden % 2 or features not in ("closed", "func"):
            raise ValueError("hidden must be even, features 'closed' or 'func'")
        if penalty not in ("closed", "autograd"):
            raise ValueError("penalty must be 'closed' or 'autograd'")
        K, d, m = n_actions, n_features, hidden
        self.K, self.d, self.m = K, d, m
        self.alpha, self.nu, self.n_steps = float(alpha), float(nu), int(n_steps)
        self.features, self.penalty = features, penalty
        self.scale = math.sqrt(m)
        # skbandit's seeding: one numpy Generator from random_state draws the torch
        # seed of theta_0, then serves the posterior draws.
        seed = np.random.RandomState(random_state).randint(np.iinfo(np.int32).max)
        self.rng = np.random.default_rng(seed)
        torch_seed = int(self.rng.integers(np.iinfo(np.int32).max))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(torch_seed)
            first = torch.nn.Linear(K * d, m, bias=False)  # (m, K d), as the paper's
            out = torch.nn.Linear(m, 1, bias=False)
            self._mirrored_init(first.weight, out.weight)
        self.W1 = first.weight  # trainable leaf, (m, K d)
        self.w2 = out.weight  # (1, m)
        self.params = [self.W1, self.w2]
        self.theta0 = [p.detach().clone() for p in self.params]
        self.optimizer = torch.optim.SGD(self.params, lr=learning_rate)
        # diag(U), laid out like the parameters
        self.U = [torch.full_like(p, self.alpha) for p in self.theta0]
        # replay buffer: one zero-padded slab of rows per arm
        self.X_buf = torch.zeros(K, 16, d)
        self.r_buf = torch.zeros(K, 16)
        self.counts = [0] * K
        self.n = 0

    @torch.no_grad()
    def _mirrored_init(self, W1, w2):
        m, K, d = self.m, self.K, self.d
        W = W1.view(m, K, d)
        W.zero_()
        for k in range(K):  # W_1 = [[W, 0], [0, W]] in every arm's block
            block = torch.randn(m // 2, d // 2) * math.sqrt(4.0 / m)
            W[: m // 2, k, : d // 2] = block
            W[m // 2 :, k, d // 2 :] = block
        w = torch.randn(m // 2) * math.sqrt(2.0 / m)
        w2.copy_(torch.cat([w, -w])[None])

    # ------------------------------------------------------------------ model
    def _blocks(self, W1):
        """The first layer per arm block, (K, d, m): arm k's block is W1[:, k, :]^T."""
        return W1.view(self.m, self.K, self.d).permute(1, 2, 0)

    def scores(self, x, W1=None, w2=None):
        """``f(x_k)`` for every arm k and the hidden pre-activations, (K,), (K, m)."""
        W1 = self.W1 if W1 is None else W1
        w2 = self.w2 if w2 is None else w2
        z = torch.einsum("d,kdm->km", x, self._blocks(W1))
        return self.scale * (torch.relu(z) @ w2[0]), z

    def _sq_features(self, x):
        """``f`` (K,) and phi^2 of every arm, per parameter: (K, m, d) and (K, m).

        Arm k's features are zero outside its first-layer block, so only the block
        is returned (the ``func`` route builds the full p-vectors and cuts it out).
        """
        if self.features == "closed":
            with torch.no_grad():
                f, z = self.scores(x)
                back = self.w2[0] * (z > 0)  # d(f / sqrt(m)) / dz, (K, m)
                return f, (back * back)[:, :, None] * (x * x), torch.relu(z) ** 2
        names = {"W1": self.W1.detach(), "w2": self.w2.detach()}

        def one(p, e):  # f of the arm that the one-hot e picks
            return self.scores(x, p["W1"], p["w2"])[0] @ e

        g = vmap(grad(one), in_dims=(None, 0))(names, torch.eye(self.K))
        with torch.no_grad():
            f = self.scores(x)[0]
            phi1 = g["W1"].view(self.K, self.m, self.K, self.d) / self.scale
            phi1 = phi1[torch.arange(self.K), :, torch.arange(self.K)]  # own block
            return f, phi1**2, (g["w2"][:, 0] / self.scale) ** 2

    # ----------------------------------------------------------------- select
    def select(self, x):
        """Sample one reward per arm from the posterior, play the argmax."""
        x = torch.as_tensor(x, dtype=torch.float32)
        f, sq1, sq2 = self._sq_features(x)
        U1 = self.U[0].view(self.m, self.K, self.d).permute(1, 0, 2)  # (K, m, d)
        q = (sq1 / U1).sum((1, 2)) + (sq2 / self.U[1][0]).sum(1)
        sigma = np.sqrt(self.alpha * np.maximum(q.double().numpy(), 0.0))
        draw = f.double().numpy() + self.nu * sigma * self.rng.standard_normal(self.K)
        return int(np.argmax(draw))

    # ----------------------------------------------------------------- update
    def update(self, x, arm, reward):
        """Store the round, train J steps on the whole buffer, then update U."""
        x = torch.as_tensor(x, dtype=torch.float32)
        self._append(x, arm, float(reward))
        self.train()
        with torch.no_grad():
            _, sq1, sq2 = self._sq_features(x)
            self.U[0].view(self.m, self.K, self.d)[:, arm, :] += sq1[arm]
            self.U[1][0] += sq2[arm]

    def _append(self, x, arm, reward):
        if self.counts[arm] == self.X_buf.shape[1]:  # grow every slab twofold
            pad = self.X_buf.shape[1]
            self.X_buf = torch.cat([self.X_buf, torch.zeros(self.K, pad, self.d)], 1)
            self.r_buf = torch.cat([self.r_buf, torch.zeros(self.K, pad)], 1)
        self.X_buf[arm, self.counts[arm]] = x
        self.r_buf[arm, self.counts[arm]] = reward
        self.counts[arm] += 1
        self.n += 1

    def objective(self, with_penalty=True):
        """Objective (2.3), mean reduction, at the current parameters."""
        rows = max(self.counts)
        X, r = self.X_buf[:, :rows], self.r_buf[:, :rows]
        # arm k's rows times arm k's block; padding rows give f = 0 = r
        f = self.scale * (torch.relu(torch.bmm(X, self._blocks(self.W1))) @ self.w2[0])
        loss = ((f - r) ** 2).sum() / 2 / self.n
        if with_penalty:
            penalty = sum(
                ((p - p0) ** 2).sum()
                for p, p0 in zip(self.params, self.theta0, strict=True)
            )
            loss = loss + self.m * self.alpha * penalty / 2 / self.n
        return loss

    def train(self):
        """J full-batch SGD steps on (2.3), warm-started, plain autograd.

        ``penalty="autograd"`` differentiates the whole objective; ``"closed"`` (the
        default) lets autograd differentiate the data term and adds the penalty's
        gradient ``m alpha (theta - theta_0) / n`` to ``.grad`` (what skbandit's own
        autograd path does for modules other than its MLP).
        """
        closed = self.penalty == "closed"
        coef = self.m * self.alpha / self.n
        for _ in range(self.n_steps):
            self.optimizer.zero_grad()
            self.objective(with_penalty=not closed).backward()
            if closed:
                with torch.no_grad():
                    for p, p0 in zip(self.params, self.theta0, strict=True):
                        p.grad.add_(p - p0, alpha=coef)
            self.optimizer.step()

    # -------------------------------------------------------------- inspection
    @property
    def theta(self):
        """The flat parameters, skbandit's order: ``W1`` (m, K d) then ``w2``."""
        return torch.cat([p.detach().reshape(-1) for p in self.params])


def run(X, y, **params):
    """Play the classification bandit ``(X, y)`` once; returns the mistakes."""
    policy = ReferenceNeuralTS(10, X.shape[1], **params)
    mistakes = 0
    for x, label in zip(X, y, strict=True):
        arm = policy.select(x)
        policy.update(x, arm, float(arm == label))
        mistakes += arm != label
    return mistakes


if __name__ == "__main__":
    import argparse
    import time

    from sklearn.datasets import load_digits
    from sklearn.preprocessing import normalize

    parser = argparse.ArgumentParser(description="reference NeuralTS on digits")
    parser.add_argument("--n-rounds", type=int, default=600)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--features", choices=["closed", "func"], default="closed")
    parser.add_argument("--penalty", choices=["closed", "autograd"], default="closed")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    X, y = load_digits(return_X_y=True)
    X = normalize(X).astype(np.float32)
    order = np.resize(
        np.random.RandomState(args.seed).permutation(len(X)), args.n_rounds
    )
    start = time.perf_counter()
    mistakes = run(
        X[order],
        y[order],
        random_state=args.seed,
        features=args.features,
        penalty=args.penalty,
    )
    took = time.perf_counter() - start
    print(f"T={args.n_rounds}: {mistakes} mistakes, {took:.1f} s")
