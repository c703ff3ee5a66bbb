"""The skorch wrapping and the proximal gradient-descent loop of the neural policies.

skorch owns configuration, the device, the module, the optimizer and persistence
(``net_``). The inner steps are driven here, straight over ``net_.module_`` and
``net_.optimizer_``: skorch's per-epoch machinery (callbacks, history, data loaders)
costs milliseconds per call, more than a whole round of the papers' training at
``J = 100`` steps (PERFORMANCE.md).

The objective is paper 000's (2.3), centred at the initialisation::

    sum_i w_i (f(x_i; theta) - r_i)^2 / 2  +  s alpha ||theta - theta_0||^2 / 2

with ``s = scale^2`` (``m`` for the papers' network), or the same divided by the number
of buffered rows (``reduction="mean"``; same minimiser, see the note's pitfall 14).
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import contextlib
import inspect

import torch
from sklearn.base import clone
from skorch import NeuralNetRegressor

from skbandit.exceptions import NumericalError, _diverged, _divergence_hint
from skbandit.networks import _jstep
from skbandit.networks._descent import HandGradientSGD, TensorMemo
from skbandit.networks._ensemble import StackedBanditMLP
from skbandit.networks._mlp import BanditMLP, LogisticLoss, SquaredLoss
from skbandit.networks._rows import TrainingRows, forward_packed, step_batches

__all__ = [
    "get_flat_parameters",
    "initialize_net",
    "make_bandit_net",
    "proximal_gradient_descent",
    "set_flat_parameters",
]


def make_bandit_net(
    n_features,
    n_actions,
    *,
    hidden_layer_sizes=(100,),
    init="ntk",
    disjoint=False,
    learning_rate=1e-3,
    n_steps=100,
    batch_size=None,
    reduction="mean",
    loss="squared",
    device="cpu",
    verbose=0,
    module=None,
    net=None,
    n_members=None,
    shared_init=False,
):
    """An unfitted skorch net holding :class:`BanditMLP`, plain SGD and the loss.

    ``module`` swaps in another torch module, ``net`` a whole skorch net (its module
    and optimizer); either way the loss is :class:`SquaredLoss` (or
    :class:`LogisticLoss`) and the step size, device and verbosity are the arguments
    given here. The gradient steps are driven by the policy over the replay buffer,
    not by ``net.fit``: a custom net's callbacks, epochs, batch size, data loaders,
    dataset, validation split and criterion would never run, so setting any of them
    raises a ``ValueError`` that names the policy parameter to use instead.

    Parameters
    ----------
    n_features, n_actions : int
        Passed to the module.
    hidden_layer_sizes : tuple of int, default=(100,)
        Hidden widths.
    init : {"ntk", "default", "uniform"}, default="ntk"
        Parameterisation, see :class:`BanditMLP`.
    disjoint : bool, default=False
        Block-wise disjoint encoding of shared contexts.
    learning_rate : float, default=1e-3
        SGD step size.
    n_steps : int, default=100
        Recorded as ``max_epochs`` (the skorch analogue), for inspection only.
    batch_size : int or None, default=None
        ``None`` is full batch (skorch's ``-1``).
    reduction : {"mean", "sum"}, default="mean"
        Loss reduction.
    loss : {"squared", "logistic"}, default="squared"
        The data term: :class:`SquaredLoss` or :class:`LogisticLoss`.
    device : str, default="cpu"
        Torch device.
    verbose : int, default=0
        The skorch verbosity.
    module : torch.nn.Module class or instance, default=None
        A network of your own instead of :class:`BanditMLP`. Contract:
        ``module(X)`` returns the scores of every arm, shape ``(n, K)``, for shared
        contexts ``(n, d)`` or per-arm contexts ``(n, K, d)``. A class is
        instantiated with whichever of ``n_features`` and ``n_actions`` its
        ``__init__`` accepts; an instance is copied, never trained in place. An
        attribute ``scale`` (default 1) sets the tangent features' divisor and the
        penalty weight ``scale^2 alpha``, as ``sqrt(m)`` does for the papers' network.
    net : skorch.NeuralNet, default=None
        An unfitted skorch net whose module (same contract) and optimizer are used,
        with their ``module__*`` and ``optimizer__*`` settings; it is cloned, never
        fitted in place. Any other setting left at a value other than skorch's
        default raises ``ValueError``.
    n_members : int or None, default=None
        Build a batch of this many networks of the papers' architecture, trained
        as one computation (``StackedBanditMLP``).
    shared_init : bool, default=False
        With ``n_members``: every member starts from the same ``theta_0``.

    Returns
    -------
    net : skorch.NeuralNetRegressor
        Not initialised.

    Examples
    --------
    >>> from skbandit.networks import make_bandit_net
    >>> net = make_bandit_net(4, 3, hidden_layer_sizes=(8,)).initialize()
    >>> type(net.module_).__name__
    'BanditMLP'
    """
    common = dict(
        criterion=LogisticLoss if loss == "logistic" else SquaredLoss,
        criterion__reduction=reduction,
        lr=learning_rate,
        max_epochs=n_steps,
        batch_size=-1 if batch_size is None else batch_size,
        train_split=None,
        device=device,
        verbose=verbose,
    )
    if net is not None:
        _check_custom_net(net)
    if net is not None or module is not None:
        if net is None:
            net = NeuralNetRegressor(module=module, optimizer=torch.optim.SGD)
        net = clone(net).set_params(**common)  # clone copies a module instance
        module = net.module
        if not isinstance(module, torch.nn.Module):
            accepted = inspect.signature(module).parameters
            dims = {"n_features": n_features, "n_actions": n_actions}
            net.set_params(
                **{f"module__{k}": v for k, v in dims.items() if k in accepted}
            )
        return net
    stacked = {}
    if n_members is not None:
        stacked = dict(
            module=StackedBanditMLP,
            module__n_members=n_members,
            module__shared_init=shared_init,
        )
    return NeuralNetRegressor(
        **{"module": BanditMLP, **stacked},
        module__n_features=n_features,
        module__n_actions=n_actions,
        module__hidden_layer_sizes=tuple(hidden_layer_sizes),
        module__init=init,
        module__disjoint=disjoint,
        optimizer=torch.optim.SGD,
        **common,
    )


#: What a custom net's ignored settings are replaced by, for the error message.
_REPLACED_BY = {
    "lr": "the policy's learning_rate",
    "max_epochs": "the policy's n_steps (gradient steps per training)",
    "batch_size": "the policy's batch_size",
    "device": "the policy's device",
    "criterion": "nothing: each policy's class fixes its loss (squared or logistic)",
    "callbacks": "nothing: the policy drives the steps, no callback runs",
    "train_split": "nothing: the policy trains on its whole replay buffer",
    "iterator_train": "nothing: the steps read the replay buffer directly",
    "iterator_valid": "nothing: there is no validation",
    "dataset": "nothing: the steps read the replay buffer directly",
    "warm_start": "the policy's warm_start",
    "compile": "nothing (not supported by the hand-driven steps)",
}


def _check_custom_net(net):
    """Refuse a custom net's settings that the policy's training would ignore."""
    default = type(net)(module=net.module).get_params(deep=False)
    ignored = []
    for key, value in net.get_params(deep=False).items():
        head = key.split("__")[0]
        if head in ("module", "optimizer", "verbose", "predict_nonlinearity"):
            continue  # used (module, optimizer), or harmless for a policy
        if "__" in key:
            ignored.append(key)
        elif key in default and key != "_params_to_validate":
            same = (
                type(value) is type(default[key])
                if key == "train_split"
                else value is default[key] or value == default[key]
            )
            if not same:
                ignored.append(key)
    if ignored:
        lines = "; ".join(
            f"{k} -> {_REPLACED_BY.get(k.split('__')[0], 'nothing')}" for k in ignored
        )
        raise ValueError(
            "A custom net= gives the policy its module and optimizer (with their "
            "module__* and optimizer__* settings) only; these settings of the net "
            f"would be ignored, so set them on the policy or leave them: {lines}."
        )


def initialize_net(net, seed):
    """Initialise ``net`` with torch seeded by ``seed``, leaving the global RNG as is.

    Parameters
    ----------
    net : skorch.NeuralNet
        Unfitted net.
    seed : int
        Seed of the module's initial weights.

    Returns
    -------
    net : skorch.NeuralNet
        The initialised net.

    Examples
    --------
    >>> from skbandit.networks import initialize_net, make_bandit_net
    >>> from skbandit.networks._training import get_flat_parameters
    >>> a = initialize_net(make_bandit_net(4, 2, hidden_layer_sizes=(6,)), seed=0)
    >>> b = initialize_net(make_bandit_net(4, 2, hidden_layer_sizes=(6,)), seed=0)
    >>> bool((get_flat_parameters(a.module_) == get_flat_parameters(b.module_)).all())
    True
    """
    # Built on the CPU, from the CPU generator, whatever torch's default device:
    # skorch then moves the module to the net's device, so that a CUDA net starts
    # from the parameters a CPU net starts from.
    with torch.random.fork_rng(devices=[]), torch.device("cpu"):
        torch.manual_seed(seed)
        net.initialize()
    return net


@torch.no_grad()
def get_flat_parameters(module):
    """All parameters in ``module.parameters()`` order, one detached 1-D tensor.

    Parameters
    ----------
    module : torch.nn.Module
        The network.

    Returns
    -------
    theta : torch.Tensor of shape (p,)
        A copy of the parameters.

    Examples
    --------
    >>> from skbandit.networks import BanditMLP
    >>> from skbandit.networks._training import get_flat_parameters
    >>> tuple(get_flat_parameters(BanditMLP(4, 2, hidden_layer_sizes=(6,))).shape)
    (30,)
    """
    return torch.cat([p.detach().reshape(-1) for p in module.parameters()]).clone()


@torch.no_grad()
def set_flat_parameters(module, theta):
    """Copy a flat vector into the module's parameters, in place.

    Parameters
    ----------
    module : torch.nn.Module
        The network.
    theta : torch.Tensor of shape (p,)
        New values.

    Examples
    --------
    >>> import torch
    >>> from skbandit.networks import BanditMLP
    >>> from skbandit.networks._training import get_flat_parameters, set_flat_parameters
    >>> net = BanditMLP(4, 2, hidden_layer_sizes=(6,))
    >>> set_flat_parameters(net, torch.zeros(30))
    >>> float(get_flat_parameters(net).abs().sum())
    0.0
    """
    offset = 0
    for p in module.parameters():
        p.copy_(theta[offset : offset + p.numel()].view_as(p))
        offset += p.numel()


#: The last ``||theta - theta_0||^2`` per parameter list, with what it was taken at.
_DISTANCES = TensorMemo()
#: Device types whose trainings read their objective as they go (on the host a read
#: costs nothing). Elsewhere the papers' full-batch steps read the objective before
#: and after and ``||theta - theta_0||^2`` back in one copy, after the last step.
HOST_DEVICES = frozenset({"cpu"})


@torch.no_grad()
def _sq_distance(params, theta0):
    """``||theta - theta_0||^2`` over the parameter list.

    A training takes it before its steps and after them (the papers' steps give
    the latter from their own offsets, ``HandGradientSGD.sq_distance``), and the
    next training starts where this one ended: the value after is kept with the
    parameters' and centre's states (:class:`TensorMemo`) and reused while they
    are unchanged (one pass over the ``p`` parameters saved per training).
    """
    kept = _DISTANCES.get(params[0], (*params, *theta0))
    if kept is not None:
        return kept
    return _keep_distance(params, theta0, float(_sq_distance_tensor(params, theta0)))


def _sq_distance_tensor(params, theta0):
    """``||theta - theta_0||^2`` as a 0-d tensor: one fused pass per list (torch's
    multi-tensor kernels), nothing read back."""
    norms = torch._foreach_norm(
        torch._foreach_sub([p.detach() for p in params], theta0)
    )
    return torch.stack(norms).square().sum()


def _keep_distance(params, theta0, value):
    """Keep ``value`` as ``||theta - theta_0||^2`` at the current parameters."""
    return _DISTANCES.put(params[0], (*params, *theta0), value)


#: The losses the hand-written backward pass knows, by the criterion's class.
_LOSSES = {SquaredLoss: "squared", LogisticLoss: "logistic"}


def _hand_gradient_applies(module, optimizer, criterion):
    """Whether the hand-written backward pass computes exactly what autograd would."""
    if type(module) is not BanditMLP or type(criterion) not in _LOSSES:
        return False
    if type(optimizer) is not torch.optim.SGD or len(optimizer.param_groups) != 1:
        return False
    group = optimizer.param_groups[0]
    return not (
        group["momentum"] or group["weight_decay"] or group.get("maximize", False)
    )


def _steps_on_every_row(stepper, packed, n_steps, rows, penalty):
    """Every hand-gradient step on the same packed rows, in one call.

    Returns the objective before the steps (``penalty`` is its penalty term) and the
    data term after them.
    """
    # On the CPU the first step's forward pass gives the starting data term. A
    # device keeps its own (eager-then-graph) sequence and the starting data term
    # as a tensor, read back with the final values in one copy (_read_values).
    if rows.X.device.type in HOST_DEVICES:
        data, end = stepper.steps(*packed, n_steps, data_term=True)
        return data + penalty, end
    start = stepper.objective_data_term(*packed, as_tensor=True)
    if _jstep.uses_j_steps(stepper, rows, None, n_steps):
        _jstep.descend(stepper, rows, n_steps, None)  # one graph replay on CUDA
    else:
        stepper.steps(*packed, n_steps)
    return start, None


def _read_values(stepper, every_row, start, penalty, params, theta0, along=None):
    """The objective before and after a device's steps and ``||theta -
    theta_0||^2``, in one read: ``(start, end, distance)`` as floats, the same as
    reading each (a float32 value is exact in float64). ``along``
    (:class:`~skbandit.networks._deferred.AfterTraining`) adds its checks to the
    read."""
    end = stepper.objective_data_term(*every_row, as_tensor=True)
    distance = _sq_distance_tensor(params, theta0)
    extra = along.tensors() if along is not None else []
    values = torch.stack([start.double(), end.double(), distance.double(), *extra])
    start, end, distance, *checks = values.tolist()  # the training's one read
    if along is not None:
        along.take(checks)
    return start + penalty, end, distance


def _autograd_step(net, packed, theta0, coef):
    """One optimizer step on the packed rows, the penalty's gradient added by hand."""
    module, optimizer = net.module_, net.optimizer_
    optimizer.zero_grad()
    rows, r_p, c_p = packed
    net.criterion_(forward_packed(module, rows), r_p, c_p, n_rows=1.0).backward()
    with torch.no_grad():
        for p, p0 in zip(module.parameters(), theta0, strict=True):
            p.grad.add_(p - p0, alpha=coef)
    optimizer.step()


def proximal_gradient_descent(
    net,
    X,
    actions,
    rewards,
    sample_weight,
    theta0,
    *,
    alpha,
    n_steps,
    batch_size=None,
    rng=None,
    host_actions=None,
    after=None,
    staging=None,
):
    """Run ``n_steps`` (mini-)batch gradient steps of (2.3) on ``net_.module_``.

    The steps use ``net.optimizer_`` (plain SGD) and ``net.criterion_``; the proximal
    penalty's gradient ``c (theta - theta_0)`` is added to the gradients directly.
    With ``batch_size=None`` the rows are packed once (grouped by arm for the
    disjoint encoding) and every step is a full-batch gradient step.

    Parameters
    ----------
    net : skorch.NeuralNet
        Initialised net holding a :class:`BanditMLP`.
    X : torch.Tensor of shape (n, d)
        Context rows of the pulled arms (the raw ``x`` for the disjoint encoding).
    actions : torch.Tensor of shape (n,)
        Pulled arms.
    rewards : torch.Tensor of shape (n,)
        Observed rewards.
    sample_weight : torch.Tensor of shape (n,) or None
        Row weights.
    theta0 : list of torch.Tensor
        Centre of the penalty, one tensor per parameter.
    alpha : float
        Penalty strength lambda; the weight is ``scale^2 alpha``.
    n_steps : int
        Gradient steps.
    batch_size : int or None, default=None
        Rows per step; None for full batch.
    rng : numpy.random.Generator or None, default=None
        Draws the mini-batches.
    host_actions : ndarray of shape (n,) or None, default=None
        ``actions`` in host memory, when the caller has them: the disjoint
        network's packing lays its tiles out from them (no copy back to the host).
    after : AfterTraining or None, default=None
        What the caller runs at the trained parameters: where a device reads the
        training's values in one copy, it runs there, just before, and its checks
        are read in the same copy.
    staging : HostStaging or None, default=None
        The reusable host buffer through which the packing's layout and the
        mini-batches' indices go to the device (one copy each, pinned on CUDA).

    Returns
    -------
    loss : float
        Objective value (data term plus penalty) after the last step.

    Raises
    ------
    NumericalError
        If the objective overflows or rises a thousandfold: the step size is
        unstable. The parameters are left where the steps took them; the
        caller restores them.

    Examples
    --------
    >>> import torch
    >>> from skbandit.networks import initialize_net, make_bandit_net
    >>> from skbandit.networks._training import proximal_gradient_descent
    >>> net = initialize_net(make_bandit_net(4, 2, hidden_layer_sizes=(6,),
    ...                                      disjoint=True, learning_rate=0.1), seed=0)
    >>> theta0 = [p.detach().clone() for p in net.module_.parameters()]
    >>> X = torch.randn(8, 4, generator=torch.Generator().manual_seed(0))
    >>> actions, rewards = torch.arange(8) % 2, torch.ones(8)
    >>> before = proximal_gradient_descent(
    ...     net, X, actions, rewards, None, theta0, alpha=1.0, n_steps=0)
    >>> after = proximal_gradient_descent(
    ...     net, X, actions, rewards, None, theta0, alpha=1.0, n_steps=20)
    >>> after < before
    True
    """
    module, optimizer, criterion = net.module_, net.optimizer_, net.criterion_
    rows = TrainingRows(module, criterion, X, actions, rewards, sample_weight)
    rows.host_actions, rows.staging = host_actions, staging
    rows.set_batch_size(batch_size)
    coef = getattr(module, "scale", 1.0) ** 2 * alpha / (rows.n_eff if rows.mean else 1)
    if _hand_gradient_applies(module, optimizer, criterion):
        lr, loss = optimizer.param_groups[0]["lr"], _LOSSES[type(criterion)]
        rows.stepper = HandGradientSGD(module, theta0, lr, coef, loss=loss)
    start, end, distance = _descend(net, rows, theta0, coef, n_steps, rng, after)
    total = end + coef * distance / 2
    if _diverged(start, total):
        raise NumericalError(
            f"Training the network diverged (objective {start:.3g} -> {total:.3g}): "
            f"{_divergence_hint(rows.mean)}. The policy was left unchanged."
        )
    return total


def _starting_term(stepper, rows, every_row, penalty, deferred):
    """The objective before the steps: a device's data term as a tensor (read
    after the steps, with the end's values), else the objective as a float."""
    if deferred:
        return stepper.objective_data_term(*every_row, as_tensor=True)
    return rows.objective(*every_row) + penalty


def _descend(net, rows, theta0, coef, n_steps, rng, after=None):
    """The steps of :func:`proximal_gradient_descent`: ``(start, end, distance)``,
    the objective before them, the data term after them and ``||theta -
    theta_0||^2`` after them."""
    params, stepper = list(rows.module.parameters()), rows.stepper
    hand, distance = stepper is not None, None
    # A device reads the mini-batch steps' objective before and after them in one
    # copy, as it does the full-batch steps' (on the host a read costs nothing).
    deferred = hand and rows.X.device.type not in HOST_DEVICES
    with torch.no_grad() if hand else contextlib.nullcontext():
        every_row, steps = step_batches(
            rows.batch,
            n_steps,
            rows.n,
            rows.batch_size,
            rng,
            rows.X.device,
            rows.staging,
        )
        start = end = None
        if hand and not rows.full and _jstep.uses_j_steps(stepper, rows, rng, n_steps):
            # every step's batch and layout sent in one copy, the steps run as one
            # function (one graph replay on CUDA)
            every_row = rows.batch(None)
            penalty = coef * _sq_distance(params, theta0) / 2
            start = _starting_term(stepper, rows, every_row, penalty, deferred)
            _jstep.descend(stepper, rows, n_steps, rng)
            steps = ()
        for packed in steps:
            if hand and rows.full:  # every step on the same rows: one call
                penalty = coef * _sq_distance(params, theta0) / 2
                start, end = _steps_on_every_row(
                    stepper, packed, n_steps, rows, penalty
                )
                if isinstance(start, torch.Tensor):  # a device's: one read
                    start, end, distance = _read_values(
                        stepper, every_row, start, penalty, params, theta0, after
                    )
                break
            if start is None:
                # Over every row, as the end is: the thousandfold-rise test read
                # against one mini-batch's objective, which can be ~0 (zero rewards
                # at a network that outputs 0), took 4e-13 -> 1.2 for divergence.
                penalty = coef * _sq_distance(params, theta0) / 2
                every_row = rows.batch(None)
                start = _starting_term(stepper, rows, every_row, penalty, deferred)
            if hand:
                stepper.step(*packed)
            else:
                _autograd_step(net, packed, theta0, coef)
        if isinstance(start, torch.Tensor) and end is None:  # a device's mini-batches
            start, end, distance = _read_values(
                stepper, every_row, start, penalty, params, theta0, after
            )
    # The papers' steps give the final data term from their own buffers; else the
    # end reuses every row as packed for the steps or the start (packing costs as
    # a step).
    if end is None:
        end = rows.objective(*(rows.batch(None) if every_row is None else every_row))
    if distance is None and hand:  # the papers' steps keep it
        distance = stepper.sq_distance
    if distance is None:
        distance = _sq_distance(params, theta0)
    else:
        _keep_distance(params, theta0, distance)
    return start, end, distance
